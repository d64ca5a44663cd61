//! One machine's connection, as a task: runs the command that reaches the machine's sidecar
//! (`ssh … thinkterm-sidecar bridge`), asks it to `follow` (its snapshot, events, notification
//! and sound decisions), hands every reply to the daemon, sends the daemon's requests (each with
//! an id, so that its reply finds the way back), and when the connection drops, says so once
//! and tries again after a backoff that doubles from 1 s to 30 s.
//!
//! Bad input from the far end never reaches the daemon as anything but a clear line: output that
//! is not a reply (a shell's greeting) is skipped with one warning per connection; an error
//! answer to `follow` means a sidecar too old to be followed.

use std::process::Stdio;
use std::time::{Duration, Instant};

use tokio::io::{AsyncWriteExt, BufReader};
use tokio::process::Command;
use tokio::sync::mpsc;

use crate::ipc::framing;
use crate::ipc::schema::{MachineSpec, Reply, Request};
use crate::ipc::{decode_tagged, encode_request};

/// The first wait after a connection dropped.
pub const FIRST_BACKOFF: Duration = Duration::from_secs(1);
/// The longest wait between two tries.
pub const MAX_BACKOFF: Duration = Duration::from_secs(30);
/// A connection that stayed up this long starts the next backoff from the beginning.
pub const STABLE: Duration = Duration::from_secs(30);
/// The longest wait for the far end's first answer.
pub const FIRST_ANSWER: Duration = Duration::from_secs(20);
/// Lines that are not replies skipped before the first one, at most.
pub const MAX_NOISE: usize = 100;
/// Room for the daemon's requests and for what the link reports.
pub const QUEUE: usize = 256;

/// Which machine (its index in the daemon's list, stable while it runs).
pub type MachineIndex = usize;

/// What a link tells the daemon.
#[derive(Debug)]
pub enum LinkEvent {
    /// The machine's sidecar answers (the first snapshot follows as a reply).
    Up,
    /// The connection is gone, or could not be made; why.
    Down(String),
    /// A reply: to one of the daemon's requests (its id), or on the follow stream (no id).
    Reply(Option<u64>, Box<Reply>),
}

/// The daemon's handle on a link: dropping it ends the link (and its child process).
#[derive(Debug)]
pub struct Link {
    requests: mpsc::Sender<(u64, Request)>,
    task: tokio::task::JoinHandle<()>,
}

impl Drop for Link {
    fn drop(&mut self) {
        self.task.abort();
    }
}

impl Link {
    /// Starts the link of machine `index`; its reports arrive on `events`.
    pub fn start(
        index: MachineIndex,
        spec: MachineSpec,
        events: mpsc::Sender<(MachineIndex, LinkEvent)>,
    ) -> Link {
        let (requests, rx) = mpsc::channel(QUEUE);
        let task = tokio::spawn(run(index, spec, events, rx));
        Link { requests, task }
    }

    /// Sends a request (its reply comes back as `LinkEvent::Reply(Some(id), …)`); false when
    /// the link cannot take it now (down, or far behind).
    pub fn request(&self, id: u64, request: Request) -> bool {
        self.requests.try_send((id, request)).is_ok()
    }
}

/// The argv of the command, with a clear error when it is empty.
fn command(spec: &MachineSpec) -> Result<Command, String> {
    let argv = super::spec::argv(spec);
    let (program, args) = argv
        .split_first()
        .ok_or_else(|| format!("{}: the command is empty", spec.name))?;
    let mut c = Command::new(program);
    c.args(args)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .kill_on_drop(true);
    Ok(c)
}

async fn run(
    index: MachineIndex,
    spec: MachineSpec,
    events: mpsc::Sender<(MachineIndex, LinkEvent)>,
    mut requests: mpsc::Receiver<(u64, Request)>,
) {
    let mut backoff = FIRST_BACKOFF;
    loop {
        let started = Instant::now();
        let why = match connect_once(index, &spec, &events, &mut requests).await {
            Ok(why) | Err(why) => why,
        };
        if events.send((index, LinkEvent::Down(why))).await.is_err() {
            return;
        }
        if started.elapsed() >= STABLE {
            backoff = FIRST_BACKOFF;
        }
        // Requests made while down are answered by the daemon itself (it knows the link is
        // down); drop what queued meanwhile.
        let wake = tokio::time::Instant::now() + backoff;
        loop {
            tokio::select! {
                () = tokio::time::sleep_until(wake) => break,
                r = requests.recv() => if r.is_none() { return },
            }
        }
        backoff = (backoff * 2).min(MAX_BACKOFF);
    }
}

