//! Reading the config file: TOML into dotted keys, each with its line, so that every warning
//! reads `file:line: reason`; and the "did you mean" hint for an unknown key.

/// One value of the file: its dotted key, the value and the line it is on.
#[derive(Debug)]
pub struct Entry {
    /// Dotted key (`display.progress`).
    pub key: String,
    /// The value.
    pub value: toml::Value,
    /// 1-based line of the key (1 when it cannot be found).
    pub line: usize,
}

/// Parses `text`; the entries come in file order. A syntax error is `(line, message)`.
pub fn entries(text: &str) -> Result<Vec<Entry>, (usize, String)> {
    let table: toml::Table = text.parse().map_err(|e: toml::de::Error| {
        let line = e.span().map(|s| line_of(text, s.start)).unwrap_or(1);
        (line, e.message().to_string())
    })?;
    let mut out = Vec::new();
    flatten("", table, &mut out);
    for e in &mut out {
        e.line = key_line(text, &e.key);
    }
    out.sort_by_key(|e| e.line);
    Ok(out)
}

fn flatten(prefix: &str, table: toml::Table, out: &mut Vec<Entry>) {
    for (k, v) in table {
        if prefix.is_empty() && k == MACHINES {
            continue; // [[machines]]: see `machines`.
        }
        let key = super::setting::join(prefix, &k);
        match v {
            toml::Value::Table(inner) => flatten(&key, inner, out),
            value => out.push(Entry {
                key,
                value,
                line: 1,
            }),
        }
    }
}

/// The top-level array of tables that lists machines.
pub const MACHINES: &str = "machines";

/// The `[[machines]]` tables of `text`, each with the line of its header, in file order.
pub fn machines(text: &str) -> Vec<(usize, toml::Value)> {
    let Ok(mut table) = text.parse::<toml::Table>() else {
        return Vec::new(); // The syntax error is reported by `entries`.
    };
    let lines: Vec<usize> = text
        .lines()
        .enumerate()
        .filter(|(_, l)| l.trim().starts_with(&format!("[[{MACHINES}]]")))
        .map(|(i, _)| i + 1)
        .collect();
    match table.remove(MACHINES) {
        Some(toml::Value::Array(items)) => items
            .into_iter()
            .enumerate()
            .map(|(i, v)| (lines.get(i).copied().unwrap_or(1), v))
            .collect(),
        Some(other) => vec![(key_line(text, MACHINES), other)],
        None => Vec::new(),
    }
}

fn line_of(text: &str, offset: usize) -> usize {
    text.as_bytes()[..offset.min(text.len())]
        .iter()
        .filter(|&&b| b == b'\n')
        .count()
        + 1
}

/// The line of `dotted`: `leaf =` under its `[table]` header, or the whole dotted key written
/// out under the header that completes it (`display.progress =` at the top).
fn key_line(text: &str, dotted: &str) -> usize {
    let mut table = String::new();
    for (i, line) in text.lines().enumerate() {
        let t = line.trim();
        if let Some(header) = t.strip_prefix('[') {
            if let Some(end) = header.find(']') {
                table = header[..end].trim().to_string();
                continue;
            }
        }
        let Some(leaf) = dotted
            .strip_prefix(table.as_str())
            .map(|rest| rest.strip_prefix('.').unwrap_or(rest))
            .filter(|_| table.is_empty() || dotted.starts_with(&format!("{table}.")))
        else {
            continue;
        };
        if t.strip_prefix(leaf)
            .is_some_and(|rest| rest.trim_start().starts_with('='))
        {
            return i + 1;
        }
    }
    1
}

/// The closest of `known`, when close enough to be a typo of `key`.
pub fn suggest<'a>(key: &str, known: impl Iterator<Item = &'a str>) -> Option<&'a str> {
    known
        .map(|k| (levenshtein(k, key), k))
        .filter(|(d, k)| *d <= 3.max(k.len() / 4))
        .min()
        .map(|(_, k)| k)
}

fn levenshtein(a: &str, b: &str) -> usize {
    let b: Vec<char> = b.chars().collect();
    let mut prev: Vec<usize> = (0..=b.len()).collect();
    for (i, ca) in a.chars().enumerate() {
        let mut cur = vec![i + 1];
        for (j, cb) in b.iter().enumerate() {
            let cost = usize::from(ca != *cb);
            cur.push((prev[j] + cost).min(prev[j + 1] + 1).min(cur[j] + 1));
        }
        prev = cur;
    }
    prev[b.len()]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keys_are_found_on_their_lines_under_their_tables() {
        let text = "# c\nprogress = 1\n[display]\n  sound = 2\nprogress = 3\n[other]\nx.y = 4\n";
        assert_eq!(key_line(text, "progress"), 2);
        assert_eq!(key_line(text, "display.progress"), 5);
        assert_eq!(key_line(text, "display.sound"), 4);
        assert_eq!(key_line(text, "other.x.y"), 7);
        assert_eq!(key_line(text, "missing"), 1);
        let dotted = "display.progress = false\n";
        assert_eq!(key_line(dotted, "display.progress"), 1);
        assert_eq!(key_line("a = 1\nsound_done = 2\nsound = 3\n", "sound"), 3);
    }

    #[test]
    fn entries_come_in_file_order_and_syntax_errors_have_a_line() {
        let e = entries("z = 1\n[t]\nb = 2\na = 3\n").expect("valid");
        let keys: Vec<(&str, usize)> = e.iter().map(|e| (e.key.as_str(), e.line)).collect();
        assert_eq!(keys, [("z", 1), ("t.b", 3), ("t.a", 4)]);
        assert_eq!(entries("a = 1\nb = = 2\n").expect_err("bad").0, 2);
    }
}
