#!/usr/bin/env bash
# `skill setup` against the real Claude Code and Codex from npm, run against the scripted model
# of ../shared/tools/agent-capture (mock_llm.py, which dumps every request body). Not part of
# `cargo test` (the npm agents are not in CI); run it by hand:
#
#   cargo build && scripts/skill-real-agents.sh [AGENTS_DIR]
#
# AGENTS_DIR holds node_modules/.bin/{claude,codex} (default /tmp/agents; install with
# `npm install @anthropic-ai/claude-code @anthropic-ai/claude-code-linux-x64 @openai/codex`).
# Everything runs in a scratch folder with its own HOME, tmux server (-L), daemon and model
# server on 127.0.0.1; it is all stopped by pid at the end.
#
# It checks, and prints the evidence for:
#  1. setup on a home with the person's own settings; a second run changes no byte;
#     --uninstall gives back every file byte for byte (nothing else touched them);
#  2. setup again, then each agent started in a tmux pane beside the other, with our daemon:
#     the request each agent sends to the model holds the skill's name and description and the
#     hook's output (its own pane id; for the second agent, the first one listed); Codex starts
#     without asking to review hooks (the trust record is the one it expects);
#  3. --uninstall after the agents ran: what is left differs from the start only by what the
#     agents wrote themselves.
set -euo pipefail

root=$(cd "$(dirname "$0")/.." && pwd)
agents=${1:-/tmp/agents}
bin=${BIN:-$root/target/debug/thinkterm-sidecar}
capture=$(cd "$root/../shared/tools/agent-capture" 2>/dev/null && pwd || echo /work/shared/tools/agent-capture)
claude=$agents/node_modules/.bin/claude
codex=$agents/node_modules/.bin/codex
for f in "$bin" "$claude" "$codex" "$capture/mock_llm.py"; do
  [ -e "$f" ] || { echo "missing: $f" >&2; exit 2; }
done

scratch=$(mktemp -d /tmp/skill-real-XXXXXX)
H=$scratch/home
work=$scratch/work
dump=$scratch/dump
sock=skillreal$$
port=$((20000 + $$ % 20000))
mkdir -p "$H/.claude" "$H/.codex" "$work" "$scratch/run" "$scratch/config" "$scratch/state"
git init -q "$work"
chmod 700 "$scratch/run"

pids=()
tmux_pid=
cleanup() {
  [ -n "$tmux_pid" ] && kill "$tmux_pid" 2>/dev/null || true
  for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
  wait 2>/dev/null || true
}
trap cleanup EXIT

say() { printf '\n== %s\n' "$*"; }
fail() {
  echo "FAIL: $*" >&2
  if [ -n "$tmux_pid" ]; then
    for p in $(tmux -L "$sock" list-panes -a -F '#{pane_id}'); do
      echo "--- screen of $p:" >&2
      tmux -L "$sock" capture-pane -p -t "$p" | grep -v '^$' >&2 || true
    done
  fi
  exit 1
}
snapshot() { (cd "$H" && find . -type f ! -name .claude.json -print0 | sort -z | xargs -0 sha256sum); }
wait_for() { # SECONDS WHAT COMMAND...
  local secs=$1 what=$2; shift 2
  local end=$((SECONDS + secs))
  until "$@"; do
    [ $SECONDS -lt $end ] || fail "timed out after ${secs}s waiting for $what"
    sleep 0.3
  done
}

# The person's own files, formatted their way.
claude_version=$("$claude" --version | awk '{print $1}')
codex_version=$("$codex" --version | awk '{print $NF}')
cat >"$H/.claude.json" <<EOF
{"hasCompletedOnboarding": true, "lastOnboardingVersion": "$claude_version", "numStartups": 5,
 "theme": "dark", "autoUpdates": false,
 "customApiKeyResponses": {"approved": ["0123456789abcdefghij"], "rejected": []},
 "projects": {"$work": {"hasTrustDialogAccepted": true, "hasCompletedProjectOnboarding": true,
   "allowedTools": []}}}