/// One connection, from the spawn to its end; the reason it ended.
async fn connect_once(
    index: MachineIndex,
    spec: &MachineSpec,
    events: &mpsc::Sender<(MachineIndex, LinkEvent)>,
    requests: &mut mpsc::Receiver<(u64, Request)>,
) -> Result<String, String> {
    let mut child = command(spec)?
        .spawn()
        .map_err(|e| format!("cannot run {:?}: {e}", super::spec::argv(spec)[0]))?;
    let mut stdin = child.stdin.take().ok_or("no stdin")?;
    let stdout = child.stdout.take().ok_or("no stdout")?;
    let stderr = child.stderr.take().ok_or("no stderr")?;
    // What the command says on stderr explains a failure (ssh's "Permission denied", "command
    // not found"): keep its last line.
    let last_error = std::sync::Arc::new(std::sync::Mutex::new(String::new()));
    let keep = last_error.clone();
    tokio::spawn(async move {
        let mut r = BufReader::new(stderr);
        let mut line = Vec::new();
        while let Ok(true) = framing::read_line_async(&mut r, framing::REQUEST, &mut line).await {
            let text = String::from_utf8_lossy(&line).trim().to_string();
            if !text.is_empty() {
                if let Ok(mut k) = keep.lock() {
                    *k = text;
                }
            }
        }
    });
    let reason = |fallback: String| -> String {
        let e = last_error.lock().map(|e| e.clone()).unwrap_or_default();
        if e.is_empty() {
            fallback
        } else {
            e
        }
    };
    let follow = encode_request(
        None,
        &Request::Follow {
            notifications: true,
        },
    )
    .map_err(|e| e.to_string())?;
    if let Err(e) = stdin.write_all(&follow).await {
        let _ = child.wait().await;
        return Err(reason(format!("cannot write to the command: {e}")));
    }
    let mut reader = BufReader::new(stdout);
    let mut line = Vec::new();
    let mut up = false;
    let mut noise = 0usize;
    loop {
        let next = async {
            if up {
                Ok(framing::read_line_async(&mut reader, framing::REPLY, &mut line).await)
            } else {
                tokio::time::timeout(
                    FIRST_ANSWER,
                    framing::read_line_async(&mut reader, framing::REPLY, &mut line),
                )
                .await
            }
        };
        tokio::select! {
            read = next => {
                let more = match read {
                    Err(_) => return Err(reason(format!("no answer within {FIRST_ANSWER:?}"))),
                    Ok(Err(e)) => return Err(reason(e.to_string())),
                    Ok(Ok(more)) => more,
                };
                if !more {
                    let status = child.wait().await.map(|s| s.to_string()).unwrap_or_default();
                    return Ok(reason(format!("the connection closed ({status})")));
                }
                if line.trim_ascii().is_empty() {
                    continue;
                }
                let (id, reply) = match decode_tagged(&line) {
                    Ok(r) => r,
                    Err(_) => {
                        noise += 1;
                        if noise == 1 {
                            tracing::warn!(
                                machine = %spec.name,
                                "skipping output that is not a sidecar reply: {:?}",
                                String::from_utf8_lossy(&line[..line.len().min(120)])
                            );
                        }
                        if !up && noise > MAX_NOISE {
                            return Err("the far end does not speak the sidecar's protocol".into());
                        }
                        continue;
                    }
                };
                if !up {
                    if let Reply::Error { message } = &reply {
                        return Err(format!(
                            "its sidecar cannot be followed (too old? upgrade it): {message}"
                        ));
                    }
                    up = true;
                    if events.send((index, LinkEvent::Up)).await.is_err() {
                        return Ok("the daemon stopped".into());
                    }
                }
                if events.send((index, LinkEvent::Reply(id, Box::new(reply)))).await.is_err() {
                    return Ok("the daemon stopped".into());
                }
            }
            r = requests.recv() => {
                let Some((id, request)) = r else {
                    return Ok("the daemon stopped".into());
                };
                let Ok(bytes) = encode_request(Some(id), &request) else {
                    continue;
                };
                if let Err(e) = stdin.write_all(&bytes).await {
                    return Err(reason(format!("cannot write to the command: {e}")));
                }
            }
        }
    }
}
