//! The fake agents and the streaming pane. A fake agent is the bench binary run through a
//! symlink named like the agent's command (`claude`, `codex`, `gemini`, ...), so the sidecar
//! identifies it from its foreground process. It replays a recording's `raw-main-120x40.bin`
//! (every byte the real agent wrote to its pty) in a loop at the recorded pace, and logs the
//! instant of every change of the ground-truth state (the frames' `.json` files give
//! `raw_offset`, `t_since_start` and `state`). A recording with a [`super::fixtures::PACE`] file is replayed at
//! the pace the agent wrote it (one write per read of the capture's pipe, at its instant);
//! one without, in [`CHUNK_S`] chunks. The streaming pane writes log lines at a fixed rate.

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

use super::fixtures::{load_pace, Read};
use super::unix_ms;

/// The recording every fake agent replays, in its fixture folder.
pub const RAW: &str = "raw-main-120x40.bin";
/// Quiet time after the last recorded frame before the replay loops.
const LOOP_TAIL_S: f64 = 1.5;
/// Pace of the chunks written between two frames of the same state.
const CHUNK_S: f64 = 0.05;
/// A labelled state stays on screen at least this long before the next bytes go out (longer
/// than the spec's 450 ms debounce; see `schedule`).
const DWELL_S: f64 = 1.0;
/// The streaming pane's pace: one write every this long.
const STREAM_TICK: Duration = Duration::from_millis(20);

#[derive(Clone, Debug)]
pub struct Frame {
    pub t: f64,
    pub offset: usize,
    pub state: String,
    pub label: String,
}

/// The frames of `dir` taken from [`RAW`], in stream order.
pub fn load_frames(dir: &Path) -> Vec<Frame> {
    let mut frames = Vec::new();
    let mut names: Vec<PathBuf> = std::fs::read_dir(dir)
        .map(|rd| rd.flatten().map(|e| e.path()).collect())
        .unwrap_or_default();
    names.sort();
    for p in names {
        if p.extension().and_then(|e| e.to_str()) != Some("json") {
            continue;
        }
        let Ok(text) = std::fs::read_to_string(&p) else {
            continue;
        };
        let Ok(v) = serde_json::from_str::<serde_json::Value>(&text) else {
            continue;
        };
        if v["raw_file"].as_str() != Some(RAW) {
            continue;
        }
        let (Some(t), Some(offset), Some(state)) = (
            v["t_since_start"].as_f64(),
            v["raw_offset"].as_u64(),
            v["state"].as_str(),
        ) else {
            continue;
        };
        frames.push(Frame {
            t,
            offset: offset as usize,
            state: state.to_string(),
            label: v["label"].as_str().unwrap_or("").to_string(),
        });
    }
    frames.sort_by(|a, b| a.offset.cmp(&b.offset).then(a.t.total_cmp(&b.t)));
    frames
}

/// One write of the replay: at `t` seconds into the loop, bytes `from..to` (after a terminal
/// reset when `reset`), or a NUL when `pad` (a write that leaves the screen as it is);
/// `label` when this write is the one that changes the ground-truth state.
pub struct Step {
    pub t: f64,
    pub from: usize,
    pub to: usize,
    pub reset: bool,
    pub pad: bool,
    pub label: Option<(String, String)>,
}

/// The replay's writes, and the loop's period: [`schedule_paced`] when the recording has its
/// `pace`, else [`schedule_chunked`].
pub fn schedule(frames: &[Frame], len: usize, pace: Option<&[Read]>) -> (Vec<Step>, f64) {
    match pace {
        Some(pace) => schedule_paced(frames, len, pace),
        None => schedule_chunked(frames, len),
    }
}

