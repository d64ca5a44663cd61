#!/usr/bin/env bash
# Session churn against a private tmux server, with or without an observer, to reproduce (or
# rule out) tmux crashes. Reports whether the server survived; with --gdb, a crash prints
# the server's backtrace.
#
#   scripts/churn.sh [--tmux PATH] [--observer none|sidecar|tmux-c] [--gdb]
#                    [--pattern create-then-kill|batches|pairs|grouped|kill-pre] [--count N] [--pace-ms MS]
#                    [--pre N]
#
# --observer sidecar: target/release/thinkterm-sidecar run, with PATH's tmux = --tmux.
# --observer tmux-c:  what the sidecar did before 2026-12-02, without the sidecar: one
#                     `tmux -C attach -t SESSION` started for each session as it appears.
# --pre N:            N sessions made before the observer starts.
set -uo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
tmuxbin=$(command -v tmux)
observer=none
pattern=create-then-kill
count=60
pace=50
pre=0
gdb=0
while [ $# -gt 0 ]; do
  case $1 in
    --tmux) tmuxbin=$(realpath "$2"); shift ;;
    --observer) observer=$2; shift ;;
    --pattern) pattern=$2; shift ;;
    --count) count=$2; shift ;;
    --pace-ms) pace=$2; shift ;;
    --pre) pre=$2; shift ;;
    --gdb) gdb=1 ;;
    *) echo "unknown argument $1" >&2; exit 2 ;;
  esac
  shift
done
# A crashed server would leave a core file in the working directory (--gdb shows the backtrace).
ulimit -c 0
name=churn-$$-$RANDOM
work=$(mktemp -d)
t() { "$tmuxbin" -L "$name" "$@" 2>>"$work/tmux-errors"; }
sleep_ms() { sleep "$(printf '0.%03d' "$1")"; }
cleanup() {
  [ -n "${obs_pid:-}" ] && kill "$obs_pid" 2>/dev/null
  [ -n "${watch_pid:-}" ] && kill "$watch_pid" 2>/dev/null
  pkill -f "tmux -L $name " 2>/dev/null
  [ -n "${gdb_pid:-}" ] && kill "$gdb_pid" 2>/dev/null
  [ -n "${server:-}" ] && kill -9 "$server" 2>/dev/null
  # A crash lets the next `new-session` start another server on the socket: end it too.
  "$tmuxbin" -L "$name" kill-server 2>/dev/null
  wait 2>/dev/null
  rm -rf "$work"
}
trap cleanup EXIT

# Alive and not a zombie (a crashed server may wait a while to be reaped).
alive() {
  local st
  st=$(sed 's/.*) //' "/proc/$server/stat" 2>/dev/null | cut -d' ' -f1)
  [ -n "$st" ] && [ "$st" != Z ] && [ "$st" != X ]
}
t -f /dev/null new-session -d -s base -x 80 -y 24 'exec sleep 100000'
server=$(t display-message -p '#{pid}')
for i in $(seq 1 "$pre"); do t new-session -d -s "pre$i" 'exec sleep 100000'; done
if [ $gdb = 1 ]; then
  gdb -q -p "$server" -batch -ex 'set pagination off' -ex 'handle SIGPIPE SIGCHLD SIGUSR1 SIGUSR2 SIGHUP SIGTERM SIGCONT nostop noprint pass' \
    -ex continue -ex 'bt' -ex 'frame 0' -ex 'info locals' >"$work/gdb.txt" 2>&1 &
  gdb_pid=$!
  sleep 1
fi

case $observer in
  none) ;;
  sidecar)
    PATH=$(dirname "$tmuxbin"):$PATH XDG_RUNTIME_DIR=$work XDG_STATE_HOME=$work XDG_CONFIG_HOME=$work \
      THINKTERM_DISABLE_SOUND=1 "$root/target/release/thinkterm-sidecar" -L "$name" run \
      >"$work/sidecar.log" 2>&1 &
    obs_pid=$!
    for _ in $(seq 1 100); do
      [ "$(t list-clients -F '#{client_control_mode}' 2>/dev/null | grep -c 1)" -ge 1 ] && break
      sleep 0.1
    done ;;
  tmux-c)
    # One control client per session, started when the session appears (polling list-sessions).
    (
      declare -A seen
      while alive; do
        for s in $(t list-sessions -F '#{session_id}' 2>/dev/null); do
          if [ -z "${seen[$s]:-}" ]; then
            seen[$s]=1
            (sleep 100000 | t -C attach-session -t "$s" -f ignore-size,read-only >/dev/null 2>&1 &)
          fi
        done
        sleep 0.02
      done
    ) &
    obs_pid=$! ;;
  *) echo "unknown observer $observer" >&2; exit 2 ;;
esac

made=0 killed=0
start=$(date +%s.%N)
case $pattern in
  create-then-kill)
    for i in $(seq 1 "$count"); do alive || break; t new-session -d -s "s$i" 'exec sleep 100000' && made=$((made+1)); done
    # The observer should be attached to every session before the kills start.
    if [ "$observer" != none ]; then
      for _ in $(seq 1 50); do
        ctl=$(t list-clients -F '#{client_control_mode}' | grep -c 1)
        [ "$ctl" -ge $((made + 1 + pre)) ] && break
        sleep 0.1
      done
      echo "control clients after creation: $ctl of $((made + 1 + pre)) sessions"
    fi
    for i in $(seq 1 "$count"); do alive || break; t kill-session -t "s$i" && killed=$((killed+1)); sleep_ms "$pace"; done ;;
  batches)
    for b in $(seq 1 $((count / 10))); do
      for i in $(seq 1 10); do alive || break 2; t new-session -d -s "b$b-$i" 'exec sleep 100000' && made=$((made+1)); done
      for i in $(seq 1 10); do alive || break 2; t kill-session -t "b$b-$i" && killed=$((killed+1)); done
    done ;;
  kill-pre)
    # Kill the sessions made before the observer started (--pre N).
    for i in $(seq 1 "$pre"); do alive || break; t kill-session -t "pre$i" && killed=$((killed+1)); sleep_ms "$pace"; done ;;
  pairs)
    for i in $(seq 1 "$count"); do
      alive || break
      t new-session -d -s "p$i" 'exec sleep 100000' && made=$((made+1))
      t kill-session -t "p$i" && killed=$((killed+1))
    done ;;
  grouped)
    for i in $(seq 1 "$count"); do
      alive || break
      t new-session -d -s "g$i" 'exec sleep 100000' && made=$((made+1))
      t new-session -d -t "g$i" -s "g$i-peer" && made=$((made+1))
      t kill-session -t "g$i-peer" && killed=$((killed+1))
      t kill-session -t "g$i" && killed=$((killed+1))
    done ;;
  *) echo "unknown pattern $pattern" >&2; exit 2 ;;
esac
sleep 1
end=$(date +%s.%N)
if alive; then
  echo "survived: server $server alive; $made created, $killed killed in $(echo "$end - $start" | bc) s ($pattern, observer $observer, $("$tmuxbin" -V))"
  exit 0
fi
echo "CRASHED: server $server gone after $made created, $killed killed ($pattern, observer $observer, $("$tmuxbin" -V))"
if [ $gdb = 1 ]; then wait "$gdb_pid" 2>/dev/null; gdb_pid=; grep -v '^\[' "$work/gdb.txt" | head -60; fi
[ -f "$work/sidecar.log" ] && tail -5 "$work/sidecar.log"
exit 1
