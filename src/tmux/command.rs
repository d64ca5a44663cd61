//! Building tmux command lines to send on a control connection: quoting arguments so that no
//! pane-supplied text can change what tmux parses, and the formats the inventory asks for.

use std::fmt::Write as _;

/// Field separator in list formats: a character that does not occur in real names.
pub const SEP: char = '\u{241F}';

/// Quotes one argument for tmux's command parser. Safe words go bare (a word that starts with
/// `%` only when it is a pane id: tmux 3.3a rejects a bare `%0:pause` as a syntax error, and
/// `$` starts a variable); anything else is put in
/// single quotes (no expansion happens inside them), or in double quotes with `\`, `"`, `$`
/// escaped when it contains a single quote. Control characters (newline included: it would end
/// the command) are replaced by spaces.
pub fn quote(arg: &str) -> String {
    let clean: String = arg
        .chars()
        .map(|c| if c.is_control() { ' ' } else { c })
        .collect();
    if !clean.is_empty()
        && clean
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b"%@$:._-/=,".contains(&b))
        && !clean.starts_with('$')
        && clean
            .strip_prefix('%')
            .is_none_or(|id| !id.is_empty() && id.bytes().all(|b| b.is_ascii_digit()))
    {
        return clean;
    }
    if !clean.contains('\'') {
        return format!("'{clean}'");
    }
    let mut out = String::with_capacity(clean.len() + 2);
    out.push('"');
    for c in clean.chars() {
        if matches!(c, '\\' | '"' | '$') {
            out.push('\\');
        }
        out.push(c);
    }
    out.push('"');
    out
}

/// Joins a command and its arguments into one line (no newline), quoting each argument.
pub fn line(argv: &[&str]) -> String {
    let mut out = String::new();
    for (i, a) in argv.iter().enumerate() {
        if i > 0 {
            out.push(' ');
        }
        if i == 0 {
            out.push_str(a);
        } else {
            let _ = write!(out, "{}", quote(a));
        }
    }
    out
}

/// A `-F` format joining the given `#{...}` variables with [`SEP`].
pub fn format_of(fields: &[&str]) -> String {
    let sep = SEP.to_string();
    fields
        .iter()
        .map(|f| format!("#{{{f}}}"))
        .collect::<Vec<_>>()
        .join(&sep)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn quoting_keeps_hostile_text_inert() {
        assert_eq!(quote("%3"), "%3");
        assert_eq!(quote("a b"), "'a b'");
        assert_eq!(quote("#{pane_id}"), "'#{pane_id}'");
        assert_eq!(quote("it's $HOME \\"), "\"it's \\$HOME \\\\\"");
        assert_eq!(quote("x\ny; kill-server"), "'x y; kill-server'");
        assert_eq!(quote(""), "''");
        assert_eq!(quote("$1"), "'$1'");
        assert_eq!(quote("%3:pause"), "'%3:pause'");
        assert_eq!(quote("%if"), "'%if'");
        assert_eq!(quote("a:%3"), "a:%3");
        assert_eq!(
            line(&["capture-pane", "-p", "-t", "%1"]),
            "capture-pane -p -t %1"
        );
    }
}
