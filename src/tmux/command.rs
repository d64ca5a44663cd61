//! Building tmux command lines to send on a control connection: quoting arguments so that no
//! pane-supplied text can change what tmux parses, and the formats the inventory asks for.

use std::fmt::Write as _;

/// Field separator in list formats: a character that does not occur in real names.
pub const SEP: char = '\u{241F}';

/// Quotes one argument for tmux's command parser (3.3a `cmd-parse.y`) so that it reaches the
/// command as given. Outside quotes tmux expands `$VAR` anywhere and `~` at a word start, ends a
/// word at a space, `;` or `}`, starts a comment at `#`, a block at `{` and a condition at a
/// `%` word that is not all digits; inside double quotes it still expands `\`, `$` and a
/// leading `~`; inside single quotes nothing.
///
/// So: a word made only of letters, digits and `%@:._-/=,` goes bare (one that starts with `%`
/// only when it is a pane id: tmux 3.3a rejects a bare `%0:pause` as a syntax error); anything
/// else is put in single quotes, or, when it contains a single quote, in double quotes with
/// `\`, `"`, `$` and `~` escaped. Control characters (newline included: it would end the
/// command) are replaced by spaces.
pub fn quote(arg: &str) -> String {
    let clean: String = arg
        .chars()
        .map(|c| if c.is_control() { ' ' } else { c })
        .collect();
    if !clean.is_empty()
        && clean
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b"%@:._-/=,".contains(&b))
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
        if matches!(c, '\\' | '"' | '$' | '~') {
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

    /// Regression: `$` was a bare-word character (only a leading one was quoted), so `a$b` went
    /// out bare and tmux replaced `$b` with the (empty) variable: it read `a`.
    #[test]
    fn a_dollar_anywhere_is_quoted() {
        assert_eq!(quote("a$b"), "'a$b'");
        assert_eq!(quote("x$"), "'x$'");
        assert_eq!(quote("$2:@3"), "'$2:@3'");
    }

    /// Regression: tmux expands `~` at the start of a word inside double quotes too, so
    /// `~/x'` (double-quoted for its `'`) came back as `$HOME/x'`.
    #[test]
    fn a_tilde_is_escaped_inside_double_quotes() {
        assert_eq!(quote("~/x'"), "\"\\~/x'\"");
        assert_eq!(quote("~"), "'~'");
        assert_eq!(quote("a~b"), "'a~b'");
    }

    /// tmux's parser (3.3a `cmd-parse.y`): `#` starts a comment and `{` a block at a word start,
    /// `;` and `}` end a bare word. None of them may go out bare.
    #[test]
    fn comment_block_and_separator_characters_are_quoted() {
        for (raw, quoted) in [
            ("#x", "'#x'"),
            ("a#b", "'a#b'"),
            ("{x", "'{x'"),
            ("x}", "'x}'"),
            ("}", "'}'"),
            (";", "';'"),
            ("a;b", "'a;b'"),
            ("a\\;", "'a\\;'"),
            ("#'{;}", "\"#'{;}\""),
        ] {
            assert_eq!(quote(raw), quoted, "{raw}");
        }
    }
}
