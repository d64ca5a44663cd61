//! The config loader's tests: file, environment, ranges, warnings.

use super::*;

fn load_text(text: &str, env: &[(&str, &str)]) -> Loaded {
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().join("config.toml");
    std::fs::write(&path, text).expect("write");
    let env: Vec<(String, String)> = env
        .iter()
        .map(|(a, b)| (a.to_string(), b.to_string()))
        .collect();
    load_with(path, &env)
}

#[test]
fn unknown_keys_warn_with_line_and_suggestion_and_the_rest_applies() {
    let l = load_text("sound = false\nsystem_notificatons = false\n[display]\nprogres = false\nsubtasks = false\n", &[]);
    assert!(!l.config.sound);
    assert!(l.config.system_notifications, "misspelt key must not apply");
    assert!(!l.config.display.subtasks);
    assert_eq!(l.warnings.len(), 2, "{:?}", l.warnings);
    assert!(
        l.warnings[0].ends_with(
            ":2: unknown key \"system_notificatons\" (did you mean \"system_notifications\"?)"
        ),
        "{}",
        l.warnings[0]
    );
    assert!(
        l.warnings[1]
            .contains(":4: unknown key \"display.progres\" (did you mean \"display.progress\"?)"),
        "{}",
        l.warnings[1]
    );
    assert!(matches!(l.sources.get("sound"), Some(Source::File(at)) if at.ends_with(":1")));
}

#[test]
fn bad_values_and_bad_syntax_warn_and_keep_defaults() {
    let l = load_text("sound = \"loud\"\nspinner = false\n", &[]);
    assert!(l.config.sound);
    assert!(!l.config.spinner);
    assert!(
        l.warnings[0].contains(":1: sound: expected true or false"),
        "{:?}",
        l.warnings
    );
    let l = load_text("sound = = false\n", &[]);
    assert_eq!(l.config, Config::default());
    assert!(l.warnings[0].contains(":1:"), "{:?}", l.warnings);
}

#[test]
fn environment_overrides_file_and_disable_sound_stops_both() {
    let l = load_text(
        "sound = true\n",
        &[("THINKTERM_SOUND", "0"), ("THINKTERM_DISABLE_SOUND", "")],
    );
    assert!(!l.config.sound);
    assert_eq!(
        l.sources.get("sound"),
        Some(&Source::Env("THINKTERM_SOUND".into()))
    );
    assert!(!l.sound_enabled() && !l.notifications_enabled());
    let d = l.describe();
    assert!(
        d.contains("sound = false  # environment THINKTERM_SOUND"),
        "{d}"
    );
    assert!(d.contains("spinner = true  # default"), "{d}");
}

/// Regression: `0` and `1` in the environment were read only as booleans, so a numeric key
/// set to 0 from the environment (`THINKTERM_FLOOD_PAUSE_KIB_S=0`, documented as turning
/// flood control off) was rejected and kept its default.
#[test]
fn zero_and_one_from_the_environment_set_numbers_too() {
    let l = load_text(
        "",
        &[
            ("THINKTERM_FLOOD_PAUSE_KIB_S", "0"),
            ("THINKTERM_READ_BATCH_MS", "0"),
            ("THINKTERM_CAPTURE_DELAY_MS", "1"),
            ("THINKTERM_SPINNER", "0"),
        ],
    );
    assert!(l.warnings.is_empty(), "{:?}", l.warnings);
    assert_eq!(l.config.flood_pause_kib_s, 0);
    assert_eq!(l.config.read_batch_ms, 0);
    assert_eq!(l.config.capture_delay_ms, 1);
    assert!(!l.config.spinner);
}

#[test]
fn every_number_has_a_range_that_holds_its_default() {
    let json = serde_json::to_value(Config::default()).expect("serialises");
    let mut numbers = 0;
    for key in keys() {
        let mut v = &json;
        for part in key.name.split('.') {
            v = &v[part];
        }
        if let Some(n) = v.as_u64() {
            numbers += 1;
            let range = key
                .range
                .unwrap_or_else(|| panic!("{} is a number without a range", key.name));
            assert!(
                range.contains(&n),
                "{}: default {n} not in {range:?}",
                key.name
            );
        }
    }
    assert_eq!(numbers, 9);
}

