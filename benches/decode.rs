//! Control-mode decoding and escape-sequence scanning: splitting the control stream into lines,
//! decoding `%output` lines, and finding every escape sequence in what the panes wrote, beside a
//! bare `memchr` pass over the same bytes (the floor: any decoder must at least find the
//! newlines). Goal: within 2× of `memchr` on plain text. Inputs: the real Claude Code recording
//! (escape-heavy TUI redraws) and plain text, both turned into the `%output %P …` lines tmux
//! writes.
//!
//! "split + decode + scan" is the daemon's whole path for a read of the control stream: lines
//! split, `%output` data copied (still escaped) into the read's batch, and each batch entry
//! scanned the way `PaneEntry::on_output` does it: un-escaped from its first ESC only, then fed
//! to the OSC scanner. "… unescape everything" is the path before escaped pass-through.
//!
//! "model/AGENT" is the text model's part of an agent pane's read (`src/vt`): each pipe read of
//! a paced recording fed to the model, then the screen's text taken, as a look the model serves
//! takes it (time per read).
#![allow(missing_docs)] // criterion macros generate undocumented items

use criterion::{black_box, criterion_group, criterion_main, Criterion, Throughput};
use thinkterm_sidecar::osc::scanner::Scanner;
use thinkterm_sidecar::tmux::escape::{escape, unescape, Escaped};
use thinkterm_sidecar::tmux::protocol::{Decoder, Line, LineSplitter};
use thinkterm_sidecar::vt::TextScreen;

/// How many raw bytes tmux puts in one `%output` line at most (its read buffer size varies; a
/// few hundred to a few thousand bytes is what it writes under load).
const CHUNK: usize = 1024;

#[path = "../tests/support/fixtures.rs"]
mod fixtures;

/// The real Claude Code recording (`tests/fixtures/agents`); fails when it is missing.
fn recording() -> Vec<u8> {
    fixtures::read("claude-code/2.1.328/raw-main-120x40.bin")
}

/// Plain text the way a build log or `yes` writes it: printable lines ending in CR LF.
fn plain(len: usize) -> Vec<u8> {
    let mut v = Vec::with_capacity(len + 128);
    let mut i = 0u64;
    while v.len() < len {
        v.extend_from_slice(
            format!(
                "   Compiling crate-{i} v0.{}.{} (registry) building target for the host\r\n",
                i % 7,
                i % 13
            )
            .as_bytes(),
        );
        i += 1;
    }
    v.truncate(len);
    v
}

/// Raw pane output as the control stream carries it: `%output %7 ESCAPED\n` per chunk.
fn control_stream(raw: &[u8]) -> Vec<u8> {
    let mut out = Vec::with_capacity(raw.len() * 2);
    for chunk in raw.chunks(CHUNK) {
        out.extend_from_slice(b"%output %7 ");
        out.extend_from_slice(&escape(chunk));
        out.push(b'\n');
    }
    out
}

/// Splits and decodes a whole stream in 64 KiB reads (a socket read's size), without copying;
/// returns the payload bytes so nothing is optimised away.
fn decode_all(stream: &[u8]) -> usize {
    let mut splitter = LineSplitter::default();
    let mut decoder = Decoder::default();
    let mut total = 0;
    for read in stream.chunks(64 * 1024) {
        splitter.feed(read, |line| {
            if let Line::Output(_, wire) = decoder.decode_line(line) {
                total += wire.len();
            }
        });
    }
    total
}

/// The daemon's path: per 64 KiB read, the pane's output merged into one batch entry (copied,
/// still escaped), then scanned from its first ESC (`unescape_all`: the old path, un-escaping
/// everything first). Returns the scanner's events.
fn decode_and_scan(stream: &[u8], unescape_all: bool) -> usize {
    let mut splitter = LineSplitter::default();
    let mut decoder = Decoder::default();
    let mut scanner = Scanner::new();
    let mut events = 0;
    for read in stream.chunks(64 * 1024) {
        let mut batch: Option<Escaped> = None;
        splitter.feed(read, |line| {
            if let Line::Output(_, wire) = decoder.decode_line(line) {
                match &mut batch {
                    Some(b) => b.extend_wire(wire),
                    None => batch = Some(Escaped::from_wire_with_capacity(wire, read.len())),
                }
            }
        });
        let Some(data) = batch else { continue };
        let raw = data.to_scan(!unescape_all && scanner.is_idle());
        if let Some(raw) = raw {
            scanner.feed(&raw, &mut |_| events += 1);
        }
    }
    events
}

fn bench(c: &mut Criterion) {
    let inputs = [
        ("claude-recording", control_stream(&recording())),
        ("plain-text", control_stream(&plain(256 * 1024))),
    ];
    for (name, stream) in &inputs {
        // Sanity: both scanning paths see the same escape sequences.
        assert!(decode_all(stream) > 0);
        assert_eq!(
            decode_and_scan(stream, false),
            decode_and_scan(stream, true)
        );
        let escaped: Vec<u8> = stream
            .split(|b| *b == b'\n')
            .filter_map(|l| l.strip_prefix(b"%output %7 "))
            .flatten()
            .copied()
            .collect();
        let mut g = c.benchmark_group(format!("decode/{name}"));
        g.throughput(Throughput::Bytes(stream.len() as u64));
        g.bench_function("memchr newline pass", |b| {
            b.iter(|| memchr::memchr_iter(b'\n', black_box(stream)).count())
        });
        g.bench_function("memchr2 newline+backslash pass", |b| {
            b.iter(|| memchr::memchr2_iter(b'\n', b'\\', black_box(stream)).count())
        });
        g.bench_function("split + decode", |b| {
            b.iter(|| decode_all(black_box(stream)))
        });
        g.bench_function("split + decode + scan", |b| {
            b.iter(|| decode_and_scan(black_box(stream), false))
        });
        g.bench_function("split + decode + scan, unescape everything", |b| {
            b.iter(|| decode_and_scan(black_box(stream), true))
        });
        g.bench_function("unescape only", |b| {
            b.iter(|| unescape(black_box(&escaped)).len())
        });
        g.finish();
    }
}

/// A paced recording's bytes, and where each of its pipe reads ended (`tests/fixtures/paced`).
fn paced_reads(version: &str) -> (Vec<u8>, Vec<usize>) {
    let dir = std::path::Path::new(fixtures::AGENTS)
        .with_file_name("paced")
        .join(version);
    let raw = std::fs::read(dir.join("raw-main-120x40.bin"))
        .unwrap_or_else(|e| panic!("fixture {}: {e}", dir.display()));
    let pace = fixtures::load_pace(&dir)
        .unwrap_or_else(|| panic!("fixture {}: no {}", dir.display(), fixtures::PACE));
    let ends = pace.iter().map(|r| r.end.min(raw.len())).collect();
    (raw, ends)
}

fn bench_model(c: &mut Criterion) {
    for version in ["claude-code/2.1.328", "codex/0.171.0", "gemini-cli/0.61.0"] {
        let (raw, ends) = paced_reads(version);
        assert!(ends.len() > 100, "{version}: {} reads", ends.len());
        let mut g = c.benchmark_group(format!("model/{version}"));
        g.throughput(Throughput::Elements(ends.len() as u64));
        g.bench_function("each read fed, then the text taken", |b| {
            b.iter(|| {
                let mut s = TextScreen::new(40, 120);
                let (mut at, mut len) = (0, 0);
                for &end in &ends {
                    s.process(&raw[at..end]);
                    at = end;
                    len += s.text().len();
                }
                black_box(len)
            })
        });
        g.finish();
    }
}

criterion_group!(benches, bench, bench_model);
criterion_main!(benches);
