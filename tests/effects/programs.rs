//! Programs' own notifications on real tmux (issue 16): OSC 9, OSC 777 and a chunked OSC 99
//! printed in a pane each give one Notify on the private bus, escaped; a click focuses that
//! pane; a pane in front shows nothing unless it asks with `o=always`; a program printing a
//! thousand in a loop gets at most the rate limit.

use std::path::Path;
use std::time::Instant;

use super::support::desktop::{hint_str, Server, PATH};
use super::support::{self, script, wait_for};
use super::{daemon_rig, wait_until, wait_until_for, DaemonRig, DEADLINE};

/// A pane program that copies each file named on its stdin to the terminal as it is.
fn printer(env: &support::Env) -> String {
    let path = env.path("bin/printer");
    script(
        &path,
        "#!/bin/bash\nwhile IFS= read -r f; do cat \"$f\"; done\n",
    );
    path.display().to_string()
}

/// Writes `bytes` to a file and has the printer in `pane` print it.
fn print(tmux: &support::Tmux, dir: &Path, pane: &str, name: &str, bytes: &[u8]) {
    let f = dir.join(name);
    std::fs::write(&f, bytes).unwrap();
    tmux.type_line(pane, &f.display().to_string());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn programs_own_notifications_are_shown_escaped_focus_their_pane_and_are_rate_limited() {
    let DaemonRig {
        server,
        calls,
        mut tmux,
        env,
        pane: _agent,
        _bus,
        ..
    } = daemon_rig().await;
    let printer = printer(&env);
    let dir = env.path("seq");
    std::fs::create_dir_all(&dir).unwrap();
    // P and R print in session proj; Q is in the window the person looks at.
    let p = tmux.new_window("proj", Some(&printer));
    let r = tmux.new_window("proj", Some(&printer));
    let q = tmux.new_session("elsewhere", Some(&printer));
    let _client = support::Client::attach(&tmux, "elsewhere", 120, 40);
    let person = |t: &support::Tmux| {
        t.cmd(&[
            "list-clients",
            "-F",
            "#{client_control_mode} #{pane_id} #{session_name}",
        ])
        .lines()
        .find(|l| l.starts_with("0 "))
        .map(|l| l[2..].to_string())
    };
    wait_for(10, "the person's client", || {
        person(&tmux).filter(|s| s.ends_with("elsewhere"))
    });
    let d = support::Daemon::start(&env, &tmux);
    d.wait_ready(&env, &tmux);

    // In front: not shown, unless the program asks with o=always (kitty's "always").
    print(&tmux, &dir, &q, "hidden", b"\x1b]9;in front, not shown\x07");
    print(
        &tmux,
        &dir,
        &q,
        "always",
        b"\x1b]99;i=a:o=always;shown anyway\x1b\\",
    );
    assert!(wait_until(|| calls.lock().unwrap().len() == 1).await);
    assert!(
        calls.lock().unwrap()[0].summary.ends_with(": shown anyway"),
        "{:?}",
        calls.lock().unwrap()[0].summary
    );

    // OSC 9 (markup escaped), OSC 777, and OSC 99 in three chunks, the body base64.
    print(
        &tmux,
        &dir,
        &p,
        "osc9",
        b"\x1b]9;Build <b>finished</b> & done\x1b\\",
    );
    assert!(wait_until(|| calls.lock().unwrap().len() == 2).await);
    print(
        &tmux,
        &dir,
        &p,
        "osc777",
        b"\x1b]777;notify;Deploy;staging is up\x07",
    );
    assert!(wait_until(|| calls.lock().unwrap().len() == 3).await);
    print(&tmux, &dir, &p, "k1", b"\x1b]99;i=t:d=0;Tes\x1b\\");
    print(&tmux, &dir, &p, "k2", b"\x1b]99;i=t:d=0;ts\x1b\\");
    print(
        &tmux,
        &dir,
        &p,
        "k3",
        b"\x1b]99;i=t:p=body:e=1;YWxsIDEyIHBhc3NlZA==\x1b\\",
    );
    assert!(wait_until(|| calls.lock().unwrap().len() == 4).await);
    {
        let c = calls.lock().unwrap();
        assert!(c[1].summary.starts_with("proj:"), "{}", c[1].summary);
        assert!(c[1].summary.ends_with(": message"), "{}", c[1].summary);
        assert_eq!(c[1].body, "Build &lt;b&gt;finished&lt;/b&gt; &amp; done");
        assert!(c[2].summary.ends_with(": Deploy"), "{}", c[2].summary);
        assert_eq!(c[2].body, "staging is up");
        assert!(c[3].summary.ends_with(": Tests"), "{}", c[3].summary);
        assert_eq!(c[3].body, "all 12 passed");
        for call in &c[1..] {
            assert_eq!(
                hint_str(call, "x-thinkterm-pane").as_deref(),
                Some(p.as_str())
            );
        }
    }

    // A click on the last one brings P to the person's client, switching its session.
    let iface = server
        .object_server()
        .interface::<_, Server>(PATH)
        .await
        .expect("iface");
    Server::action_invoked(iface.signal_emitter(), 4, "default")
        .await
        .expect("emit");
    wait_for(10, "the client to show P", || {
        person(&tmux).filter(|s| *s == format!("{p} proj"))
    });

    // R, in the background, prints a thousand in a loop: the burst, then one per interval.
    let done = env.path("loop-done");
    let lp = env.path("bin/loop");
    script(
        &lp,
        &format!(
            "#!/bin/bash\nfor i in $(seq 1000); do printf '\\033]9;loop %d\\033\\\\' $i; done\ntouch '{}'\n",
            done.display()
        ),
    );
    let started = Instant::now();
    let loop_file = lp.display().to_string();
    tmux.cmd(&["respawn-pane", "-k", "-t", &r, &loop_file]);
    wait_for(20, "the loop to end", || done.exists().then_some(()));
    let looped = |c: &[super::Call]| c.iter().filter(|c| c.body.starts_with("loop ")).count();
    assert!(
        wait_until_for(DEADLINE, || looped(&calls.lock().unwrap()) >= 3).await,
        "the burst arrives"
    );
    let log = wait_for(10, "the drop to be logged", || {
        let l = d.log_text();
        l.contains("dropping the notifications").then_some(l)
    });
    assert_eq!(
        log.matches("dropping the notifications").count(),
        1,
        "{log}"
    );
    let shown = looped(&calls.lock().unwrap());
    let allowed = 3 + (started.elapsed().as_secs() / 10) as usize;
    assert!(
        (3..=allowed).contains(&shown),
        "{shown} shown of 1000 in {:?}",
        started.elapsed()
    );
}
