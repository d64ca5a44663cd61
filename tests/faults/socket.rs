//! The daemon's socket under hostile and broken clients: a peer of another uid, a thousand
//! clients that vanish mid-request, a 100 MB request line, a subscriber that never reads. Each
//! checks what it costs the daemon (its RSS and open descriptors, read from `/proc`) and that
//! another client's `agents` is answered meanwhile.

use std::io::{Read, Write};
use std::os::unix::fs::PermissionsExt;
use std::os::unix::net::UnixStream;
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use crate::support::{rss_kib, wait_for, Daemon, Env, Tmux};

/// The daemon's socket in `env`.
pub fn socket_of(env: &Env) -> PathBuf {
    std::fs::read_dir(env.path("run/thinkterm"))
        .unwrap()
        .flatten()
        .map(|e| e.path())
        .find(|p| p.extension().is_some_and(|x| x == "sock"))
        .unwrap()
}

/// How many descriptors a process has open.
pub fn fds(pid: u32) -> usize {
    std::fs::read_dir(format!("/proc/{pid}/fd"))
        .unwrap()
        .count()
}

/// Asks `agents` on a connection of its own; returns how long the answer took. Panics when no
/// snapshot comes within 10 s.
pub fn time_agents(sock: &Path) -> Duration {
    let started = Instant::now();
    let mut s = UnixStream::connect(sock).unwrap();
    s.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
    s.write_all(b"{\"request\":\"agents\"}\n").unwrap();
    let mut got = Vec::new();
    let mut buf = [0u8; 65536];
    while !got.contains(&b'\n') {
        let n = s.read(&mut buf).expect("agents answered within 10 s");
        assert!(n > 0, "the daemon closed the connection before answering");
        got.extend_from_slice(&buf[..n]);
    }
    let v: serde_json::Value = serde_json::from_slice(&got).unwrap();
    assert_eq!(v["reply"], "snapshot", "{v}");
    started.elapsed()
}

/// Another client asking `agents` over and over while a fault goes on; [`Prober::finish`]
/// returns how many answers came and the slowest.
pub struct Prober {
    stop: Arc<AtomicBool>,
    thread: std::thread::JoinHandle<(u32, Duration)>,
}

impl Prober {
    /// Starts asking, every 10 ms.
    pub fn start(sock: &Path) -> Prober {
        let stop = Arc::new(AtomicBool::new(false));
        let (sock, flag) = (sock.to_path_buf(), stop.clone());
        let thread = std::thread::spawn(move || {
            let (mut n, mut worst) = (0, Duration::ZERO);
            // At least one answer, however soon it is stopped.
            loop {
                worst = worst.max(time_agents(&sock));
                n += 1;
                if flag.load(Ordering::Relaxed) {
                    break;
                }
                std::thread::sleep(Duration::from_millis(10));
            }
            (n, worst)
        });
        Prober { stop, thread }
    }

    /// Stops; (answers, slowest answer).
    pub fn finish(self) -> (u32, Duration) {
        self.stop.store(true, Ordering::Relaxed);
        self.thread.join().expect("the prober panicked")
    }
}

/// The slowest an `agents` answer may be while another client misbehaves. A daemon whose
/// socket were held by that client would not answer at all; 2 s leaves room for a loaded
/// two-core machine.
const PROMPT: Duration = Duration::from_secs(2);

