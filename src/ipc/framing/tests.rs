//! The framing's tests: every split of the input gives the same lines, the cap holds at its
//! edge, and the measured size of a large snapshot against [`MAX_REPLY_LINE`].

use std::io::{BufReader, Read};

use super::*;
use crate::ids::{PaneId, SessionId, WindowId};
use crate::ipc::schema::{PaneRow, Reply, StateSource, Subtask, WindowMark};
use crate::state::AgentState;

/// A reader that hands out its bytes in the given pieces, one piece per read.
struct Pieces(Vec<Vec<u8>>);

impl Read for Pieces {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        let Some(first) = self.0.first_mut() else {
            return Ok(0);
        };
        let n = first.len().min(buf.len());
        buf[..n].copy_from_slice(&first[..n]);
        first.drain(..n);
        if first.is_empty() {
            self.0.remove(0);
        }
        Ok(n)
    }
}

/// `input` cut at `cuts`; no piece is empty (an empty read is the end of the stream).
fn split_at(input: &[u8], cuts: &[usize]) -> Vec<Vec<u8>> {
    let mut out = Vec::new();
    let mut from = 0;
    for &c in cuts.iter().chain([input.len()].iter()) {
        if c > from {
            out.push(input[from..c].to_vec());
            from = c;
        }
    }
    out
}

/// Every line of the stream, or the error that ended it.
fn all_lines(r: &mut impl io::BufRead, frame: Frame) -> Result<Vec<Vec<u8>>, String> {
    let mut out = Vec::new();
    let mut line = Vec::new();
    loop {
        match read_line(r, frame, &mut line) {
            Ok(true) => out.push(line.clone()),
            Ok(false) => return Ok(out),
            Err(e) => return Err(e.to_string()),
        }
    }
}

async fn all_lines_async(
    r: &mut (impl AsyncBufRead + Unpin),
    frame: Frame,
) -> Result<Vec<Vec<u8>>, String> {
    let mut out = Vec::new();
    let mut line = Vec::new();
    loop {
        match read_line_async(r, frame, &mut line).await {
            Ok(true) => out.push(line.clone()),
            Ok(false) => return Ok(out),
            Err(e) => return Err(e.to_string()),
        }
    }
}

fn small(cap: usize) -> Frame {
    Frame {
        what: "request",
        cap,
    }
}

/// Reads `input` cut at every single byte position, and one byte per read, with the blocking
/// and the tokio reader (each with a buffer smaller than a line); all must give `expected`.
fn same_at_every_split(input: &[u8], frame: Frame, expected: &Result<Vec<Vec<u8>>, String>) {
    let rt = tokio::runtime::Builder::new_current_thread()
        .build()
        .expect("runtime");
    let mut cuts: Vec<Vec<usize>> = (0..=input.len()).map(|k| vec![k]).collect();
    cuts.push((1..input.len()).collect());
    for cut in cuts {
        let pieces = split_at(input, &cut);
        let mut r = BufReader::with_capacity(4, Pieces(pieces.clone()));
        assert_eq!(
            &all_lines(&mut r, frame),
            expected,
            "blocking, cut at {cut:?}"
        );
        let got = rt.block_on(async {
            let mut r = tokio::io::BufReader::with_capacity(4, AsyncPieces(Pieces(pieces)));
            all_lines_async(&mut r, frame).await
        });
        assert_eq!(&got, expected, "tokio, cut at {cut:?}");
    }
}

/// [`Pieces`] for tokio.
struct AsyncPieces(Pieces);

impl tokio::io::AsyncRead for AsyncPieces {
    fn poll_read(
        mut self: std::pin::Pin<&mut Self>,
        _: &mut std::task::Context<'_>,
        buf: &mut tokio::io::ReadBuf<'_>,
    ) -> std::task::Poll<io::Result<()>> {
        let n = self.0.read(buf.initialize_unfilled())?;
        buf.advance(n);
        std::task::Poll::Ready(Ok(()))
    }
}

#[test]
fn lines_are_the_same_at_every_split() {
    let input = b"{\"request\":\"agents\"}\n\n{\"a\":\"\xc3\xa9\"}\nlast";
    let expected = Ok(vec![
        b"{\"request\":\"agents\"}".to_vec(),
        Vec::new(),
        "{\"a\":\"é\"}".as_bytes().to_vec(),
        b"last".to_vec(),
    ]);
    same_at_every_split(input, small(64), &expected);
    same_at_every_split(b"", small(64), &Ok(Vec::new()));
    same_at_every_split(b"\n", small(0), &Ok(vec![Vec::new()]));
}

