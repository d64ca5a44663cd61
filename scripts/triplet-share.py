#!/usr/bin/env python3
"""Two observers' whole cost, and their ratio, from one run: three held loads of the load
benchmark with the same seed run side by side (triplet servers), observer X on one, observer Y
on another, nothing on the third. Between parts of a few 20 s windows the three change places,
through all six ways of seating them (the second round in the reverse order), so that what
differs between the three servers, and a steady drift of it, cancels. Every window reads the
three servers' CPU in the same 20 s, so the replays' phases, and how fast the machine runs that
hour, move all three alike: the ratio of X's cost to Y's is taken within one run, where ratios
of separate runs carried the difference of their hours (issue 18, twenty-fourth session).

    scripts/triplet-share.py [--windows N] [--window S] [--rounds N] [--seed N] [--load ARGS] X Y

X and Y are shell commands, as for `scripts/twin-share.sh`: `{S}` is the server's name
(`tmux -L {S}`), `$LOAD_BIN` the load benchmark's binary (`$LOAD_BIN --poll {S}
$XDG_STATE_HOME/poll.log` is the baseline poller); each runs in a process group of its own (killed
at the end of its part), in private XDG folders, with THINKTERM_DISABLE_SOUND=1.
--load: the load's arguments (default `--no-poller`: the 50-pane load with its stream).
--windows: windows in each part (default 2); --rounds: rounds of six parts (default 2).
--report FILE: the estimate again from the printed windows of an earlier run.

tmux's CPU is the server's thread and the children it reaped (the relays `pipe-pane` starts
for the sidecar). The estimate (`estimate` below): in each part, tmux's CPU on an observer's
server less that on the server with nothing, fitted by least squares to the observer's term
plus what differs between the two servers; standard errors from the parts' residuals. Own CPU:
the observer's processes and the children they waited for, with standard errors from the
parts' means. The whole cost is the sum, and the ratio is Y's whole over X's, with an interval
of two standard errors from both.

Example, the sidecar against the poller:
    scripts/triplet-share.py 'target/release/thinkterm-sidecar -L {S} run' \\
        '$LOAD_BIN --poll {S} $XDG_STATE_HOME/poll.log'
"""
import argparse
import glob
import math
import os
import re
import signal
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
TICK_NS = 1_000_000_000 // os.sysconf("SC_CLK_TCK")
# The six seatings of (X, Y, nothing) on servers (a, b, c): each server holds each observer
# twice in a round, once in each half.
SEATINGS = [("X", "Y", "-"), ("Y", "-", "X"), ("-", "X", "Y"),
            ("X", "-", "Y"), ("-", "Y", "X"), ("Y", "X", "-")]
# Student t, 97.5 % quantile, to 30 degrees of freedom; above, the 30th (a little wide).
T95 = [12.71, 4.30, 3.18, 2.78, 2.57, 2.45, 2.36, 2.31, 2.26, 2.23, 2.20, 2.18, 2.16, 2.14,
       2.13, 2.12, 2.11, 2.10, 2.09, 2.09, 2.08, 2.07, 2.07, 2.06, 2.06, 2.06, 2.05, 2.05, 2.05,
       2.04]


def t95(df):
    return T95[min(max(df, 1), 30) - 1]


def load_binary():
    out = subprocess.run(["cargo", "bench", "--bench", "load", "--no-run"], cwd=ROOT,
                         capture_output=True, text=True).stderr
    found = re.findall(r"Executable benches/load\.rs \((.*)\)", out)
    if not found or not os.access(found[-1], os.X_OK):
        sys.exit("could not build the load benchmark:\n" + out)
    return found[-1]


def server_cpu(pid):
    """The tmux server's run time in ns: its one thread, and the children it reaped (the relays
    `pipe-pane` starts for the sidecar), in clock ticks."""
    with open("/proc/%d/schedstat" % pid) as f:
        ns = int(f.read().split()[0])
    with open("/proc/%d/stat" % pid) as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return ns + (int(fields[13]) + int(fields[14])) * TICK_NS


def group_cpu(sid):
    """Run time (ns) of the processes of session `sid`, with the children they waited for."""
    total = 0
    for stat in glob.glob("/proc/[0-9]*/stat"):
        try:
            with open(stat) as f:
                fields = f.read().rsplit(")", 1)[1].split()
            if int(fields[3]) != sid:  # the session id is the 6th field of stat
                continue
            pid = stat.split("/")[2]
            for t in glob.glob("/proc/%s/task/*/schedstat" % pid):
                with open(t) as f:
                    total += int(f.read().split()[0])
            total += (int(fields[13]) + int(fields[14])) * TICK_NS  # cutime, cstime
        except (OSError, IndexError, ValueError):
            continue
    return total


