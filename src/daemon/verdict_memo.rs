//! The last verdict of a pane's screen rules, kept with what it was made from, so that a look
//! at a screen that did not change is not classified again.
//!
//! A verdict is a pure function of the catalog, the agent, the screen text, the title the
//! program sent and its last progress report (`rules::eval::classify`). About half of the
//! looks at a busy server's agent panes find the text they found last time: a redraw that
//! only moved the cursor, a spinner frame of a title, a status report, Gemini CLI's repaint of
//! the same screen (measured on the load benchmark's scale run: 47 % of 9 500 looks in a
//! minute; 35 % at its 50-pane load). The memo holds the inputs but the screen, which the
//! pane keeps itself: the pane forgets the memo whenever its screen text changes
//! ([`VerdictMemo::forget`]).

use crate::osc::progress::Progress;
use crate::rules::eval::RuleMemo;
use crate::rules::{Catalog, Snapshot, Verdict};

/// One pane's last verdict and its inputs (the screen aside).
#[derive(Debug, Default)]
pub struct VerdictMemo {
    kept: Option<Kept>,
    /// What each rule found on its region last time, and the catalog generation and agent it
    /// belongs to: a screen that changed is classified again, but only the rules whose region
    /// changed are matched again.
    rules: RuleMemo,
    rules_for: Option<(u64, String)>,
    /// Classifications run, and verdicts taken from the memo instead (for `explain`).
    runs: u64,
    reused: u64,
}

#[derive(Debug)]
struct Kept {
    generation: u64,
    agent: String,
    title: Option<String>,
    progress: Option<Progress>,
    verdict: Option<Verdict>,
}

impl VerdictMemo {
    /// The screen text changed: what is kept no longer holds.
    pub fn forget(&mut self) {
        self.kept = None;
    }

    /// The verdict of `catalog`'s rules for `agent` on `snap`: the kept one when `snap`'s
    /// title and progress, the agent and the catalog are those it was made from (the screen
    /// is, unless [`Self::forget`] was called since), else a new one, kept. The flag says
    /// whether it was kept.
    pub fn verdict(
        &mut self,
        catalog: &Catalog,
        agent: &str,
        snap: &Snapshot<'_>,
    ) -> (Option<Verdict>, bool) {
        let generation = catalog.generation();
        if let Some(k) = self.kept.as_ref().filter(|k| {
            k.generation == generation
                && k.agent == agent
                && k.title.as_deref() == snap.osc_title
                && k.progress == snap.osc_progress
        }) {
            self.reused += 1;
            return (k.verdict.clone(), true);
        }
        self.runs += 1;
        if self
            .rules_for
            .as_ref()
            .is_none_or(|(g, a)| *g != generation || a != agent)
        {
            self.rules.clear();
            self.rules_for = Some((generation, agent.to_string()));
        }
        let verdict = catalog.classify_with(agent, snap, &mut self.rules);
        self.kept = Some(Kept {
            generation,
            agent: agent.to_string(),
            title: snap.osc_title.map(str::to_string),
            progress: snap.osc_progress,
            verdict: verdict.clone(),
        });
        (verdict, false)
    }

    /// Classifications run and verdicts reused, and rules answered from the rule memo, for
    /// `explain`.
    pub fn explain(&self) -> serde_json::Value {
        serde_json::json!({
            "run": self.runs,
            "reused": self.reused,
            "rules_reused": self.rules.reused(),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::rules::RuleState;

    const WORKING: &str = "\n✻ Working… (3s · esc to interrupt)\n\n────────────────\n> \n────────────────\n  ? for shortcuts\n";

    fn snap<'a>(screen: &'a str, title: Option<&'a str>) -> Snapshot<'a> {
        Snapshot {
            screen,
            osc_title: title,
            osc_progress: None,
        }
    }

    /// The same inputs reuse the verdict; a new title, a forgotten screen, another agent or a
    /// reloaded catalog classify again, and each new verdict is the catalog's own.
    #[test]
    fn a_verdict_is_reused_only_for_the_inputs_it_was_made_from() {
        let catalog = Catalog::bundled();
        let mut memo = VerdictMemo::default();
        let direct = |s: &Snapshot<'_>, agent: &str| catalog.classify(agent, s);

        let s = snap(WORKING, Some("✳ Claude Code"));
        let (v, kept) = memo.verdict(&catalog, "claude", &s);
        assert!(!kept);
        assert_eq!(v, direct(&s, "claude"));
        assert_eq!(v.as_ref().map(|v| v.state), Some(RuleState::Working));

        let (again, kept) = memo.verdict(&catalog, "claude", &s);
        assert!(kept, "same inputs: reused");
        assert_eq!(again, v);

        // A title change is an input: classified again.
        let t = snap(WORKING, Some("✳ other"));
        let (_, kept) = memo.verdict(&catalog, "claude", &t);
        assert!(!kept, "a new title is classified");

        // The screen changed (the pane says so): classified again, and the new verdict is
        // the rules' for the new screen, not the kept one.
        memo.forget();
        let idle = snap(
            "\n\n────────────────\n> \n────────────────\n  ? for shortcuts\n",
            None,
        );
        let (v, kept) = memo.verdict(&catalog, "claude", &idle);
        assert!(!kept);
        assert_eq!(v, direct(&idle, "claude"));
        assert_ne!(v.as_ref().map(|v| v.state), Some(RuleState::Working));

        // Another agent on the same screen.
        let (_, kept) = memo.verdict(&catalog, "codex", &idle);
        assert!(!kept, "another agent is classified");

        // A catalog of other manifests (a reload), even a copy of the same files, is another
        // generation; a clone is the same one.
        let reloaded = Catalog::bundled();
        assert_ne!(reloaded.generation(), catalog.generation());
        let (_, kept) = memo.verdict(&reloaded, "codex", &idle);
        assert!(!kept, "a reloaded catalog classifies again");
        let clone = reloaded.clone();
        let (_, kept) = memo.verdict(&clone, "codex", &idle);
        assert!(kept, "a clone classifies alike");

        // Rules answered from the rule memo: 4 when only the title changed (the bottom line,
        // the whole screen, the footer and the status above the box, which decides), 2 on the
        // idle screen (its bottom line and footer are the working screen's); none for the
        // other agent or the reloaded catalog, whose memo starts empty.
        assert_eq!(
            memo.explain(),
            serde_json::json!({"run": 5, "reused": 2, "rules_reused": 6})
        );
    }
}