#[test]
fn the_cap_holds_at_its_edge_at_every_split() {
    // Lines of exactly the cap pass; one byte more is an error that names the cap, also when
    // the newline is the byte that comes after the cap.
    let ok = b"0123456789\nabcdefghij\n";
    let expected = Ok(vec![b"0123456789".to_vec(), b"abcdefghij".to_vec()]);
    same_at_every_split(ok, small(10), &expected);
    let long = b"0123456789\nabcdefghijk\nnot read\n";
    let err = Err("request line longer than the 10-byte cap".to_string());
    same_at_every_split(long, small(10), &err);
    same_at_every_split(b"abcdefghijk", small(10), &err);
}

#[test]
fn take_uses_nothing_of_a_line_beyond_the_cap() {
    let mut line = b"abc".to_vec();
    assert_eq!(take(&mut line, b"de", 4), None);
    assert_eq!(line, b"abc");
    assert_eq!(
        take(&mut line, b"d\nx", 4),
        Some(Step {
            used: 2,
            done: true
        })
    );
    assert_eq!(line, b"abcd");
}

#[test]
fn encoding_is_one_line_within_the_cap() {
    let reply = Reply::Done {
        message: "two\nlines".into(),
    };
    let line = REPLY.encode(&reply).expect("fits");
    assert_eq!(line.iter().filter(|&&b| b == b'\n').count(), 1);
    assert_eq!(line.last(), Some(&b'\n'));
    let back: Reply = REPLY.decode(&line[..line.len() - 1]).expect("parses");
    assert_eq!(back, reply);
    let json_len = line.len() - 1;
    let tight = Frame {
        what: "reply",
        cap: json_len,
    };
    assert!(tight.encode(&reply).is_ok());
    let e = Frame {
        what: "reply",
        cap: json_len - 1,
    }
    .encode(&reply)
    .expect_err("too long");
    assert_eq!(
        e.to_string(),
        format!("reply line longer than the {}-byte cap", json_len - 1)
    );
    let e = REPLY.decode::<Reply>(b"{\"reply\":").expect_err("not json");
    assert!(
        e.to_string().starts_with("reply line is not valid: "),
        "{e}"
    );
}

/// A pane as a busy agent shows it: long path, argv, message and a few subtasks.
fn busy_pane(i: u32) -> PaneRow {
    PaneRow {
        pane: PaneId(i),
        window: WindowId(i / 2),
        session: SessionId(i / 20),
        session_name: format!("project-{}", i / 20),
        window_index: i % 20,
        window_name: "claude: refactor the parser".into(),
        pane_index: i % 2,
        title: "✳ Refactoring the configuration loader".into(),
        active: true,
        window_active: false,
        current_path: format!("/home/someone/src/work/project-{}/crates/core", i / 20),
        current_command: "node".into(),
        fg_pid: Some(100_000 + i),
        fg_process: Some("node".into()),
        fg_argv: vec![
            "node".into(),
            "/home/someone/.local/lib/node_modules/@anthropic-ai/claude-code/cli.js".into(),
            "--continue".into(),
        ],
        process_less: false,
        agent: Some("claude".into()),
        agent_name: Some("Claude Code".into()),
        agent_mark: Some("✳".into()),
        agent_version: None,
        unrecognised: false,
        state: Some(AgentState::Working),
        unseen_result: false,
        source: StateSource::StatusReport,
        rule: Some("claude.working.spinner".into()),
        message: Some("Running the test suite after moving the key table into one macro".into()),
        report_title: Some("issue 14".into()),
        kind: None,
        progress: Some(40),
        subtasks: (0..3)
            .map(|n| Subtask {
                id: format!("build/step-{n}"),
                state: AgentState::Working,
                done: false,
                msg: Some("compiling thinkterm-sidecar (lib test)".into()),
            })
            .collect(),
        since_ms: 1_760_000_000_000,
        window_mark: WindowMark::Running,
        machine: Some("devbox".into()),
        shows: None,
    }
}

/// The measurement behind [`MAX_REPLY_LINE`]: a snapshot of 500 busy agent panes.
#[test]
fn a_snapshot_of_hundreds_of_busy_panes_fits_many_times_over() {
    let snap = Reply::Snapshot {
        machines: Vec::new(),
        clients: Vec::new(),
        schema: 1,
        panes: (0..500).map(busy_pane).collect(),
        windows: Vec::new(),
    };
    let line = REPLY.encode(&snap).expect("fits");
    let per_pane = line.len() / 500;
    eprintln!("500 busy panes: {} bytes, {per_pane} per pane", line.len());
    assert!((500..2000).contains(&per_pane), "{per_pane}");
    assert!(line.len() * 20 < MAX_REPLY_LINE, "{}", line.len());
}
