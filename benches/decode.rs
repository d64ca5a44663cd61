//! Control-mode decoding: splitting the control stream into lines, decoding `%output` lines and
//! un-escaping tmux's octal escapes, beside a bare `memchr` pass over the same bytes (the floor:
//! any decoder must at least find the newlines). Goal: within 2× of `memchr` on plain text.
//! Inputs: the real Claude Code recording (escape-heavy TUI redraws) and plain text, both turned
//! into the `%output %P …` lines tmux writes.
#![allow(missing_docs)] // criterion macros generate undocumented items

use criterion::{black_box, criterion_group, criterion_main, Criterion, Throughput};
use std::path::PathBuf;
use thinkterm_sidecar::tmux::escape::{escape, unescape};
use thinkterm_sidecar::tmux::protocol::{Decoder, LineSplitter, Notification};

/// How many raw bytes tmux puts in one `%output` line at most (its read buffer size varies; a
/// few hundred to a few thousand bytes is what it writes under load).
const CHUNK: usize = 1024;

/// The real recording if the fixtures are there, else a synthetic redraw-heavy stream.
fn recording() -> Vec<u8> {
    let p = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../shared/fixtures/agents/claude-code/2.1.328/raw-main-120x40.bin");
    std::fs::read(p).unwrap_or_else(|_| {
        let mut v = Vec::new();
        for i in 0..2000 {
            v.extend_from_slice(
                format!(
                    "\x1b[H\r\x1b[{}C\x1b[37B\x1b[7m \x1b[27m\x1b[K✽ Bloviating… ({i}s)\r\n",
                    i % 80
                )
                .as_bytes(),
            );
        }
        v
    })
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

/// Splits and decodes a whole stream in 64 KiB reads (a socket read's size); returns the
/// payload bytes so nothing is optimised away.
fn decode_all(stream: &[u8]) -> usize {
    let mut splitter = LineSplitter::default();
    let mut decoder = Decoder::default();
    let mut total = 0;
    for read in stream.chunks(64 * 1024) {
        splitter.feed(read, |line| {
            if let Some(Notification::Output { data, .. }) = decoder.decode(line) {
                total += data.len();
            }
        });
    }
    total
}

fn bench(c: &mut Criterion) {
    let inputs = [
        ("claude-recording", control_stream(&recording())),
        ("plain-text", control_stream(&plain(256 * 1024))),
    ];
    for (name, stream) in &inputs {
        // Sanity: decoding gives back exactly the raw bytes' length.
        assert!(decode_all(stream) > 0);
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
        g.bench_function("split + decode + unescape", |b| {
            b.iter(|| decode_all(black_box(stream)))
        });
        g.bench_function("unescape only", |b| {
            b.iter(|| unescape(black_box(&escaped)).len())
        });
        g.finish();
    }
}

criterion_group!(benches, bench);
criterion_main!(benches);
