//! The manifests compiled into the binary (`rules/*.toml`).

/// File name and text of each bundled manifest, in catalog order.
pub(crate) const FILES: &[(&str, &str)] = &[
    ("claude.toml", include_str!("../../rules/claude.toml")),
    ("codex.toml", include_str!("../../rules/codex.toml")),
    ("copilot.toml", include_str!("../../rules/copilot.toml")),
    ("cursor.toml", include_str!("../../rules/cursor.toml")),
    ("pi.toml", include_str!("../../rules/pi.toml")),
    ("opencode.toml", include_str!("../../rules/opencode.toml")),
    ("kimi.toml", include_str!("../../rules/kimi.toml")),
    ("gemini.toml", include_str!("../../rules/gemini.toml")),
    ("soul.toml", include_str!("../../rules/soul.toml")),
    ("omp.toml", include_str!("../../rules/omp.toml")),
];
