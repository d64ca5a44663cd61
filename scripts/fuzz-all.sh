#!/usr/bin/env bash
# Runs the cargo-fuzz targets one after another (one fuzzing process at a time: the machines are
# small and shared), each until SECONDS have passed or RUNS inputs were executed, whichever comes
# first, and prints what each reached: executions, time, coverage, corpus, crashes.
#
#   scripts/fuzz-all.sh [SECONDS] [TARGET...]        (default: 60 s each, every target)
#   FUZZ_RUNS=10000000 scripts/fuzz-all.sh 3600      (the issue's goal: 10 M runs or 1 h each)
#
# Needs the nightly toolchain and cargo-fuzz (`cargo install cargo-fuzz`). Seeds are made from
# the real recordings in ../shared/fixtures/agents (THINKTERM_FIXTURES to point elsewhere), the
# bundled rules, the herdr manifests (THINKTERM_HERDR) and the documented requests, into
# fuzz/work/seeds/; what a run adds goes to fuzz/work/corpus/TARGET (not kept in git). The
# committed corpus of a target is fuzz/corpus/TARGET; with FUZZ_KEEP=1 the run's new units are
# merged into it (libFuzzer's -merge=1: only inputs that add coverage). Crashes land in
# fuzz/artifacts/TARGET/. The figures of each run are appended to fuzz/work/results.txt.
set -euo pipefail
cd "$(dirname "$0")/.."

