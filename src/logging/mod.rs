//! Where the sidecar's log goes, and at what level (`THINKTERM_LOG`, else the config's `log`
//! for the daemon, `warn` for the other commands; any tracing filter: `debug`,
//! `thinkterm_sidecar::daemon=trace`).
//!
//! - Under systemd (`JOURNAL_STREAM` names our standard error): plain lines with a `<N>` syslog
//!   priority prefix and no timestamp; journald adds the time and reads the priority from the
//!   prefix (its `SyslogLevelPrefix=`, on by default), so `journalctl -p warning` works. No
//!   journald crate: the native protocol would add a dependency for structured fields nobody
//!   queries, and the prefix needs none.
//! - Started in the background (`run --detach`, the tmux plugin):
//!   `$XDG_STATE_HOME/thinkterm/daemon-KEY.log`, rotated by size ([`rotate`]).
//! - Otherwise: standard error, coloured on a terminal.

pub mod rotate;

use std::path::{Path, PathBuf};
use std::sync::{Mutex, OnceLock};

use tracing_subscriber::fmt::format::{Format, Full, Writer};
use tracing_subscriber::fmt::{FmtContext, FormatEvent, FormatFields};
use tracing_subscriber::layer::SubscriberExt as _;
use tracing_subscriber::registry::LookupSpan;
use tracing_subscriber::util::SubscriberInitExt as _;
use tracing_subscriber::{EnvFilter, Layer, Registry};

/// Where log lines go.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Sink {
    /// Standard error (a terminal or whatever the caller redirected it to).
    Stderr,
    /// The systemd journal, through standard error.
    Journal,
    /// A file rotated by size.
    File(PathBuf),
}

impl Sink {
    /// The journal when systemd connected our standard error to it, else standard error.
    pub fn from_env() -> Sink {
        if journal_is_stderr() {
            Sink::Journal
        } else {
            Sink::Stderr
        }
    }

    /// One line for people (`doctor`): `the journal`, `standard error`, or the file's path.
    pub fn describe(&self) -> String {
        match self {
            Sink::Stderr => "standard error".into(),
            Sink::Journal => "the systemd journal".into(),
            Sink::File(p) => p.display().to_string(),
        }
    }
}

static SINK: OnceLock<Sink> = OnceLock::new();

/// Where this process logs, once [`init`] ran.
pub fn sink() -> Option<&'static Sink> {
    SINK.get()
}

/// The log file of a daemon started in the background for the server with key `key`.
pub fn daemon_log_path(key: &str) -> PathBuf {
    crate::paths::state_dir().join(format!("daemon-{key}.log"))
}

/// Whether `JOURNAL_STREAM` (`DEVICE:INODE`, set by systemd) names our standard error: a
/// process started from a unit's shell with its output redirected keeps the variable but not
/// the stream, and must not write journal lines to a file.
fn journal_is_stderr() -> bool {
    let Some(v) = std::env::var_os("JOURNAL_STREAM") else {
        return false;
    };
    let Ok(st) = rustix::fs::fstat(std::io::stderr()) else {
        return false;
    };
    // `dev_t` and `ino_t` are not 64-bit on every target.
    #[allow(clippy::unnecessary_cast)]
    let (dev, ino) = (st.st_dev as u64, st.st_ino as u64);
    names_stream(&v.to_string_lossy(), dev, ino)
}

/// Whether a `JOURNAL_STREAM` value names the stream with this device and inode.
fn names_stream(value: &str, dev: u64, ino: u64) -> bool {
    value
        .split_once(':')
        .is_some_and(|(d, i)| d.parse() == Ok(dev) && i.parse() == Ok(ino))
}

/// The filter: `THINKTERM_LOG`, else `default`; a filter that does not parse falls back to
/// `info` with a warning once logging is up.
fn filter(default: &str) -> (EnvFilter, Option<String>) {
    let wanted = std::env::var("THINKTERM_LOG").unwrap_or_else(|_| default.to_string());
    match EnvFilter::try_new(&wanted) {
        Ok(f) => (f, None),
        Err(e) => (
            EnvFilter::new("info"),
            Some(format!(
                "THINKTERM_LOG / log = {wanted:?} is not a log filter ({e}); using info"
            )),
        ),
    }
}