/// Between two frames of the same state the bytes go out in `CHUNK_S` chunks at the recorded
/// pace (spinners, redraws); the bytes between two frames of different states go out in one
/// write at the later frame's time, so the instant the screen changes state is known exactly.
/// After such a write the next bytes wait `DWELL_S`: the recording only fixes the pace at its
/// frames, and between two frames of one state it can pass through others (after Claude Code's
/// frame 010 the next prompt's working and blocked screens come before frame 011's idle), which
/// would otherwise leave the labelled state on screen for less than the debounce.
pub fn schedule_chunked(frames: &[Frame], len: usize) -> (Vec<Step>, f64) {
    let mut steps = Vec::new();
    let (mut t0, mut o0, mut prev): (f64, usize, Option<&str>) = (0.0, 0, None);
    let mut prev_labelled = false;
    for (i, f) in frames.iter().enumerate() {
        let changes = prev.is_some_and(|p| p != f.state);
        if changes || f.offset == o0 {
            steps.push(Step {
                t: f.t,
                from: o0,
                to: f.offset,
                reset: i == 0,
                pad: false,
                label: changes.then(|| (f.state.clone(), f.label.clone())),
            });
        } else {
            if prev_labelled {
                t0 = (t0 + DWELL_S).min(f.t);
            }
            let n = (((f.t - t0) / CHUNK_S).floor() as usize).clamp(1, f.offset - o0);
            for j in 0..n {
                let a = o0 + (f.offset - o0) * j / n;
                let b = o0 + (f.offset - o0) * (j + 1) / n;
                steps.push(Step {
                    t: t0 + (f.t - t0) * (j + 1) as f64 / n as f64,
                    from: a,
                    to: b,
                    reset: i == 0 && j == 0,
                    pad: false,
                    label: None,
                });
            }
        }
        prev_labelled = changes;
        t0 = f.t;
        o0 = f.offset;
        prev = Some(&f.state);
    }
    tail(&mut steps, t0, o0, len);
    (steps, t0 + LOOP_TAIL_S)
}

/// The agent's own pace: one write at the instant of each read of the capture's pipe (as often
/// as the agent made tmux read its pane), carrying that read's bytes. Where the state changes,
/// the stretch's bytes go out in one write at the later frame's time, as in
/// [`schedule_chunked`], and its reads' writes are NULs (tmux reads the pane as often, the
/// screen changes state at a known instant); so are the reads' writes within `DWELL_S` after
/// such a write, whose bytes go with the next read after it (or at the next frame).
pub fn schedule_paced(frames: &[Frame], len: usize, pace: &[Read]) -> (Vec<Step>, f64) {
    let mut steps: Vec<Step> = Vec::new();
    let push = |steps: &mut Vec<Step>, t: f64, from: usize, to: usize, pad: bool, label| {
        let reset = steps.is_empty();
        steps.push(Step {
            t,
            from,
            to,
            reset,
            pad,
            label,
        });
    };
    // What is written up to, and no bytes before `hold` (the dwell after a labelled write).
    let (mut done, mut hold) = (0, 0.0);
    let (mut t0, mut o0, mut prev): (f64, usize, Option<&str>) = (0.0, 0, None);
    for f in frames {
        let changes = prev.is_some_and(|p| p != f.state);
        for r in pace.iter().filter(|r| r.end > o0 && r.end <= f.offset) {
            let t = r.t.clamp(t0, f.t);
            if changes || t < hold {
                push(&mut steps, t, done, done, true, None);
            } else {
                push(&mut steps, t, done, r.end, false, None);
                done = r.end;
            }
        }
        if changes {
            let label = Some((f.state.clone(), f.label.clone()));
            push(&mut steps, f.t, done, f.offset, false, label);
            hold = f.t + DWELL_S;
            done = f.offset;
        } else if done < f.offset || steps.is_empty() {
            push(&mut steps, f.t, done, f.offset, false, None);
            done = f.offset;
        }
        t0 = f.t;
        o0 = f.offset;
        prev = Some(&f.state);
    }
    tail(&mut steps, t0, o0, len);
    (steps, t0 + LOOP_TAIL_S)
}

/// What the recording holds after its last frame goes out half a second after it.
fn tail(steps: &mut Vec<Step>, t0: f64, o0: usize, len: usize) {
    if o0 < len {
        steps.push(Step {
            t: t0 + 0.5,
            from: o0,
            to: len,
            reset: false,
            pad: false,
            label: None,
        });
    }
}

