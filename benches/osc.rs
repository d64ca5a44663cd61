//! The OSC scanner's throughput: 1 MiB of plain text and 1 MiB of a real, escape-heavy Codex
//! recording, each beside a bare `memchr` pass over the same bytes (the floor it is measured
//! against; goal: within 2× of it, ≥ 1 GB/s, on plain text).
// `criterion_group!` generates an undocumented `pub fn`.
#![allow(missing_docs)]

use criterion::{black_box, criterion_group, criterion_main, Criterion, Throughput};
use thinkterm_sidecar::osc::scanner::Scanner;

#[path = "../tests/support/fixtures.rs"]
mod fixtures;

const MIB: usize = 1 << 20;
/// The real Codex recording, under `tests/fixtures/agents`.
const CODEX: &str = "codex/0.169.0/raw-main-120x40.bin";

fn plain() -> Vec<u8> {
    let line = b"   Compiling serde v1.0.210 (/home/user/.cargo/registry/src/serde-1.0.210) \xe2\x9c\x93 ok\r\n";
    line.iter().copied().cycle().take(MIB).collect()
}

fn repeated(src: &[u8]) -> Vec<u8> {
    src.iter().copied().cycle().take(MIB).collect()
}

fn group(c: &mut Criterion, name: &str, data: &[u8]) {
    let mut g = c.benchmark_group(name);
    g.throughput(Throughput::Bytes(data.len() as u64));
    g.bench_function("memchr", |b| {
        b.iter(|| memchr::memchr_iter(0x1b, black_box(data)).count())
    });
    g.bench_function("scanner", |b| {
        let mut s = Scanner::new();
        b.iter(|| {
            let mut n = 0usize;
            s.feed(black_box(data), &mut |_| n += 1);
            n
        })
    });
    g.bench_function("scanner_4k_chunks", |b| {
        let mut s = Scanner::new();
        b.iter(|| {
            let mut n = 0usize;
            for chunk in black_box(data).chunks(4096) {
                s.feed(chunk, &mut |_| n += 1);
            }
            n
        })
    });
    g.finish();
}

fn bench(c: &mut Criterion) {
    group(c, "plain_1MiB", &plain());
    group(c, "codex_escapes_1MiB", &repeated(&fixtures::read(CODEX)));
}

criterion_group!(benches, bench);
criterion_main!(benches);
