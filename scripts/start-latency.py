#!/usr/bin/env python3
"""How long after a command line's Enter the sidecar names the agent it starts: a private tmux
server (4 sessions of `bash`), a release sidecar watching it, and rounds of a new window in
which a fake Codex (`node …/node_modules/@openai/codex/bin/codex.js`, which prints one line and
waits) is started by typing its command line. The time runs from the `send-keys` of Enter to
the first `agents --json` whose row for the pane names the agent (polled every 10 ms). Each
round waits a random 0 – 1.2 s before Enter, so that no timer of the sidecar or of tmux keeps
the same phase from round to round. Not part of `cargo test`; needs node. Run by hand:

    cargo build --release && scripts/start-latency.py [--typed] [ROUNDS] [BINARY]

`--typed` types the line a character at a time (20 – 80 ms apart), as a person does; without
it the line comes in one `send-keys`. Everything runs under a scratch folder; the daemon and
the tmux server are stopped at the end.
"""
import json
import os
import random
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def main():
    args = [a for a in sys.argv[1:] if a != "--typed"]
    typed = "--typed" in sys.argv[1:]
    rounds = int(args[0]) if args else 12
    binary = args[1] if len(args) > 1 else os.path.join(ROOT, "target", "release", "thinkterm-sidecar")
    scratch = tempfile.mkdtemp(prefix="start-latency-")
    js = os.path.join(scratch, "lib/node_modules/@openai/codex/bin/codex.js")
    os.makedirs(os.path.dirname(js))
    with open(js, "w") as f:
        f.write("process.stdout.write('ready\\n'); setInterval(() => {}, 1000);\n")
    env = dict(os.environ, XDG_RUNTIME_DIR=scratch + "/run", XDG_CONFIG_HOME=scratch + "/config",
               XDG_STATE_HOME=scratch + "/state", THINKTERM_DISABLE_SOUND="1")
    env.pop("TMUX", None)
    for d in ("run", "config", "state"):
        os.makedirs(os.path.join(scratch, d))
    sock = "startlat%d" % os.getpid()

    def tmux(*a):
        return subprocess.run(["tmux", "-L", sock, "-f", "/dev/null", *a], capture_output=True,
                              text=True).stdout.strip()

    def row(pane):
        out = subprocess.run([binary, "-L", sock, "agents", "--json"], env=env,
                             capture_output=True, text=True).stdout
        try:
            v = json.loads(out)
        except ValueError:
            return None
        rows = v if isinstance(v, list) else v.get("panes", [])
        return next((r for r in rows if r.get("pane") == pane), None)

    shell = "bash --norc --noprofile"
    for i in range(4):
        tmux("new-session", "-d", "-s", "s%d" % i, "-x", "120", "-y", "40", shell)
    daemon = subprocess.Popen([binary, "-L", sock, "run"], env=env, stderr=subprocess.DEVNULL)
    times = []
    try:
        time.sleep(2)
        for r in range(rounds):
            pane = tmux("new-window", "-d", "-t", "s%d" % (r % 4), "-P", "-F", "#{pane_id}", shell)
            time.sleep(1.5)
            line = "node %s" % js
            if typed:
                for ch in line:
                    tmux("send-keys", "-t", pane, "-l", ch)
                    time.sleep(random.uniform(0.02, 0.08))
            else:
                tmux("send-keys", "-t", pane, "-l", line)
            time.sleep(random.uniform(0, 1.2))
            start = time.time()
            tmux("send-keys", "-t", pane, "Enter")
            took = None
            while time.time() - start < 15:
                x = row(pane)
                if x and x.get("agent") == "codex":
                    took = time.time() - start
                    break
                time.sleep(0.01)
            times.append(took)
            tmux("kill-pane", "-t", pane)
    finally:
        daemon.terminate()
        daemon.wait()
        tmux("kill-server")
    ok = sorted(t for t in times if t is not None)
    pick = lambda q: 1000 * ok[min(len(ok) - 1, int(q * len(ok)))]
    print("%s%s: %d rounds, %d not named within 15 s" % (
        binary, " (typed)" if typed else "", len(times), len(times) - len(ok)))
    if ok:
        print("Enter to the agent named: p50 %.0f ms, p95 %.0f ms, max %.0f ms" % (
            pick(0.5), pick(0.95), 1000 * ok[-1]))
    return 1 if len(ok) < len(times) else 0


if __name__ == "__main__":
    sys.exit(main())
