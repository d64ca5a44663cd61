#!/usr/bin/env bash
# What an observer makes the tmux server do, measured on twin servers: two held loads of the
# load benchmark with the same seed run side by side, so that the agents' replays, whose phases
# move tmux's own CPU by half a per cent of a core from one 20 s window to the next, move both
# servers alike. Observer X runs on one twin and Y (nothing by default) on the other; halfway
# they swap, which takes out what differs between the twins themselves. Each window gives the
# difference of the two servers' CPU in the same 20 s, and the estimate is X's added CPU minus
# Y's, with its standard error and 95 % interval. With --halves 4 or more, X changes sides in
# the order b a a b b a …, and the standard errors (tmux's and the observers' own CPU) come from
# the means of the parts: they then count a drift of the twins' own difference during the run,
# which one swap cannot tell from X (measured: up to 0.15 % of a core from one part to the
# next, where the windows of one swap gave a standard error of 0.03).
#
#   scripts/twin-share.sh [--windows N] [--window SECONDS] [--halves N] [--seed N] [--load "ARGS"] X [Y]
#
# X and Y are shell commands; `{S}` in them is the twin's server name (`tmux -L {S}`). Each
# runs in a process group of its own (killed with it at the end of its half) and in private
# XDG folders, with THINKTERM_DISABLE_SOUND=1; the sidecar's settings can come from the
# environment (`THINKTERM_SPINNER_INTERVAL_MS=200 target/release/thinkterm-sidecar -L {S} run`).
# `$LOAD_BIN` in them is the load benchmark's binary, whose `--poll` is the baseline poller
# (`'$LOAD_BIN --poll {S} $XDG_STATE_HOME/poll.log'`). Commands start in the project's root.
# --load: the load's arguments (default `--no-poller --no-stream`: the 50-pane load's five
# agents and 45 shells, and a person's client; `--scale` for the scale load).
# --windows: windows of --window seconds in each half (default 6 of 20 s).
# --halves: how many parts of --windows windows each, X changing sides between them (even;
# default 2: one swap).
#
# Example, the sidecar against nothing:
#   scripts/twin-share.sh 'target/release/thinkterm-sidecar -L {S} run'
set -uo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
windows=6
window=20
halves=2
seed=$(date +%s)
load_args="--no-poller --no-stream"
while [ $# -gt 0 ]; do
  case $1 in
    --windows) windows=$2; shift ;;
    --window) window=$2; shift ;;
    --halves) halves=$2; shift ;;
    --seed) seed=$2; shift ;;
    --load) load_args=$2; shift ;;
    -h|--help) sed -n '2,30p' "$0"; exit 0 ;;
    *) break ;;
  esac
  shift