/// Connects as uid/gid 65534 (nobody) with perl, sends an `agents` request and reports what
/// happened: `denied: REASON`, or `connected` then `read N` (bytes until the end or the end of
/// the first line).
fn connect_as_nobody(sock: &Path) -> String {
    let perl = r#"
        use IO::Socket::UNIX;
        $SIG{PIPE} = 'IGNORE';
        alarm 10;
        my $s = IO::Socket::UNIX->new(Type => SOCK_STREAM(), Peer => $ARGV[0])
            or do { print "denied: $!\n"; exit 0 };
        print "connected\n";
        syswrite($s, "{\"request\":\"agents\"}\n");
        my ($n, $buf) = (0, '');
        while (1) {
            my $r = sysread($s, $buf, 65536);
            last if !defined($r) || $r == 0;
            $n += $r;
            last if $buf =~ /\n/;
        }
        print "read $n\n";
    "#;
    let out = Command::new("perl")
        .args(["-e", perl])
        .arg(sock)
        .uid(65534)
        .gid(65534)
        .stdin(Stdio::null())
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "perl: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// Lines of the daemon's log that say a connection was refused.
fn refusals(d: &Daemon) -> Vec<String> {
    d.log_text()
        .lines()
        .filter(|l| l.contains("refused a connection on the socket"))
        .map(String::from)
        .collect()
}

/// The socket serves its owner only. Another user is kept out by the modes (socket 0600 in a
/// 0700 directory); with the modes loosened (as a restored backup, a bind mount or a careless
/// chmod would), the peer's uid (`SO_PEERCRED`) still keeps it out: its connection is closed
/// unanswered, with one log line naming its uid, and the owner is still served.
#[test]
fn only_the_owner_may_use_the_socket() {
    if euid() != 0 {
        eprintln!(
            "skipped: connecting as another user needs root (CI and this machine run as root)"
        );
        return;
    }
    let mut tmux = Tmux::new();
    let env = Env::new();
    tmux.new_session("owner", Some("sleep 300"));
    let d = Daemon::start(&env, &tmux);
    d.wait_ready(&env, &tmux);
    let sock = socket_of(&env);
    let mode = |p: &Path| std::fs::metadata(p).unwrap().permissions().mode() & 0o777;
    assert_eq!(mode(&sock), 0o600);
    assert_eq!(mode(sock.parent().unwrap()), 0o700);
    // The test's own temporary directories let everyone through to the daemon's.
    for dir in [env.dir.path().to_path_buf(), env.path("run")] {
        std::fs::set_permissions(&dir, std::fs::Permissions::from_mode(0o711)).unwrap();
    }
    let kept_out = connect_as_nobody(&sock);
    assert!(
        kept_out.starts_with("denied: Permission denied"),
        "the modes keep another user out: {kept_out}"
    );
    assert!(refusals(&d).is_empty(), "nothing reached the daemon");

    // The modes lost: the kernel lets the connection through, the daemon refuses it.
    std::fs::set_permissions(
        sock.parent().unwrap(),
        std::fs::Permissions::from_mode(0o711),
    )
    .unwrap();
    std::fs::set_permissions(&sock, std::fs::Permissions::from_mode(0o666)).unwrap();
    let refused = connect_as_nobody(&sock);
    assert_eq!(
        refused, "connected\nread 0\n",
        "connected, and closed without a byte of answer"
    );
    let lines = wait_for(5, "the refusal is logged", || {
        Some(refusals(&d)).filter(|l| !l.is_empty())
    });
    assert_eq!(lines.len(), 1, "one line per refused connection: {lines:?}");
    assert!(
        lines[0].contains("from uid 65534 (pid ") && lines[0].contains("it serves uid 0 only"),
        "{}",
        lines[0]
    );
    // The owner is still served, on the same loosened socket.
    assert!(time_agents(&sock) < PROMPT);
    drop(d);
}

/// This process's effective uid (the owner of `/proc/self`).
fn euid() -> u32 {
    use std::os::unix::fs::MetadataExt;
    std::fs::metadata("/proc/self").unwrap().uid()
}

/// A daemon on a private tmux server with one quiet pane, for the faults below.
fn quiet_daemon() -> (Tmux, Env, Daemon, PathBuf) {
    let mut tmux = Tmux::new();
    let env = Env::new();
    let pane = tmux.new_session("quiet", Some("sleep 300"));
    let d = Daemon::start(&env, &tmux);
    d.wait_ready(&env, &tmux);
    // The daemon answers before the pane's pipe is handed over; that descriptor is the pane's,
    // for good, and must be in the baselines the tests take.
    wait_for(10, "the pane read through its pipe", || {
        let (_, out, _) = env.run(&tmux, &["explain", &pane, "--json"]);
        let v: serde_json::Value = serde_json::from_str(&out).ok()?;
        (v["output"] == "pipe").then_some(())
    });
    let sock = socket_of(&env);
    (tmux, env, d, sock)
}

/// A thousand clients, a hundred at a time, that each vanish mid-request: a third send half a
/// request line and close, a third send a whole `agents` and close before the answer, a third
/// subscribe to `events` and close. Five rounds after two that set the baseline, each
/// let to end before the next (what the daemon keeps depends on how many it holds at once):
/// meanwhile another client's `agents` is answered promptly; after each the daemon holds no
/// more descriptors than before; at the end its memory is within 2 MiB of the baseline (the
/// allocator keeps some of what it handed out; measured 0.1 to 0.9 MiB).
///
/// Regression of two defects it found: a subscriber that vanished kept its connection (its
/// descriptor and three tasks) until the next event failed to reach it — on a quiet server,
/// for good (333 descriptors after a thousand clients; enough of them exhaust the daemon's
/// descriptors); and the subscriber list kept each one's queue until the next event (2 MiB
/// more per thousand clients, without end).
#[test]
fn a_thousand_clients_vanishing_mid_request_leave_nothing_behind() {
    let (_tmux, _env, d, sock) = quiet_daemon();
    let pid = d.child.id();
    let fds_before = fds(pid);
    // Warm-up rounds, so that the memory baseline counts what the runtime and the allocator
    // keep once they have served that many at a time (about 5 MiB, the queues of a hundred
    // open connections). One round was not always enough: how many connections are open at
    // once, and so where the allocator settles, varies with timing, and after one round the
    // daemon was 3 MiB short of where it stayed for the next five in 1 run of 4 (29.8 MiB,
    // then 33.0 – 33.4 MiB like the other runs' baselines); after two it was at its level.
    // The baseline is the highest level the warm-ups reached, not the last reading: the
    // allocator can hand memory back between two rounds and take it again in the next (a CI
    // run here read 21.3 MiB after the first warm-up, 18.6 MiB after the second, then 20.7 –
    // 21.4 MiB for the five rounds: no growth, but 2.6 MiB above the dip). A leak still shows:
    // it grows round after round past that level.
    let mut warm_up = Vec::new();
    for _ in 0..2 {
        vanishing_clients(&sock, 1000);
        all_closed(pid, fds_before);
        warm_up.push(rss_kib(pid));
    }
    let rss_before = warm_up.iter().copied().max().unwrap_or(0).max(rss_kib(pid));
    let prober = Prober::start(&sock);
    let mut fds_after = 0;
    let mut rounds = Vec::new();
    for _ in 0..5 {
        vanishing_clients(&sock, 1000);
        fds_after = all_closed(pid, fds_before);
        rounds.push(rss_kib(pid));
    }
    let (answers, worst) = prober.finish();
    assert!(
        answers > 0 && worst < PROMPT,
        "{answers} answers, slowest {worst:?}"
    );
    let rss_after = rss_kib(pid);
    eprintln!(
        "5 x 1000 vanishing clients: fds {fds_before} -> {fds_after}, RSS {rss_before} -> {rss_after} KiB \
         (warm-up {warm_up:?}, rounds {rounds:?}), {answers} agents answered meanwhile, slowest {worst:?}"
    );
    assert!(
        rss_after <= rss_before + 2048,
        "RSS grew from {rss_before} to {rss_after} KiB"
    );
    assert!(time_agents(&sock) < PROMPT);
}

/// `n` clients, 100 connected at a time, each vanishing in one of three ways.
fn vanishing_clients(sock: &Path, n: usize) {
    for batch in 0..n.div_ceil(100) {
        let mut open = Vec::new();
        for i in batch * 100..((batch + 1) * 100).min(n) {
            let mut s = UnixStream::connect(sock).unwrap();
            let line: &[u8] = match i % 3 {
                0 => b"{\"request\":\"age",
                1 => b"{\"request\":\"agents\"}\n",
                _ => b"{\"request\":\"events\"}\n",
            };
            s.write_all(line).unwrap();
            open.push(s);
        }
        drop(open);
    }
}

/// Waits until the daemon holds no more than `before` descriptors; returns how many it holds.
/// Panics after 10 s.
fn all_closed(pid: u32, before: usize) -> usize {
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        let n = fds(pid);
        if n <= before {
            return n;
        }
        assert!(
            Instant::now() < deadline,
            "the daemon still holds {n} descriptors after 10 s, {before} before"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// A file holding what `thinkterm-sidecar report --stdout` prints for `state`.
fn report_file(env: &Env, state: &str) -> PathBuf {
    let out = Command::new(env!("CARGO_BIN_EXE_thinkterm-sidecar"))
        .args(["report", "--stdout", "--state", state, "--app", "burst"])
        .output()
        .unwrap()
        .stdout;
    let p = env.path(&format!("{state}.bin"));
    std::fs::write(&p, out).unwrap();
    p
}

/// A client that subscribes like the panel (events and a snapshot at every change) and then
/// never reads, while a pane changes state 1000 times over 10 s beside 40 other panes (a
/// snapshot is about 40 KiB): the daemon's memory grows by less than 3 MiB, and `agents` is
/// answered meanwhile.
///
/// Regression: a snapshot was queued for it at every change, up to two thousand of them (its
/// subscriber queue and its connection's, 1024 each): 10 MiB after 2000 changes here, and
/// hundreds of MiB on a server with hundreds of panes. Now it holds at most a few before it
/// has read them.
#[test]
fn a_subscriber_that_never_reads_holds_bounded_memory() {
    const TRANSITIONS: u64 = 1_000;
    let mut tmux = Tmux::new();
    let env = Env::new();
    let (w, i) = (report_file(&env, "working"), report_file(&env, "idle"));
    let burst = env.path("burst.sh");
    crate::support::script(
        &burst,
        &format!(
            "#!/bin/bash\nW=$(cat {}); I=$(cat {})\nmkfifo {f}; exec 9<>{f}\nread -r _\nfor ((n = 0; n < {}; n++)); do printf '%s' \"$W\"; read -rt 0.01 -u 9; printf '%s' \"$I\"; read -rt 0.01 -u 9; done\nexec sleep 300\n",
            w.display(),
            i.display(),
            TRANSITIONS / 2,
            f = env.path("pause").display()
        ),
    );
    let pane = tmux.new_session("burst", Some(&burst.display().to_string()));
    for _ in 0..40 {
        tmux.new_window("burst:", Some("sleep 300"));
    }
    let d = Daemon::start(&env, &tmux);
    d.wait_ready(&env, &tmux);
    wait_for(10, "every pane is listed", || {
        env.agents(&tmux)
            .filter(|v| v["panes"].as_array().is_some_and(|p| p.len() == 41))
    });
    let sock = socket_of(&env);
    let pid = d.child.id();
    let rss_before = rss_kib(pid);
    let mut stuck = UnixStream::connect(&sock).unwrap();
    stuck.write_all(b"{\"request\":\"subscribe\"}\n").unwrap();
    let prober = Prober::start(&sock);
    let mut peak = rss_before;
    tmux.type_line(&pane, "");
    wait_for(120, "the burst is over", || {
        peak = peak.max(rss_kib(pid));
        env.pane_row(&tmux, &pane)
            .filter(|r| r["fg_process"] == "sleep" && r["state"] == "idle")
    });
    let (answers, worst) = prober.finish();
    let rss_after = rss_kib(pid);
    peak = peak.max(rss_after);
    eprintln!(
        "a subscriber that never reads, {TRANSITIONS} transitions, 41 panes: RSS {rss_before} -> \
         {rss_after} KiB (peak {peak}), {answers} agents answered meanwhile, slowest {worst:?}"
    );
    assert!(
        answers > 0 && worst < PROMPT,
        "{answers} answers, slowest {worst:?}"
    );
    assert!(
        peak <= rss_before + 3 * 1024,
        "RSS grew from {rss_before} to {peak} KiB"
    );
    drop(stuck);
}

/// A client sends a 100 MB request line (no newline) as fast as it can, while reading what
/// comes back: it gets one error naming the cap, then the end of the stream; the daemon's
/// memory does not grow by more than 2 MiB (the line is never held: 64 KiB is), and `agents`
/// is answered meanwhile.
///
/// It found no defect: the 64 KiB cap of the framing already held.
#[test]
fn a_100_mb_request_line_is_refused_without_holding_it() {
    let (_tmux, _env, d, sock) = quiet_daemon();
    let pid = d.child.id();
    let rss_before = rss_kib(pid);
    let prober = Prober::start(&sock);
    let s = UnixStream::connect(&sock).unwrap();
    let mut writer = s.try_clone().unwrap();
    let sender = std::thread::spawn(move || {
        let chunk = vec![b'x'; 1 << 20];
        let mut sent = 0usize;
        while sent < 100 << 20 {
            match writer.write(&chunk) {
                Ok(n) => sent += n,
                Err(_) => break,
            }
        }
        sent
    });
    let mut reader = s;
    reader
        .set_read_timeout(Some(Duration::from_secs(30)))
        .unwrap();
    // The daemon closes with our bytes unread: after its answer, the end or a reset.
    let mut got = Vec::new();
    if let Err(e) = reader.read_to_end(&mut got) {
        assert_eq!(e.kind(), std::io::ErrorKind::ConnectionReset, "{e}");
    }
    let answer = String::from_utf8_lossy(&got).into_owned();
    let sent = sender.join().unwrap();
    let (answers, worst) = prober.finish();
    let rss_after = rss_kib(pid);
    eprintln!(
        "a 100 MB request line: {} KiB sent before the daemon closed, RSS {rss_before} -> \
         {rss_after} KiB, {answers} agents answered meanwhile, slowest {worst:?}",
        sent >> 10
    );
    let v: serde_json::Value = serde_json::from_str(answer.trim_end()).unwrap();
    assert_eq!(v["reply"], "error", "{answer}");
    assert_eq!(
        v["message"],
        "bad request: request line longer than the 65536-byte cap; closing the connection"
    );
    assert!(
        sent < 100 << 20,
        "the daemon stopped reading: {sent} bytes taken"
    );
    assert!(
        answers > 0 && worst < PROMPT,
        "{answers} answers, slowest {worst:?}"
    );
    assert!(
        rss_after <= rss_before + 2048,
        "RSS grew from {rss_before} to {rss_after} KiB"
    );
}

/// One connection sends 100 000 requests without reading a reply: `agents`, and `events`
/// over and over. The daemon reads on only as its answers are taken (a few requests in
/// flight, a few replies queued), so its memory stays within 4 MiB; `agents` on another
/// connection is answered meanwhile; and once the client reads, every reply it was owed
/// comes, with its request's id (the third stream asked for and later ones refused).
///
/// Regression: each request was read at once and its answer waited in a task of its own, and
/// every `events` added a subscriber: 51 825 requests in, RSS from 23 to 372 MiB, and `agents`
/// on another connection took up to 1.6 s.
#[test]
fn a_client_that_sends_without_reading_is_held_back() {
    let (_tmux, _env, d, sock) = quiet_daemon();
    let pid = d.child.id();
    let rss_before = rss_kib(pid);
    let prober = Prober::start(&sock);
    let s = UnixStream::connect(&sock).unwrap();
    let mut writer = s.try_clone().unwrap();
    writer
        .set_write_timeout(Some(Duration::from_secs(2)))
        .unwrap();
    let mut sent = 0u32;
    for i in 0..100_000u32 {
        let line = if i % 2 == 0 {
            format!("{{\"request\":\"agents\",\"id\":{i}}}\n")
        } else {
            format!("{{\"request\":\"events\",\"id\":{i}}}\n")
        };
        if writer.write_all(line.as_bytes()).is_err() {
            break; // The daemon stopped reading: held back.
        }
        sent += 1;
    }
    let rss_held = rss_kib(pid);
    let (answers, worst) = prober.finish();
    eprintln!(
        "a client sending without reading: {sent} requests taken before it was held back, RSS \
         {rss_before} -> {rss_held} KiB, {answers} agents answered meanwhile, slowest {worst:?}"
    );
    assert!(
        sent < 100_000,
        "the daemon read every request without answers being taken"
    );
    assert!(
        answers > 0 && worst < PROMPT,
        "{answers} answers, slowest {worst:?}"
    );
    assert!(
        rss_held <= rss_before + 4096,
        "RSS grew from {rss_before} to {rss_held} KiB"
    );
    // Now it reads: every `agents` is answered, the first two `events` open streams, every
    // later one is refused; each reply carries its request's id.
    let mut r = std::io::BufReader::new(s);
    r.get_mut()
        .set_read_timeout(Some(Duration::from_secs(10)))
        .unwrap();
    let mut seen = std::collections::HashSet::new();
    let expected = sent - 2;
    for _ in 0..expected {
        let mut line = String::new();
        std::io::BufRead::read_line(&mut r, &mut line).unwrap();
        let v: serde_json::Value = serde_json::from_str(&line).unwrap();
        let id = v["id"].as_u64().unwrap();
        match v["reply"].as_str() {
            Some("snapshot") => assert_eq!(id % 2, 0, "{line}"),
            Some("error") => {
                assert!(id % 2 == 1 && id > 3, "{line}");
                assert!(
                    v["message"]
                        .as_str()
                        .unwrap()
                        .contains("already has 2 streams open"),
                    "{line}"
                );
            }
            other => panic!("unexpected {other:?}: {line}"),
        }
        assert!(seen.insert(id), "answered twice: {line}");
    }
    assert_eq!(seen.len() as u32, expected);
    drop(d);
}

/// Regression: when `accept` failed (the daemon out of descriptors) the socket stopped
/// serving for good. The daemon is held to 40 descriptors and 60 clients connect and stay:
/// once they leave, `agents` is answered again.
#[test]
fn running_out_of_descriptors_does_not_stop_the_socket() {
    let (_tmux, _env, d, sock) = quiet_daemon();
    let pid = d.child.id();
    let limited = Command::new("prlimit")
        .args([&format!("--pid={pid}"), "--nofile=40:40"])
        .status()
        .unwrap();
    assert!(limited.success());
    let clients: Vec<UnixStream> = (0..60)
        .map(|_| UnixStream::connect(&sock).unwrap())
        .collect();
    wait_for(10, "the daemon's descriptors run out", || {
        d.log_text()
            .contains("the socket could not accept a connection")
            .then_some(())
    });
    drop(clients);
    let took = wait_for(10, "agents is answered again", || {
        std::panic::catch_unwind(|| time_agents(&sock)).ok()
    });
    assert!(took < PROMPT, "{took:?}");
}

/// More than [`MAX_CONNECTIONS`] clients at once: the one too many gets an error saying so
/// and is closed; those within the limit are served, and once some leave, new ones are.
#[test]
fn connections_beyond_the_limit_are_told_so() {
    let (_tmux, _env, _d, sock) = quiet_daemon();
    let open: Vec<UnixStream> = (0..512)
        .map(|_| UnixStream::connect(&sock).unwrap())
        .collect();
    let mut extra = UnixStream::connect(&sock).unwrap();
    extra
        .set_read_timeout(Some(Duration::from_secs(10)))
        .unwrap();
    let mut answer = String::new();
    extra.read_to_string(&mut answer).unwrap();
    let v: serde_json::Value = serde_json::from_str(answer.trim_end()).unwrap();
    assert_eq!(
        v["message"],
        "the daemon serves 512 connections at once; try again later"
    );
    drop(open);
    wait_for(10, "a new client is served", || {
        std::panic::catch_unwind(|| time_agents(&sock)).ok()
    });
}