class Triplet:
    def __init__(self, args, scratch):
        self.args = args
        self.scratch = scratch
        self.loads = []
        self.groups = []
        self.load_bin = load_binary()

    def start_loads(self):
        logs = []
        for twin in "abc":
            log = os.path.join(self.scratch, "load-%s.log" % twin)
            with open(log, "w") as out:
                self.loads.append(subprocess.Popen(
                    [self.load_bin, "--hold", *self.args.load.split(), "--seed",
                     str(self.args.seed)], stdout=out, stderr=subprocess.STDOUT, cwd=ROOT))
            logs.append(log)
        self.servers, self.pids = [], []
        for log in logs:
            deadline = time.monotonic() + 120
            while "load: holding" not in open(log).read():
                if time.monotonic() > deadline:
                    sys.exit("load did not start:\n" + open(log).read())
                time.sleep(0.5)
            name = re.search(r"tmux -L (ttload\d+) ", open(log).read()).group(1)
            pid = subprocess.run(["tmux", "-L", name, "display", "-p", "#{pid}"],
                                 capture_output=True, text=True, check=True).stdout.strip()
            self.servers.append(name)
            self.pids.append(int(pid))
        print("triplets: %s, seed %d, load: %s" % (
            ", ".join("tmux -L %s (pid %d)" % sp for sp in zip(self.servers, self.pids)),
            self.args.seed, self.args.load))
        print(open(logs[0]).readline().rstrip(), flush=True)

    def start(self, cmd, server):
        home = tempfile.mkdtemp(prefix="obs.", dir=self.scratch)
        for d in ("run", "config", "state"):
            os.makedirs(os.path.join(home, d), mode=0o700)
        env = dict(os.environ, XDG_RUNTIME_DIR=home + "/run", XDG_CONFIG_HOME=home + "/config",
                   XDG_STATE_HOME=home + "/state", THINKTERM_DISABLE_SOUND="1",
                   LOAD_BIN=self.load_bin)
        env.pop("TMUX", None)
        with open(os.path.join(home, "log"), "w") as log:
            p = subprocess.Popen(["bash", "-c", cmd.replace("{S}", server)], cwd=ROOT, env=env,
                                 stdout=log, stderr=subprocess.STDOUT,
                                 stdin=subprocess.DEVNULL, start_new_session=True)
        self.groups.append(p.pid)
        return p.pid

    def stop_groups(self):
        for g in self.groups:
            try:
                os.killpg(g, signal.SIGTERM)
            except ProcessLookupError:
                pass
        self.groups = []

    def part(self, k, seating, windows):
        """One part: observers seated as `seating` (one of X, Y, - per server)."""
        cmds = {"X": self.args.x, "Y": self.args.y}
        sids = {who: self.start(cmds[who], self.servers[i])
                for i, who in enumerate(seating) if who in cmds}
        time.sleep(8)
        rows = []
        for _ in range(windows):
            t0 = time.monotonic_ns()
            s0 = [server_cpu(p) for p in self.pids]
            o0 = {who: group_cpu(sid) for who, sid in sids.items()}
            time.sleep(self.args.window)
            s1 = [server_cpu(p) for p in self.pids]
            o1 = {who: group_cpu(sid) for who, sid in sids.items()}
            t = time.monotonic_ns() - t0
            tmux = [100 * (b - a) / t for a, b in zip(s0, s1)]
            own = {who: 100 * (o1[who] - o0[who]) / t for who in sids}
            rows.append((tmux, own))
            print("part %2d: %s  tmux %s  X own %.3f %%  Y own %.3f %%" % (
                k, " ".join("%s=%s" % (s, w) for s, w in zip("abc", seating)),
                "  ".join("%s %.3f %%" % (s, c) for s, c in zip("abc", tmux)),
                own["X"], own["Y"]), flush=True)
        self.stop_groups()
        time.sleep(3)
        return rows

    def stop(self):
        self.stop_groups()
        for p in self.loads:
            p.terminate()
        for p in self.loads:
            try:
                p.wait(timeout=30)
            except subprocess.TimeoutExpired:
                p.kill()


def solve(a, b):
    """Solves a x = b (a small, symmetric, positive definite) by Gauss-Jordan; returns x and
    the inverse of a."""
    n = len(a)
    m = [row[:] + [b[i]] + [1.0 if j == i else 0.0 for j in range(n)] for i, row in enumerate(a)]
    for c in range(n):
        p = max(range(c, n), key=lambda r: abs(m[r][c]))
        m[c], m[p] = m[p], m[c]
        piv = m[c][c]
        m[c] = [v / piv for v in m[c]]
        for r in range(n):
            if r != c and m[r][c] != 0.0:
                f = m[r][c]
                m[r] = [v - f * w for v, w in zip(m[r], m[c])]
    return [row[n] for row in m], [row[n + 1:] for row in m]


