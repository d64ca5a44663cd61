//! Pure status-line rendering: the ready-to-print `@thinkterm_icon` of a window and the
//! `@thinkterm_summary` of a session, with tmux `#[…]` styles, so the status line reads them with
//! `#{@thinkterm_icon}` and no shell runs per redraw.

use crate::state::WindowMark;

/// Glyphs and styles; every field is a tmux format fragment.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct IconStyle {
    /// Spinner frames while running (empty: a static `~`).
    pub spinner: Vec<String>,
    /// Style before a spinner frame.
    pub running_style: String,
    /// The attention (waiting) glyph with its style.
    pub attention: String,
    /// The error glyph with its style.
    pub error: String,
    /// The done (unseen result) glyph with its style.
    pub done: String,
    /// Appended after a styled glyph to go back to the status line's own style.
    pub reset: String,
}

impl Default for IconStyle {
    fn default() -> Self {
        IconStyle {
            spinner: ["⠋", "⠙", "⠹", "⠸", "⠼", "⠴", "⠦", "⠧", "⠇", "⠏"]
                .map(String::from)
                .to_vec(),
            running_style: "#[fg=colour39]".into(),
            attention: "#[fg=colour214]●".into(),
            error: "#[fg=colour196]✗".into(),
            done: "#[fg=colour34]●".into(),
            reset: "#[default]".into(),
        }
    }
}

/// The `@thinkterm_icon` value for `mark` at spinner frame `frame` (empty for idle).
pub fn window_icon(mark: WindowMark, frame: usize, style: &IconStyle) -> String {
    let glyph = match mark {
        WindowMark::Idle => return String::new(),
        WindowMark::Running => {
            let f = match style.spinner.len() {
                0 => "~",
                n => style.spinner[frame % n].as_str(),
            };
            format!("{}{f}", style.running_style)
        }
        WindowMark::Attention => style.attention.clone(),
        WindowMark::Error => style.error.clone(),
        WindowMark::Done => style.done.clone(),
    };
    glyph + &style.reset
}

/// The `@thinkterm_summary` of a session: counts of its windows' marks, most urgent first,
/// zero counts left out, plain text: `N✗` error, `N!` attention, `N~` running, `N✓` done
/// (e.g. `2! 1~ 3✓`); empty when every window is idle.
pub fn summary(marks: impl IntoIterator<Item = WindowMark>) -> String {
    let mut n = [0usize; 4];
    for m in marks {
        match m {
            WindowMark::Error => n[0] += 1,
            WindowMark::Attention => n[1] += 1,
            WindowMark::Running => n[2] += 1,
            WindowMark::Done => n[3] += 1,
            WindowMark::Idle => {}
        }
    }
    let parts = n.iter().zip(["✗", "!", "~", "✓"]).filter(|(c, _)| **c > 0);
    parts
        .map(|(c, g)| format!("{c}{g}"))
        .collect::<Vec<_>>()
        .join(" ")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn icons_per_mark() {
        let s = IconStyle::default();
        assert_eq!(window_icon(WindowMark::Idle, 0, &s), "");
        assert_eq!(
            window_icon(WindowMark::Running, 11, &s),
            "#[fg=colour39]⠙#[default]"
        );
        assert_eq!(
            window_icon(WindowMark::Attention, 0, &s),
            "#[fg=colour214]●#[default]"
        );
        assert_eq!(
            window_icon(WindowMark::Error, 0, &s),
            "#[fg=colour196]✗#[default]"
        );
        assert_eq!(
            window_icon(WindowMark::Done, 0, &s),
            "#[fg=colour34]●#[default]"
        );
    }

    #[test]
    fn summary_and_animation() {
        use WindowMark::*;
        assert_eq!(
            summary([Attention, Done, Running, Attention, Idle, Done, Done]),
            "2! 1~ 3✓"
        );
        assert_eq!(summary([Idle]), "");
    }
}