secs=${1:-60}
shift || true
all=(scanner status_report user_var control_mode manifest config socket_request osc99 text_screen)
if [ $# -gt 0 ]; then targets=("$@"); else targets=("${all[@]}"); fi
runs=${FUZZ_RUNS:-10000000}
# Release code with debug assertions (an overflow panics), without AddressSanitizer: the crate
# has no unsafe code, and ASan made the targets 2 to 3 times slower. FUZZ_FLAGS to change.
flags=${FUZZ_FLAGS:--O -a -s none}
fixtures=${THINKTERM_FIXTURES:-../shared/fixtures/agents}
herdr=${THINKTERM_HERDR:-../shared/reference/herdr-0.8.2/manifests}
work=fuzz/work
seeds=$work/seeds
mkdir -p "$work"

# --- Seeds -----------------------------------------------------------------------------------
rm -rf "$seeds"
for t in "${all[@]}"; do mkdir -p "$seeds/$t"; done

# The raw streams agents wrote to their ptys, cut into 4 KiB pieces (8 per agent).
for raw in "$fixtures"/*/*/raw-main-*.bin; do
  [ -f "$raw" ] || continue
  agent=$(basename "$(dirname "$(dirname "$raw")")")
  for i in 0 1 2 3 4 5 6 7; do
    dd if="$raw" of="$seeds/scanner/$agent-$i" bs=4096 skip=$((i * 3)) count=1 status=none
    [ -s "$seeds/scanner/$agent-$i" ] || rm -f "$seeds/scanner/$agent-$i"
  done
done
# The text model: the same pieces behind a size byte (0x27: 8 rows, 11 columns; 0xf7: 8 rows,
# 76 columns).
for f in "$seeds"/scanner/*; do
  { printf '\x27'; cat "$f"; } >"$seeds/text_screen/$(basename "$f")-small"
  { printf '\xf7'; cat "$f"; } >"$seeds/text_screen/$(basename "$f")-wide"
done
# OSC 7501 and THINKTERM_AGENT payloads as `report` writes them, and those found in the streams.
for state in working blocked idle done clear; do
  printf 'state=%s:app=fuzz:title=dGl0bGU=:msg=bWVzc2FnZQ==' "$state" >"$seeds/status_report/$state"
  printf 'SetUserVar=THINKTERM_AGENT=%s' "$(printf 'v1;agent=fuzz;state=%s;pid=42;ts=1700000000' "$state" | base64 -w0)" \
    >"$seeds/user_var/$state"
done
printf 'state=blocked:app=codex:kind=permission' >"$seeds/status_report/codex-blocked"
printf 'state=working:id=build/1:progress=40' >"$seeds/status_report/subtask"
printf '?' >"$seeds/status_report/query"

# Control mode: the raw streams as tmux sends them (`%output %N` with bytes below 0x20 and `\`
# written as \ooo), with a reply block and other notifications between them.
for f in "$seeds"/scanner/*; do
  perl -e '
    local $/; my $raw = <STDIN>;
    print "%begin 1700000000 12 1\n%1 list\n%end 1700000000 12 1\n";
    my $i = 0;
    while (length $raw) {
      my $part = substr($raw, 0, 700, "");
      $part =~ s/([\x00-\x1f\\])/sprintf("\\%03o", ord $1)/ge;
      print "%output %", 1 + $i % 3, " $part\n";
      print "%window-renamed \@1 name $i\n%layout-change \@1 b25d,120x40,0,0,1\n" if $i++ % 2;
    }
    print "%subscription-changed thinkterm \$1 \@1 0 %1 : value\n%exit\n";
  ' <"$f" >"$seeds/control_mode/$(basename "$f")"
done

# Manifests: the bundled rules and herdr's, alone and followed by a real screen.
for m in rules/*.toml "$herdr"/*.toml; do
  [ -f "$m" ] || continue
  cp "$m" "$seeds/manifest/$(basename "$(dirname "$m")")-$(basename "$m")"
done
for txt in "$fixtures"/*/*/00[1-3]-*.txt; do
  [ -f "$txt" ] || continue
  agent=$(basename "$(dirname "$(dirname "$txt")")")
  bundled=rules/${agent%%-*}.toml
  [ -f "$bundled" ] || continue
  { cat "$bundled"; printf '\0'; cat "$txt"; } >"$seeds/manifest/screen-$agent-$(basename "$txt")"
done

# Config: every key, a machine, a bad value, an unknown key.
cat >"$seeds/config/all-keys" <<'EOF'
spinner_interval_ms = 200
capture_delay_ms = 40
capture_interval_ms = 100
probe_interval_s = 10
read_batch_ms = 100
flood_pause_kib_s = 256
drift_after_s = 30
terminal_notifications = "auto"
notify_without_focus = true

[[machines]]
name = "devbox"
ssh = "devbox"
ssh_args = ["-p", "2222"]
EOF
printf 'read_batch_ms = 999\nspiner_interval_ms = 10\n[display]\nmessage = false\n' >"$seeds/config/bad"
printf '[[machines]]\nname = "k"\ncommand = ["kubectl", "exec", "-i", "dev-0", "--", "thinkterm-sidecar", "bridge"]\n' \
  >"$seeds/config/command"

# Socket requests, as docs/schema.md lists them, one file each and all in one.
requests=(
  '{"request":"agents"}'
  '{"request":"subscribe"}'
  '{"request":"events","id":7}'
  '{"request":"reload"}'
  '{"request":"explain","pane":"%3","machine":"devbox"}'
  '{"request":"focus","pane":"%3","client":"/dev/pts/1"}'
  '{"request":"seen","pane":"%3"}'
  '{"request":"doctor"}'
  '{"request":"notify","pane":"%3","title":"T","body":"text"}'
  '{"request":"machines"}'
  '{"request":"add_machine","machine":{"name":"devbox","ssh":"devbox","ssh_args":["-p","2222"]}}'
  '{"request":"follow","notifications":true}'
)
n=0
for r in "${requests[@]}"; do
  printf '%s\n' "$r" >"$seeds/socket_request/$n"
  n=$((n + 1))
done
printf '%s\n' "${requests[@]}" >"$seeds/socket_request/all"

# OSC 99: a title and body in chunks (plain and base64), a query, a close, and a lone title.
printf '\x00i=n1:d=0:p=title;Build done\x1e\x02i=n1:d=0:p=body:e=1;ZmluaXNoZWQgaW4gM3M=\x1e\x05i=n1:o=always:u=2:p=body; ok' >"$seeds/osc99/chunks"
printf 'i=q:p=?;' >"$seeds/osc99/query"
printf 'i=n2:p=close;\x1e\x00;hello' >"$seeds/osc99/close-plain"

# --- Runs ------------------------------------------------------------------------------------
cargo +nightly fuzz build $flags
summary=()
for t in "${targets[@]}"; do
  mkdir -p "$work/corpus/$t" "fuzz/corpus/$t"
  log=$work/$t.log
  echo "== $t: up to ${secs}s or $runs runs"
  set +e
  cargo +nightly fuzz run $flags "$t" "$work/corpus/$t" "fuzz/corpus/$t" "$seeds/$t" -- \
    -max_total_time="$secs" -runs="$runs" -print_final_stats=1 -rss_limit_mb=2048 \
    >"$log" 2>&1
  code=$?
  set -e
  execs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log" | tail -1)
  speed=$(sed -n 's/^stat::average_exec_per_sec: *//p' "$log" | tail -1)
  rss=$(sed -n 's/^stat::peak_rss_mb: *//p' "$log" | tail -1)
  took=$(sed -n 's/^Done [0-9]* runs in \([0-9]*\) second.*/\1/p' "$log" | tail -1)
  last=$(grep -E '^#[0-9]+' "$log" | tail -1)
  cov=$(sed -n 's/.* cov: \([0-9]*\).*/\1/p' <<<"$last")
  ft=$(sed -n 's/.* ft: \([0-9]*\).*/\1/p' <<<"$last")
  corp=$(sed -n 's/.* corp: \([0-9]*\/[0-9a-zA-Z]*\).*/\1/p' <<<"$last")
  crashes=$(ls "fuzz/artifacts/$t" 2>/dev/null | grep -cE '^(crash|oom|timeout|leak)-' || true)
  verdict=ok
  [ "$code" -eq 0 ] || verdict="STOPPED (exit $code): see $log"
  line="$(date -u +%F) $t: ${execs:-?} runs in ${took:-?} s (${speed:-?}/s), cov ${cov:-?}, ft ${ft:-?}, corpus ${corp:-?}, peak RSS ${rss:-?} MB, artifacts $crashes, $verdict"
  echo "$line" | tee -a "$work/results.txt"
  summary+=("$line")
  if [ "${FUZZ_KEEP:-0}" = 1 ] && [ "$code" -eq 0 ]; then
    cargo +nightly fuzz run $flags "$t" "fuzz/corpus/$t" "$work/corpus/$t" -- -merge=1 >"$work/$t.merge.log" 2>&1 || true
  fi
done
echo
printf '%s\n' "${summary[@]}"