#[test]
fn out_of_range_numbers_warn_keep_the_previous_value_and_the_rest_applies() {
    let l = load_text(
        "spinner_interval_ms = 10\ncapture_delay_ms = 2001\nprobe_interval_s = 0\n\
         read_batch_ms = 500\ncapture_interval_ms = -3\nsound = false\nprobe_interval_s_x = 1\n",
        &[],
    );
    let d = Config::default();
    assert_eq!(l.config.spinner_interval_ms, d.spinner_interval_ms);
    assert_eq!(l.config.capture_delay_ms, d.capture_delay_ms);
    assert_eq!(l.config.probe_interval_s, d.probe_interval_s);
    assert_eq!(l.config.read_batch_ms, d.read_batch_ms);
    assert_eq!(l.config.capture_interval_ms, d.capture_interval_ms);
    assert!(!l.config.sound, "the rest of the file still applies");
    let tails: Vec<&str> = l
        .warnings
        .iter()
        .map(|w| &w[l.path.display().to_string().len()..])
        .collect();
    assert_eq!(
        tails[..5],
        [
            ":1: spinner_interval_ms = 10 is out of range (50..=5000)",
            ":2: capture_delay_ms = 2001 is out of range (0..=2000)",
            ":3: probe_interval_s = 0 is out of range (1..=3600)",
            ":4: read_batch_ms = 500 is out of range (0..=200)",
            ":5: capture_interval_ms = -3 is out of range (20..=5000)",
        ]
    );
    assert!(tails[5].starts_with(":7: unknown key"), "{tails:?}");
    assert!(!l.sources.contains_key("spinner_interval_ms"));
    // The edges themselves are accepted.
    let l = load_text("spinner_interval_ms = 50\nprobe_interval_s = 3600\n", &[]);
    assert!(l.warnings.is_empty(), "{:?}", l.warnings);
    assert_eq!(
        (l.config.spinner_interval_ms, l.config.probe_interval_s),
        (50, 3600)
    );
}

#[test]
fn the_environment_gets_the_same_range_checks_over_the_file() {
    let l = load_text(
        "read_batch_ms = 50\n",
        &[
            ("THINKTERM_READ_BATCH_MS", "201"),
            ("THINKTERM_SPINNER_INTERVAL_MS", "49"),
            ("THINKTERM_PROBE_INTERVAL_S", "many"),
            ("THINKTERM_CAPTURE_DELAY_MS", " 7 "),
        ],
    );
    assert_eq!(l.config.read_batch_ms, 50, "the file's value stays");
    assert_eq!(l.config.spinner_interval_ms, 500);
    assert_eq!(l.config.probe_interval_s, 10);
    assert_eq!(l.config.capture_delay_ms, 7);
    assert_eq!(
        l.warnings,
        [
            "THINKTERM_SPINNER_INTERVAL_MS: spinner_interval_ms = 49 is out of range (50..=5000)",
            "THINKTERM_PROBE_INTERVAL_S: probe_interval_s: expected a whole number, found \"many\"",
            "THINKTERM_READ_BATCH_MS: read_batch_ms = 201 is out of range (0..=200)",
        ]
    );
    assert!(matches!(
        l.sources.get("read_batch_ms"),
        Some(Source::File(_))
    ));
}