def estimate(parts, who):
    """tmux's CPU that observer `who` adds, with its standard error and degrees of freedom:
    each part's mean of (tmux on `who`'s server) - (tmux on the server with nothing), fitted by
    least squares to the observer's term plus the difference of the two servers (a term for b
    and one for c, against a). Taking the difference in each part takes out what all three
    servers share in it (the replays' phase, the machine's speed); each observer gets its own
    residuals, so the poller's spread (its server's CPU moves with the machine's speed) does
    not widen the sidecar's interval."""
    xs, ys = [], []
    for seating, rows in parts:
        on, bare = seating.index(who), seating.index("-")
        ys.append(sum(r[0][on] - r[0][bare] for r in rows) / len(rows))
        xs.append([1.0] + [(1.0 if on == s else 0.0) - (1.0 if bare == s else 0.0)
                           for s in (1, 2)])
    k = len(xs[0])
    ata = [[sum(x[i] * x[j] for x in xs) for j in range(k)] for i in range(k)]
    aty = [sum(x[i] * y for x, y in zip(xs, ys)) for i in range(k)]
    beta, inv = solve(ata, aty)
    rss = sum((y - sum(b * v for b, v in zip(beta, x))) ** 2 for x, y in zip(xs, ys))
    df = len(parts) - k
    return beta[0], math.sqrt(rss / df * inv[0][0]), df


def own_cpu(parts, who):
    means = [sum(r[1][who] for r in rows) / len(rows) for _, rows in parts]
    n = len(means)
    m = sum(means) / n
    se = math.sqrt(sum((v - m) ** 2 for v in means) / (n - 1) / n)
    return m, se, n - 1


def report(parts):
    bare = [r[0][s] for seating, rows in parts for r in rows for s in range(3)
            if seating[s] == "-"]
    print("(%d parts; each observer's tmux figure from its parts' residuals)" % len(parts))
    print("tmux on the server with nothing: %.3f %% of a core" % (sum(bare) / len(bare)))
    whole = {}
    for who in "XY":
        t, tse, df = estimate(parts, who)
        o, ose, odf = own_cpu(parts, who)
        w, wse = t + o, math.hypot(tse, ose)
        whole[who] = (w, wse)
        print("%s: own %.3f %% (se %.3f), tmux added %+.3f %% (se %.3f, %d df, 95 %% %+.3f .. "
              "%+.3f), whole %.3f %% (se %.3f)" % (who, o, ose, t, tse, df, t - t95(df) * tse,
                                                 t + t95(df) * tse, w, wse))
    (x, xse), (y, yse) = whole["X"], whole["Y"]
    if x > 0 and y > 0:
        r = y / x
        rel = math.hypot(xse / x, yse / y)
        lo, hi = r / math.exp(2 * rel), r * math.exp(2 * rel)
        print("Y's whole over X's: %.1f (two standard errors: %.1f .. %.1f); X is 1/%.0f of Y" % (
            r, lo, hi, r))


def parse(path):
    """The parts of an earlier run, from its printed windows."""
    parts, last = [], None
    line_re = re.compile(r"part\s+(\d+): a=(\S) b=(\S) c=(\S)\s+tmux a ([-\d.]+) %\s+b ([-\d.]+) %"
                         r"\s+c ([-\d.]+) %\s+X own ([-\d.]+) %\s+Y own ([-\d.]+) %")
    for line in open(path):
        m = line_re.match(line)
        if not m:
            continue
        g = m.groups()
        if g[0] != last:
            parts.append((tuple(g[1:4]), []))
            last = g[0]
        parts[-1][1].append(([float(v) for v in g[4:7]], {"X": float(g[7]), "Y": float(g[8])}))
    return parts


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--windows", type=int, default=2)
    p.add_argument("--window", type=float, default=20)
    p.add_argument("--rounds", type=int, default=2)
    p.add_argument("--seed", type=int, default=int(time.time()))
    p.add_argument("--load", default="--no-poller")
    p.add_argument("--report", metavar="FILE",
                   help="only the estimate, from the printed windows of an earlier run")
    p.add_argument("x", nargs="?")
    p.add_argument("y", nargs="?")
    args = p.parse_args()
    if args.report:
        report(parse(args.report))
        return
    if not (args.x and args.y):
        p.error("X and Y are needed")
    if args.windows < 1 or args.rounds < 1:
        sys.exit("--windows and --rounds: at least 1")
    scratch = tempfile.mkdtemp(prefix="triplet.")
    t = Triplet(args, scratch)
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(130))
    parts = []
    try:
        t.start_loads()
        k = 0
        for rnd in range(args.rounds):
            order = SEATINGS if rnd % 2 == 0 else SEATINGS[::-1]
            for seating in order:
                k += 1
                parts.append((seating, t.part(k, seating, args.windows)))
    finally:
        t.stop()
        subprocess.run(["rm", "-rf", scratch])
    report(parts)


if __name__ == "__main__":
    main()