EOF
cat >"$H/.claude/settings.json" <<'EOF'
{
    "model": "sonnet",
    "permissions": { "allow": ["Bash(ls:*)"] },
    "hooks": {
        "Stop": [ { "hooks": [ { "type": "command", "command": "true" } ] } ]
    }
}
EOF
cat >"$H/.codex/config.toml" <<EOF
# The person's Codex settings (pointed at the scripted model).
model = "gpt-5-codex"
model_provider = "mock"
approval_policy = "on-request"
sandbox_mode = "read-only"
check_for_update_on_startup = false

[model_providers.mock]
name = "Mock"
base_url = "http://127.0.0.1:$port/v1"
env_key = "OPENAI_API_KEY"
wire_api = "responses"
request_max_retries = 0
stream_max_retries = 0

[projects."$work"]
trust_level = "trusted"

[notice]
hide_full_access_warning = true

[analytics]
enabled = false

[features]
daemon_auto_start = false   # no app-server left behind
EOF
cp -a "$H" "$scratch/home-before"
run_setup() { env -u CLAUDE_CONFIG_DIR -u CODEX_HOME HOME="$H" "$bin" skill setup "$@"; }

say "1. setup, setup again, uninstall (Claude Code $claude_version, Codex $codex_version)"
before=$(snapshot)
run_setup
first=$(snapshot)
[ "$first" != "$before" ] || fail "setup changed nothing"
out=$(run_setup)
echo "$out"
[ "$(snapshot)" = "$first" ] || fail "the second setup changed files"
[ "$(grep -c 'nothing to change' <<<"$out")" = 2 ] || fail "the second setup planned changes"
run_setup --uninstall
[ "$(snapshot)" = "$before" ] || { diff <(echo "$before") <(snapshot); fail "uninstall did not restore every byte"; }
diff -r "$scratch/home-before" "$H" || fail "uninstall left differences"
echo "OK: idempotent ($(wc -l <<<"$first") files hashed), uninstall restored every file byte for byte"

say "2. setup, then the agents against the scripted model, with the daemon"
run_setup >/dev/null
cp -a "$H" "$scratch/home-setup"
MOCK_PORT=$port MOCK_LOG=$scratch/mock.jsonl MOCK_DUMP_DIR=$dump MOCK_FIRST_TOKEN_DELAY=0 \
  python3 "$capture/mock_llm.py" >"$scratch/mock.out" 2>&1 &
pids+=($!)
xdg=(XDG_RUNTIME_DIR="$scratch/run" XDG_CONFIG_HOME="$scratch/config" XDG_STATE_HOME="$scratch/state")
env "${xdg[@]}" HOME="$H" TERM=xterm-256color tmux -L "$sock" -f /dev/null \
  new-session -d -s real -x 160 -y 45 -c "$work"
tmux_pid=$(tmux -L "$sock" display -p '#{pid}')
env "${xdg[@]}" THINKTERM_DISABLE_SOUND=1 "$bin" -L "$sock" run >"$scratch/daemon.log" 2>&1 &
pids+=($!)
agents_json() { env "${xdg[@]}" "$bin" -L "$sock" agents --json 2>/dev/null; }
wait_for 15 "the daemon" agents_json >/dev/null

common=(TERM=tmux-256color LANG=C.UTF-8 PATH=/usr/bin:/bin HOME="$H")
claude_pane=$(tmux -L "$sock" new-window -d -P -F '#{pane_id}' -t real -n claude -c "$work" \
  env "${common[@]}" ANTHROPIC_BASE_URL="http://127.0.0.1:$port" \
  ANTHROPIC_API_KEY=sk-ant-api03-evals-test-key-0123456789abcdefghij DISABLE_TELEMETRY=1 \
  DISABLE_AUTOUPDATER=1 CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC=1 "$claude")