/// Sets up logging to `sink` at `THINKTERM_LOG` or `default_level`. A log file that cannot be
/// opened falls back to standard error and says why.
pub fn init(sink: Sink, default_level: &str) {
    let (filter, bad_filter) = filter(default_level);
    let (layer, sink, failed): (Box<dyn Layer<Registry> + Send + Sync>, Sink, Option<String>) =
        match sink {
            Sink::Stderr => (stderr_layer(), Sink::Stderr, None),
            Sink::Journal => (
                tracing_subscriber::fmt::layer()
                    .with_writer(std::io::stderr)
                    .with_ansi(false)
                    .event_format(Journal(
                        tracing_subscriber::fmt::format()
                            .without_time()
                            .with_level(false)
                            .with_target(false),
                    ))
                    .boxed(),
                Sink::Journal,
                None,
            ),
            Sink::File(path) => match file_layer(&path) {
                Ok(l) => (l, Sink::File(path), None),
                Err(e) => (
                    stderr_layer(),
                    Sink::Stderr,
                    Some(format!("cannot open the log file {}: {e}", path.display())),
                ),
            },
        };
    let _ = tracing_subscriber::registry()
        .with(layer.with_filter(filter))
        .try_init();
    let _ = SINK.set(sink);
    for w in bad_filter.into_iter().chain(failed) {
        tracing::warn!("{w}");
    }
}

fn stderr_layer() -> Box<dyn Layer<Registry> + Send + Sync> {
    tracing_subscriber::fmt::layer()
        .with_writer(std::io::stderr)
        .with_target(false)
        .with_ansi(std::io::IsTerminal::is_terminal(&std::io::stderr()))
        .boxed()
}

fn file_layer(path: &Path) -> std::io::Result<Box<dyn Layer<Registry> + Send + Sync>> {
    let file = rotate::Rotating::open(path, rotate::MAX_BYTES, rotate::KEEP)?;
    Ok(tracing_subscriber::fmt::layer()
        .with_writer(Mutex::new(file))
        .with_target(false)
        .with_ansi(false)
        .boxed())
}

/// Journal lines: the syslog priority as a `<N>` prefix, then the event without time or level.
struct Journal(Format<Full, ()>);

impl<S, N> FormatEvent<S, N> for Journal
where
    S: tracing::Subscriber + for<'a> LookupSpan<'a>,
    N: for<'a> FormatFields<'a> + 'static,
{
    fn format_event(
        &self,
        ctx: &FmtContext<'_, S, N>,
        mut writer: Writer<'_>,
        event: &tracing::Event<'_>,
    ) -> std::fmt::Result {
        write!(writer, "<{}>", priority(event.metadata().level()))?;
        self.0.format_event(ctx, writer, event)
    }
}

/// The syslog priority of a level (`sd-daemon.h`: 3 err, 4 warning, 6 info, 7 debug).
fn priority(level: &tracing::Level) -> u8 {
    match *level {
        tracing::Level::ERROR => 3,
        tracing::Level::WARN => 4,
        tracing::Level::INFO => 6,
        _ => 7,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn priorities_follow_syslog() {
        assert_eq!(priority(&tracing::Level::ERROR), 3);
        assert_eq!(priority(&tracing::Level::WARN), 4);
        assert_eq!(priority(&tracing::Level::INFO), 6);
        assert_eq!(priority(&tracing::Level::TRACE), 7);
    }

    #[test]
    fn journal_stream_must_name_the_stream() {
        assert!(names_stream("64769:1234", 64769, 1234));
        assert!(!names_stream("64769:1234", 64769, 1235));
        assert!(!names_stream("64769", 64769, 1234));
        assert!(!names_stream("x:y", 0, 0));
    }
}