/// Fake agent mode: `AGENT RAW FRAMES_DIR PHASE_S LOG` (or `AGENT --version`). Replays forever
/// from `PHASE_S` into the loop; logs `UNIX_MS WRITE_MS STATE LABEL` (the instant the write
/// began, how long the pty took its bytes) for every labelled state change it
/// writes. A loop that ends in another state than it starts in labels its restart too.
pub fn replay(args: &[String]) -> ! {
    if args.first().map(String::as_str) == Some("--version") {
        // The sidecar's version probe runs the agent's command with `--version`.
        println!("0.0.0 (thinkterm load replayer)");
        std::process::exit(0);
    }
    let raw = std::fs::read(&args[0]).unwrap_or_default();
    let frames = load_frames(Path::new(&args[1]));
    let phase: f64 = args[2].parse().unwrap_or(0.0);
    let mut log = std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(&args[3])
        .ok();
    // A real TUI puts its tty in raw mode: otherwise tmux's answers to its queries would echo.
    let _ = Command::new("stty").args(["raw", "-echo"]).status();
    let pace = load_pace(Path::new(&args[1]));
    let (steps, period) = schedule(&frames, raw.len(), pace.as_deref());
    if steps.is_empty() {
        eprintln!("replay: no frames in {}", args[1]);
        std::process::exit(1);
    }
    let wraps = match (frames.first(), frames.last()) {
        (Some(a), Some(b)) if a.state != b.state => Some((a.state.clone(), "loop".to_string())),
        _ => None,
    };
    // tmux resumes a pane's stopped program at once, so pausing is a file: `LOG.pause`.
    let pause = PathBuf::from(format!("{}.pause", args[3]));
    let mut out = std::io::stdout().lock();
    let mut base = Instant::now() - Duration::from_secs_f64(phase);
    let start = Instant::now();
    for lap in 0u64.. {
        for (i, s) in steps.iter().enumerate() {
            while pause.exists() {
                std::thread::sleep(Duration::from_millis(50));
            }
            let due = base + Duration::from_secs_f64(lap as f64 * period + s.t);
            let now = Instant::now();
            if due > now {
                std::thread::sleep(due - now);
            } else if due > start && now - due > Duration::from_secs(1) {
                // We were stopped (SIGSTOP) or starved: keep the pace from here, no burst.
                base += now - due;
            }
            // The instant the write begins: a big write (Gemini CLI's 278 KB redraw) takes tmux a
            // while to read, and the screen changes state somewhere in it.
            let began = unix_ms();
            if s.reset {
                let _ = out.write_all(b"\x1bc");
            }
            if s.pad {
                let _ = out.write_all(b"\0");
            } else {
                let _ = out.write_all(&raw[s.from..s.to]);
            }
            let _ = out.flush();
            // How long the pty took the bytes: a big write goes at tmux's reading pace.
            let wrote = unix_ms().saturating_sub(began);
            let label = if i == 0 && lap > 0 {
                wraps.as_ref()
            } else {
                s.label.as_ref()
            };
            if let (Some((state, label)), Some(log)) = (label, log.as_mut()) {
                if due >= start {
                    let _ = writeln!(log, "{began} {wrote} {state} {label}");
                    let _ = log.flush();
                }
            }
        }
    }
    std::process::exit(0)
}

/// Streaming mode: `--stream BYTES_PER_S`. Numbered log lines at a fixed rate, in writes every
/// [`STREAM_TICK`], forever. A fixed rate (not `yes` running free) keeps the tmux server's work
/// for the stream the same whether an observer runs or not: a program writing as fast as tmux
/// reads would write less whenever the machine is busier, and the observer's share would hide
/// in that.
pub fn stream(args: &[String]) -> ! {
    let rate: f64 = args
        .first()
        .and_then(|r| r.parse().ok())
        .unwrap_or(1048576.0);
    let per_tick = (rate * STREAM_TICK.as_secs_f64()) as usize;
    let mut out = std::io::stdout().lock();
    let mut next = Instant::now();
    let mut n: u64 = 0;
    let mut buf = Vec::with_capacity(per_tick + 128);
    loop {
        buf.clear();
        while buf.len() < per_tick {
            let _ = writeln!(
                buf,
                "[{n:>9}] cc -O2 -c src/module_{:04}.c -o build/module_{:04}.o   ok",
                n % 9973,
                n % 9973
            );
            n += 1;
        }
        let _ = out.write_all(&buf);
        let _ = out.flush();
        next += STREAM_TICK;
        let now = Instant::now();
        if next > now {
            std::thread::sleep(next - now);
        } else if now - next > Duration::from_secs(1) {
            next = now;
        }
    }
}
