//! The daemon's socket requests on arbitrary bytes: the line framing (with its 64 KiB cap) and
//! the request decoder. No panic; the lines are the same whether the bytes come whole or in
//! small reads; a request that decodes encodes back to a line that decodes to the same request
//! and id.
#![no_main]
use std::io::{BufRead, BufReader, Read};

use libfuzzer_sys::fuzz_target;
use thinkterm_sidecar::ipc::framing::{self, FrameError, REQUEST};
use thinkterm_sidecar::ipc::{decode_request, encode_request};

/// A reader that hands out at most `n` bytes per read.
struct Trickle<'a> {
    data: &'a [u8],
    n: usize,
}

impl Read for Trickle<'_> {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        let k = self.n.min(buf.len()).min(self.data.len());
        buf[..k].copy_from_slice(&self.data[..k]);
        self.data = &self.data[k..];
        Ok(k)
    }
}

/// The lines read (until the end or the first error), and whether an error ended them.
fn lines(r: &mut impl BufRead) -> (Vec<Vec<u8>>, bool) {
    let mut out = Vec::new();
    let mut line = Vec::new();
    loop {
        match framing::read_line(r, REQUEST, &mut line) {
            Ok(true) => out.push(line.clone()),
            Ok(false) => return (out, false),
            Err(FrameError::TooLong { .. }) => return (out, true),
            Err(e) => panic!("{e}"),
        }
    }
}

fuzz_target!(|data: &[u8]| {
    let whole = lines(&mut BufReader::new(data));
    let n = data.first().map_or(1, |&b| (b as usize % 64) + 1);
    let trickled = lines(&mut BufReader::with_capacity(n, Trickle { data, n }));
    assert_eq!(whole, trickled, "read {n} bytes at a time");
    for line in &whole.0 {
        assert!(line.len() <= framing::MAX_REQUEST_LINE);
        if let Ok((id, request)) = decode_request(line) {
            let again = encode_request(id, &request).expect("a decoded request encodes");
            let back = decode_request(&again[..again.len() - 1]).expect("and decodes");
            assert_eq!(back, (id, request));
        }
    }
});