done
[ $# -ge 1 ] || { echo "usage: $0 [--windows N] [--window S] [--seed N] [--load ARGS] X [Y]" >&2; exit 2; }
x_cmd=$1
y_cmd=${2:-}
[ "$windows" -ge 2 ] || { echo "--windows: at least 2" >&2; exit 2; }
[ "$halves" -ge 2 ] && [ $((halves % 2)) -eq 0 ] || { echo "--halves: even, at least 2" >&2; exit 2; }

cd "$root" || exit 1
load_bin=$(cargo bench --bench load --no-run 2>&1 | sed -n 's/.*Executable benches\/load.rs (\(.*\))/\1/p' | tail -1)
[ -x "$load_bin" ] || { echo "could not build the load benchmark" >&2; exit 1; }

scratch=$(mktemp -d)
load_pids=()
# The observers' process groups of the half that runs.
cleanup() {
  for g in $(cat "$scratch/groups" 2>/dev/null); do kill -- "-$g" 2>/dev/null; done
  for p in "${load_pids[@]}"; do kill "$p" 2>/dev/null; done
  for p in "${load_pids[@]}"; do wait "$p" 2>/dev/null; done
  rm -rf "$scratch"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

# Two held loads with the same seed; each prints its server's name, then `load: holding`.
servers=()
for twin in a b; do
  # shellcheck disable=SC2086
  "$load_bin" --hold $load_args --seed "$seed" > "$scratch/load-$twin.log" 2>&1 &
  load_pids+=($!)
done
for twin in a b; do
  for _ in $(seq 1 240); do
    grep -q '^load: holding' "$scratch/load-$twin.log" && break
    sleep 0.5
  done
  grep -q '^load: holding' "$scratch/load-$twin.log" || { echo "load $twin did not start:" >&2; cat "$scratch/load-$twin.log" >&2; exit 1; }
  servers+=("$(sed -n 's/.*tmux -L \(ttload[0-9]*\) .*/\1/p' "$scratch/load-$twin.log" | head -1)")
done
pid_a=$(tmux -L "${servers[0]}" display -p '#{pid}')
pid_b=$(tmux -L "${servers[1]}" display -p '#{pid}')
echo "twins: tmux -L ${servers[0]} (pid $pid_a) and tmux -L ${servers[1]} (pid $pid_b), seed $seed, load: $load_args"
head -1 "$scratch/load-a.log"

# Starts a command for a twin in its own process group and private folders; prints the group.
start() {
  local cmd=$1 server=$2 dir
  dir=$(mktemp -d "$scratch/obs.XXXX")
  mkdir -p "$dir/run" "$dir/config" "$dir/state"
  chmod 700 "$dir/run"
  (XDG_RUNTIME_DIR=$dir/run XDG_CONFIG_HOME=$dir/config XDG_STATE_HOME=$dir/state \
    THINKTERM_DISABLE_SOUND=1 LOAD_BIN=$load_bin exec setsid bash -c "${cmd//\{S\}/$server}" \
    > "$dir/log" 2>&1 < /dev/null) &
  echo $!
}
tick_ns=$((1000000000 / $(getconf CLK_TCK)))
# CPU (ns) of tmux server `$1`: its one thread, and the children it reaped (the relays
# `pipe-pane` starts for the sidecar, an `sh` and the relay each), in clock ticks. Before the
# twenty-fifth session the children were left out, which left out about 3 ms for each pipe the
# sidecar opened again (a flooding pane's samples: about 0.04 % of a core at the 50-pane load).
cpu() {
  echo $(( $(awk '{print $1}' "/proc/$1/schedstat") + $(sed 's/.*) //' "/proc/$1/stat" | awk -v n="$tick_ns" '{printf "%.0f\n", ($14 + $15) * n}') ))
}
# CPU (ns) of the processes in session `$1`: their threads' run time, and the children they
# have waited for (a poller's short-lived `tmux` clients), in clock ticks.
own() {
  local total=0 p t
  for p in $(ps -o pid= -s "$1" 2>/dev/null); do
    for t in /proc/"$p"/task/*/schedstat; do
      [ -r "$t" ] && total=$((total + $(awk '{print $1}' "$t" 2>/dev/null || echo 0)))
    done
    # Fields after the command's name: cutime and cstime are the 14th and 15th.
    total=$((total + $(sed 's/.*) //' "/proc/$p/stat" 2>/dev/null | awk -v n="$tick_ns" '{printf "%.0f\n", ($14 + $15) * n} END {if (!NR) print 0}')))
  done
  echo $total
}

# One half: X on twin `$1` (a or b), Y on the other, the `$2`-th half. Prints a line per window:
# `X on h: … b-a … X own … Y own … half k` in % of a core (diff = b - a).
half() {
  local x_on=$1 k=$2 gx gy=
  if [ "$x_on" = b ]; then
    gx=$(start "$x_cmd" "${servers[1]}"); [ -n "$y_cmd" ] && gy=$(start "$y_cmd" "${servers[0]}")
  else
    gx=$(start "$x_cmd" "${servers[0]}"); [ -n "$y_cmd" ] && gy=$(start "$y_cmd" "${servers[1]}")
  fi
  echo "$gx" $gy > "$scratch/groups"
  sleep 8
  for _ in $(seq 1 "$windows"); do
    local a0 b0 x0 y0=0 t0 a1 b1 x1 y1=0 t1
    a0=$(cpu "$pid_a"); b0=$(cpu "$pid_b"); x0=$(own "$gx"); [ -n "$gy" ] && y0=$(own "$gy"); t0=$(date +%s%N)
    sleep "$window"
    a1=$(cpu "$pid_a"); b1=$(cpu "$pid_b"); x1=$(own "$gx"); [ -n "$gy" ] && y1=$(own "$gy"); t1=$(date +%s%N)
    awk -v h="$x_on" -v k="$k" -v a=$((a1 - a0)) -v b=$((b1 - b0)) -v x=$((x1 - x0)) -v y=$((y1 - y0)) -v t=$((t1 - t0)) \
      'BEGIN { printf "X on %s: tmux a %.3f %%  b %.3f %%  b-a %+.3f %%  X own %.3f %%  Y own %.3f %%  half %d\n", h, 100*a/t, 100*b/t, 100*(b-a)/t, 100*x/t, 100*y/t, k }' \
      | tee -a "$scratch/windows.txt"
  done
  for g in $gx $gy; do kill -- "-$g" 2>/dev/null; done
  : > "$scratch/groups"
  sleep 3
}

# Halves in the order b a a b b a a b …: a steady drift of the twins' difference cancels too.
for k in $(seq 1 "$halves"); do
  case $(( (k - 1) % 4 )) in 0|3) half b "$k" ;; *) half a "$k" ;; esac
done
# X - Y = (mean(b-a | X on b) - mean(b-a | X on a)) / 2; the twins' own difference cancels.
awk '
  # Student t, 97.5 % quantile, exact to 20 degrees of freedom; above, the 20th (a little wide).
  function t95(df,  q) {
    split("12.71 4.30 3.18 2.78 2.57 2.45 2.36 2.31 2.26 2.23 2.20 2.18 2.16 2.14 2.13 2.12 2.11 2.10 2.09 2.09", q, " ")
    return q[df > 20 ? 20 : df]
  }
  { h = ($3 == "b:") ? 1 : 2; d = $12 + 0; n[h]++; s[h] += d; ss[h] += d * d; own[h] += $16
    hs[$23] += d; hn[$23]++; hside[$23] = h; ho[$23] += $16 - $20
    o = $16 - $20; od += o; odd += o * o; yown += $20 }
  END {
    for (h = 1; h <= 2; h++) { m[h] = s[h] / n[h]; v[h] = (ss[h] - s[h] * s[h] / n[h]) / (n[h] - 1) }
    est = (m[1] - m[2]) / 2; se = sqrt(v[1] / n[1] + v[2] / n[2]) / 2; hw = t95(n[1] + n[2] - 2) * se
    nh = 0; for (k in hn) nh++
    if (nh >= 4) {
      # The means of the halves as the observations: their spread holds the drift of the twins.
      for (k in hn) { q = hside[k]; mm = hs[k] / hn[k]; c[q]++; cs[q] += mm; css[q] += mm * mm }
      for (q = 1; q <= 2; q++) { hm[q] = cs[q] / c[q]; hv[q] = (css[q] - cs[q] * cs[q] / c[q]) / (c[q] - 1) }
      est = (hm[1] - hm[2]) / 2; se = sqrt(hv[1] / c[1] + hv[2] / c[2]) / 2; hw = t95(nh - 2) * se
      printf "(from %d halves: the standard error counts the drift of the twins between halves)\n", nh
    }
    printf "X minus Y, tmux added: %+.3f %% of a core, se %.3f, 95 %% interval %+.3f .. %+.3f (twins differ by %+.3f)\n", est, se, est - hw, est + hw, (m[1] + m[2]) / 2
    k = n[1] + n[2]
    printf "X own CPU: %.3f %% of a core\n", (own[1] + own[2]) / k
    if (yown > 0) {
      om = od / k; ose = sqrt((odd - od * od / k) / (k - 1) / k); odf = k - 1
      if (nh >= 4) {
        # As for tmux: the means of the halves as the observations (the twin an observer
        # runs on moves its own CPU too).
        for (h2 in hn) { mo = ho[h2] / hn[h2]; ocs += mo; ocss += mo * mo }
        om = ocs / nh; ose = sqrt((ocss - ocs * ocs / nh) / (nh - 1) / nh); odf = nh - 1
      }
      printf "Y own CPU: %.3f %% of a core; X minus Y, own: %+.3f %%, se %.3f, 95 %% interval %+.3f .. %+.3f\n", yown / k, om, ose, om - t95(odf) * ose, om + t95(odf) * ose
      printf "X minus Y, whole: %+.3f %% of a core\n", est + om
    }
  }' "$scratch/windows.txt"
