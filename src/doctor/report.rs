//! The doctor's report: one [`Check`] per thing a first run depends on, each with its status,
//! what was found, and how to fix a miss; printed for people or as JSON.

use serde::Serialize;

/// How a check came out.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Status {
    /// Works.
    Ok,
    /// Something to know (nothing configured, not applicable).
    Info,
    /// Works, with a limit worth fixing.
    Warn,
    /// Broken: the exit code is 1.
    Fail,
}

impl Status {
    fn mark(self) -> &'static str {
        match self {
            Status::Ok => "ok  ",
            Status::Info => "--  ",
            Status::Warn => "warn",
            Status::Fail => "FAIL",
        }
    }
}

/// One check.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct Check {
    /// Stable id (`focus_events`).
    pub id: &'static str,
    /// What is checked (`focus-events`).
    pub title: &'static str,
    /// How it came out.
    pub status: Status,
    /// What was found, one line.
    pub summary: String,
    /// More lines (a rejected file's reasons, the capabilities).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub detail: Vec<String>,
    /// How to fix it (for `warn` and `fail`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub fix: Option<String>,
}

impl Check {
    /// A check with no detail and no fix.
    pub fn new(id: &'static str, title: &'static str, status: Status, summary: String) -> Check {
        Check {
            id,
            title,
            status,
            summary,
            detail: Vec::new(),
            fix: None,
        }
    }

    /// With a fix.
    pub fn fix(mut self, fix: impl Into<String>) -> Check {
        self.fix = Some(fix.into());
        self
    }

    /// With detail lines.
    pub fn detail(mut self, lines: impl IntoIterator<Item = String>) -> Check {
        self.detail.extend(lines);
        self
    }
}

/// Every check, in order.
#[derive(Clone, Debug, Default, Serialize)]
pub struct Report {
    /// The tmux server checked.
    pub server: String,
    /// The checks.
    pub checks: Vec<Check>,
}

impl Report {
    /// The worst status.
    pub fn worst(&self) -> Status {
        self.checks
            .iter()
            .map(|c| c.status)
            .max()
            .unwrap_or(Status::Ok)
    }

    /// The exit code: 1 when a check failed.
    pub fn exit_code(&self) -> i32 {
        i32::from(self.worst() == Status::Fail)
    }

    /// The check with this id.
    pub fn get(&self, id: &str) -> Option<&Check> {
        self.checks.iter().find(|c| c.id == id)
    }

    /// `{ "ok": bool, "server": …, "checks": [...] }`.
    pub fn to_json(&self) -> serde_json::Value {
        serde_json::json!({
            "ok": self.worst() != Status::Fail,
            "server": self.server,
            "checks": self.checks,
        })
    }

    /// The report for people: one line per check, detail and fix indented under it, and a last
    /// line that says whether everything is good.
    pub fn render(&self) -> String {
        let mut out = format!("thinkterm-sidecar doctor: tmux server at {}\n", self.server);
        for c in &self.checks {
            out.push_str(&format!(
                "{} {:<22} {}\n",
                c.status.mark(),
                c.title,
                c.summary
            ));
            for d in &c.detail {
                out.push_str(&format!("       {d}\n"));
            }
            if let Some(f) = &c.fix {
                out.push_str(&format!("       fix: {f}\n"));
            }
        }
        let count = |s| self.checks.iter().filter(|c| c.status == s).count();
        out.push_str(&match (count(Status::Fail), count(Status::Warn)) {
            (0, 0) => "All good.\n".to_string(),
            (0, w) => format!("All good, {w} warning(s).\n"),
            (f, w) => format!("{f} problem(s), {w} warning(s): see the fix lines above.\n"),
        });
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_worst_check_decides_the_exit_code_and_the_last_line() {
        let mut r = Report {
            server: "/tmp/tmux-0/default".into(),
            checks: vec![Check::new("a", "a", Status::Ok, "fine".into())],
        };
        assert_eq!(r.exit_code(), 0);
        assert!(r.render().ends_with("All good.\n"));
        r.checks
            .push(Check::new("b", "b", Status::Warn, "hm".into()).fix("do x"));
        assert_eq!(r.exit_code(), 0);
        assert!(r.render().contains("       fix: do x\n"));
        r.checks.push(
            Check::new("c", "c", Status::Fail, "broken".into())
                .detail(["why".to_string()])
                .fix("do y"),
        );
        assert_eq!(r.exit_code(), 1);
        let text = r.render();
        assert!(text.contains("FAIL c"), "{text}");
        assert!(text.ends_with("1 problem(s), 1 warning(s): see the fix lines above.\n"));
        let json = r.to_json();
        assert_eq!(json["ok"], false);
        assert_eq!(json["checks"][2]["status"], "fail");
        assert_eq!(json["checks"][2]["fix"], "do y");
        assert!(json["checks"][0].get("fix").is_none());
    }
}