state_of() { agents_json | jq -r --arg p "$1" '.panes[] | select(.pane == $p) | "\(.agent) \(.state)"'; }
is_state() { [ "$(state_of "$1")" = "$2" ]; }
dump_with() { grep -l -- "$1" "$dump"/*"$2"* 2>/dev/null | head -1; }
has_dump() { [ -n "$(dump_with "$1" "$2")" ]; }
# Types a prompt and presses Enter until the model gets it (a TUI still drawing its start-up
# notices can take the first Enter as part of the text).
ask() { # PANE MARK API
  tmux -L "$sock" send-keys -t "$1" -l "Say hello. $2"
  local tries
  for tries in 1 2 3 4; do
    sleep 1
    tmux -L "$sock" send-keys -t "$1" Enter
    local end=$((SECONDS + 15))
    while [ $SECONDS -lt $end ]; do
      has_dump "$2" "$3" && { echo "($2 reached the model after Enter number $tries)"; return 0; }
      sleep 0.3
    done
  done
  fail "no request with $2 reached the model"
}
excerpt() { grep -o -- ".\{0,40\}$2.\{0,100\}" "$1" | head -1; }

wait_for 90 "claude idle in $claude_pane" is_state "$claude_pane" "claude idle"
ask "$claude_pane" CHECK-CLAUDE messages

codex_pane=$(tmux -L "$sock" new-window -d -P -F '#{pane_id}' -t real -n codex -c "$work" \
  env "${common[@]}" OPENAI_API_KEY=test RUST_LOG=error "$codex")
wait_for 90 "codex idle in $codex_pane" is_state "$codex_pane" "codex idle"
screen=$(tmux -L "$sock" capture-pane -p -t "$codex_pane")
if grep -q "Hooks need review" <<<"$screen"; then echo "$screen"; fail "Codex asks to review the hook"; fi
ask "$codex_pane" CHECK-CODEX responses

cdump=$(dump_with CHECK-CLAUDE messages)
xdump=$(dump_with CHECK-CODEX responses)
skill_line="thinkterm-agents: Work with the other AI coding agents running in tmux panes"
for f in "$cdump" "$xdump"; do
  grep -q -- "$skill_line" "$f" || fail "$f: no skill name and description"
done
grep -q -- "thinkterm-sidecar: you are in tmux pane $claude_pane (session" "$cdump" \
  || fail "$cdump: no hook output naming $claude_pane"
grep -q -- "thinkterm-sidecar: you are in tmux pane $codex_pane (session" "$xdump" \
  || fail "$xdump: no hook output naming $codex_pane"
grep -q -- "- $claude_pane: claude " "$xdump" || fail "$xdump: the hook did not list claude in $claude_pane"
echo "Claude Code ($claude_pane) request $(basename "$cdump"), $(stat -c %s "$cdump") bytes:"
echo "  skill: $(excerpt "$cdump" "thinkterm-agents: ")"
echo "  hook:  $(excerpt "$cdump" "thinkterm-sidecar: you are in")"
echo "Codex ($codex_pane) request $(basename "$xdump"), $(stat -c %s "$xdump") bytes:"
echo "  skill: $(excerpt "$xdump" "thinkterm-agents: ")"
echo "  hook:  $(excerpt "$xdump" "thinkterm-sidecar: you are in")"
echo "  lists: $(excerpt "$xdump" "- $claude_pane: claude ")"
echo "OK: both requests hold the skill and the hook's output; Codex asked no hook review"

say "3. uninstall after the agents ran"
kill "$tmux_pid"; tmux_pid=
sleep 1
run_setup --uninstall
grep -rl "skill hook" "$H" --include='*.json' --include='*.toml' --include='*.md' \
  --exclude='*.jsonl' | grep -v '\.bak$' && fail "something of ours is left"
for f in .claude/settings.json .codex/config.toml; do
  if cmp -s "$scratch/home-before/$f" "$H/$f"; then
    echo "$f: byte for byte as before setup"
  else
    echo "$f: differs from before setup by what the agent wrote itself:"
    diff -u "$scratch/home-before/$f" "$H/$f" | sed 's/^/    /' || true
  fi
done
for f in .codex/hooks.json ".claude/skills" ".codex/skills/thinkterm-agents"; do
  [ ! -e "$H/$f" ] || fail "$f is left"
done
echo "OK: uninstall removed what setup added; scratch folder: $scratch"