/// Regression: `flood_pause_kib_s` took any integer, and the daemon's
/// `flood_pause_kib_s * 1024` overflowed (a panic in a debug build) for values above
/// `u64::MAX / 1024`, such as TOML's largest integer.
#[test]
fn no_accepted_flood_limit_overflows_in_bytes() {
    let huge = i64::MAX.to_string();
    let l = load_text(&format!("flood_pause_kib_s = {huge}\n"), &[]);
    assert_eq!(l.config.flood_pause_kib_s, 256);
    assert!(
        l.warnings[0].ends_with(&format!(
            ":1: flood_pause_kib_s = {huge} is out of range (0..=1048576)"
        )),
        "{:?}",
        l.warnings
    );
    let l = load_text(
        "",
        &[("THINKTERM_FLOOD_PAUSE_KIB_S", "18446744073709551615")],
    );
    assert_eq!(l.config.flood_pause_kib_s, 256);
    assert_eq!(l.warnings.len(), 1, "{:?}", l.warnings);
    let l = load_text(
        &format!("flood_pause_kib_s = {MAX_FLOOD_PAUSE_KIB_S}\n"),
        &[],
    );
    assert!(l.warnings.is_empty(), "{:?}", l.warnings);
    assert!(l.config.flood_pause_kib_s.checked_mul(1024).is_some());
}

#[test]
fn keys_and_setter_come_from_one_list() {
    let names: Vec<String> = keys().into_iter().map(|k| k.name).collect();
    assert_eq!(names.len(), 28);
    assert!(names.contains(&"display.waiting_reason".to_string()));
    let mut c = Config::default();
    for name in &names {
        // Every listed key has a setter: a wrong type is a type error, never "unknown key".
        let e = c.set(name, Input::Toml(&toml::Value::Array(Vec::new())));
        assert!(matches!(e, Err(SetError::Invalid(_))), "{name}: {e:?}");
    }
    assert_eq!(
        c.set("display", Input::Env("1")),
        Err(SetError::Unknown),
        "a table is not a value"
    );
    assert_eq!(c.set("sound.x", Input::Env("1")), Err(SetError::Unknown));
    assert_eq!(c, Config::default(), "nothing applied");
}

#[test]
fn tables_strings_and_files_set_from_file_and_environment() {
    let l = load_text(
        "log = \"debug\"\nsound_done = \"/a.wav\"\n[display]\nprogress = false\n",
        &[
            ("THINKTERM_DISPLAY_SUBTASKS", "off"),
            ("THINKTERM_SOUND_WAITING", "/b.wav"),
        ],
    );
    assert!(l.warnings.is_empty(), "{:?}", l.warnings);
    assert_eq!(l.config.log, "debug");
    assert_eq!(l.config.sound_done, Some(PathBuf::from("/a.wav")));
    assert_eq!(l.config.sound_waiting, Some(PathBuf::from("/b.wav")));
    assert!(!l.config.display.progress && !l.config.display.subtasks);
    assert!(l.config.display.description);
    assert!(
        matches!(l.sources.get("display.progress"), Some(Source::File(at)) if at.ends_with(":4"))
    );
    let d = l.describe();
    assert!(
        d.contains("display.subtasks = false  # environment THINKTERM_DISPLAY_SUBTASKS"),
        "{d}"
    );
    assert!(
        d.contains("sound_waiting = \"/b.wav\"  # environment"),
        "{d}"
    );
    // An empty file name means the bundled chime.
    let l = load_text("sound_done = \"\"\n", &[]);
    assert_eq!(l.config.sound_done, None);
}

#[test]
fn the_disable_sound_rule_reads_presence_not_value() {
    let l = load_text("", &[(DISABLE_SOUND_ENV, "0")]);
    assert!(l.sound_disabled_by_env);
    assert!(!l.sound_enabled() && !l.notifications_enabled());
    assert!(l.describe().contains("# THINKTERM_DISABLE_SOUND is set"));
    let l = load_text("", &[]);
    assert!(l.sound_enabled() && l.notifications_enabled());
}

/// The README's table of ranges is written from the key list; this keeps the two equal.
#[test]
fn the_readme_lists_every_range_as_declared() {
    let readme = include_str!("../../README.md");
    let json = serde_json::to_value(Config::default()).expect("serialises");
    for key in keys() {
        let Some(range) = key.range else { continue };
        let row = format!(
            "| `{}` | {} | {}..={}",
            key.name,
            json[&key.name],
            range.start(),
            range.end()
        );
        assert!(readme.contains(&row), "README.md lacks {row:?}");
    }
}
