#!/usr/bin/env python3
"""The sidecar against real agents: runs ../shared/tools/agent-capture (real agents from npm
against its scripted model server on 127.0.0.1) on a private tmux server, with a release
sidecar watching that server, and compares the sidecar's state at each captured frame with the
frame's label. Not part of `cargo test` (the npm agents are not in CI); run it by hand:

    cargo build --release && scripts/live-check.py pi codex opencode

Agents come from /tmp/agents (EVALS_AGENTS_DIR; see agent-capture's README for the npm
install). A frame's moment is its `.json`'s write time (the runner writes it right after the
capture). Prints, per agent, every state change the sidecar reported and, per frame, the label
against the sidecar's state then; exits 1 if any frame differs. A frame taken after the moment
it names (agent-capture labels OpenCode's answered question `question-to-user-review`, blocked,
on an idle screen) shows as a difference: read the frame's `.txt` before blaming the rules.
Everything runs under a scratch folder; the daemon and tmux server are stopped by pid / by
`kill-server` at the end.
"""
import glob
import json
import os
import signal
import subprocess
import sys
import tempfile
import threading
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
BIN = os.environ.get("BIN", os.path.join(ROOT, "target", "release", "thinkterm-sidecar"))
CAPTURE = os.path.join(os.path.dirname(ROOT), "shared", "tools", "agent-capture")


def run(agent, scratch):
    sock = "live%d%s" % (os.getpid(), agent)
    home = os.path.join(scratch, agent)
    for d in ("run", "config", "state"):
        os.makedirs(os.path.join(home, d), exist_ok=True)
    env = dict(os.environ, XDG_RUNTIME_DIR=home + "/run", XDG_CONFIG_HOME=home + "/config",
               XDG_STATE_HOME=home + "/state", THINKTERM_DISABLE_SOUND="1", THINKTERM_LOG="warn")
    env.pop("TMUX", None)
    env.pop("DBUS_SESSION_BUS_ADDRESS", None)
    out = os.path.join(home, "cap")
    runner_env = dict(os.environ, EVALS_TMUX_SOCKET=sock,
                      EVALS_RUNTIME=os.path.join(scratch, "runtime"))
    runner = subprocess.Popen(
        [sys.executable, os.path.join(CAPTURE, "run_evals.py"), "--agents", agent, "--sizes",
         "120x40", "--out", out, "--only", "main", "--port", str(18000 + os.getpid() % 1000)],
        env=runner_env, stdout=open(home + "/runner.log", "w"), stderr=subprocess.STDOUT)
    while runner.poll() is None:
        if subprocess.run(["tmux", "-L", sock, "has-session"], capture_output=True).returncode == 0:
            break
        time.sleep(0.05)
    daemon = subprocess.Popen([BIN, "-L", sock, "run"], env=env, stdout=subprocess.DEVNULL,
                              stderr=open(home + "/daemon.log", "w"))
    events = []

    def read():
        while runner.poll() is None:
            p = subprocess.Popen([BIN, "-L", sock, "events", "--json"], env=env,
                                 stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
            for line in p.stdout:
                try:
                    events.append(json.loads(line))
                except ValueError:
                    pass
            time.sleep(0.2)

    threading.Thread(target=read, daemon=True).start()
    runner.wait()
    time.sleep(1)
    daemon.send_signal(signal.SIGTERM)
    try:
        daemon.wait(timeout=5)
    except subprocess.TimeoutExpired:
        daemon.kill()
    subprocess.run(["tmux", "-L", sock, "kill-server"], capture_output=True)

    frames = []
    for f in sorted(glob.glob(out + "/*/*/*.json")):
        try:
            v = json.load(open(f))
        except ValueError:
            continue
        if v.get("raw_file") == "raw-main-120x40.bin" and "state" in v:
            frames.append((os.path.getmtime(f) * 1000, os.path.basename(f), v["state"]))
    changes = [(e["time_ms"], e["pane"], e.get("new"), e.get("rule") or e.get("source"))
               for e in events if e.get("agent")]
    t0 = frames[0][0] if frames else 0
    print("== %s: %d frames, %d state changes reported" % (agent, len(frames), len(changes)))
    for t, pane, new, why in changes:
        print("   %8.3f s  %s -> %s (%s)" % ((t - t0) / 1000, pane, new, why))
    right = 0
    for t, name, state in frames:
        now = None
        for et, _, new, _ in changes:
            if et <= t:
                now = new
        right += now == state
        print("   %8.3f s  %-24s label %-8s sidecar %-8s %s" % (
            (t - t0) / 1000, name, state, now, "" if now == state else "DIFFERS"))
    # The runner kills its tmux server before the daemon is stopped: that one is expected.
    warned = [l for l in open(home + "/daemon.log")
              if (" WARN " in l or " ERROR " in l) and "went away" not in l]
    print("   %d of %d frames right; the daemon logged %d warning(s)" % (
        right, len(frames), len(warned)))
    for l in warned[:3]:
        print("     " + l.rstrip())
    return right == len(frames) and frames


def main():
    agents = sys.argv[1:] or ["pi", "codex", "opencode"]
    for f in (BIN, os.path.join(CAPTURE, "run_evals.py")):
        if not os.path.exists(f):
            sys.exit("missing: %s" % f)
    scratch = tempfile.mkdtemp(prefix="live-check-")
    ok = all([run(a, scratch) for a in agents])
    print("scratch (captures, logs): %s" % scratch)
    sys.exit(0 if ok else 1)


if __name__ == "__main__":
    main()
