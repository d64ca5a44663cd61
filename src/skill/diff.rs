//! A line diff for `skill setup --dry-run`: the lines a change removes (`-`) and adds (`+`),
//! with one line of context around each run of changes. Longest common subsequence over lines:
//! settings files are small.

/// The diff of `before` and `after` as indented lines (`indent` before each).
pub fn render(before: &str, after: &str, indent: &str) -> String {
    let a: Vec<&str> = before.lines().collect();
    let b: Vec<&str> = after.lines().collect();
    let ops = script(&a, &b);
    let mut out = String::new();
    let mut last_shown: Option<usize> = None;
    for (i, op) in ops.iter().enumerate() {
        let near_change = |j: usize| ops.get(j).is_some_and(|o| !matches!(o, Op::Same(_)));
        let show = match op {
            Op::Same(_) => i > 0 && near_change(i - 1) || near_change(i + 1),
            _ => true,
        };
        if !show {
            continue;
        }
        if last_shown.is_some_and(|l| l + 1 < i) || (last_shown.is_none() && i > 0) {
            out.push_str(&format!("{indent}  …\n"));
        }
        last_shown = Some(i);
        let (sign, line) = match op {
            Op::Same(l) => (' ', l),
            Op::Del(l) => ('-', l),
            Op::Add(l) => ('+', l),
        };
        out.push_str(&format!("{indent}{sign} {line}\n"));
    }
    if last_shown.is_some_and(|l| l + 1 < ops.len()) {
        out.push_str(&format!("{indent}  …\n"));
    }
    out
}

enum Op<'a> {
    Same(&'a str),
    Del(&'a str),
    Add(&'a str),
}

fn script<'a>(a: &[&'a str], b: &[&'a str]) -> Vec<Op<'a>> {
    // lcs[i][j]: length of the longest common subsequence of a[i..] and b[j..].
    let mut lcs = vec![vec![0u32; b.len() + 1]; a.len() + 1];
    for i in (0..a.len()).rev() {
        for j in (0..b.len()).rev() {
            lcs[i][j] = if a[i] == b[j] {
                lcs[i + 1][j + 1] + 1
            } else {
                lcs[i + 1][j].max(lcs[i][j + 1])
            };
        }
    }
    let (mut i, mut j) = (0, 0);
    let mut out = Vec::new();
    while i < a.len() || j < b.len() {
        if i < a.len() && j < b.len() && a[i] == b[j] {
            out.push(Op::Same(a[i]));
            i += 1;
            j += 1;
        } else if i < a.len() && (j == b.len() || lcs[i + 1][j] >= lcs[i][j + 1]) {
            out.push(Op::Del(a[i]));
            i += 1;
        } else {
            out.push(Op::Add(b[j]));
            j += 1;
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::render;

    #[test]
    fn changed_lines_with_one_line_of_context() {
        let before = "a\nb\nc\nd\ne\nf\n";
        let after = "a\nb\nc\nX\ne\nf\ng\n";
        assert_eq!(
            render(before, after, ""),
            "  …\n  c\n- d\n+ X\n  e\n  f\n+ g\n"
        );
    }

    #[test]
    fn a_new_file_is_all_additions() {
        assert_eq!(render("", "x\ny\n", "  "), "  + x\n  + y\n");
    }
}
