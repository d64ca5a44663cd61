#!/usr/bin/env bash
# thinkterm-sidecar as a tmux plugin.
#
#   TPM:            set -g @plugin 'OWNER/thinkterm-sidecar'   (TPM runs every *.tmux here)
#   plain tmux.conf: run-shell /path/to/thinkterm-sidecar/thinkterm.tmux
#
# For the tmux server it runs in, it
#   - finds the binary: @thinkterm-bin, else target/release/ in this checkout, else PATH (and
#     ~/.cargo/bin); with none, builds it with cargo in the background and says so;
#   - starts the daemon with `run-shell -b` (`run --detach --exit-with-server`): once per server
#     (sourcing the config again starts nothing), and it exits with the server;
#   - adds the window icon to tmux's default window formats and the session summary to the
#     default status-right (formats you set yourself are left alone), sets focus-events on;
#   - binds prefix + a to the agents panel, and prefix + A to the current window's card (a
#     menu whose items go to the agents' panes) when the binary has a `card` subcommand.
#
# Options (set -g them before the plugin line), with their defaults:
#   @thinkterm-bin           ""        the thinkterm-sidecar to use (default: found as above)
#   @thinkterm-autostart     on        start the daemon for this server (off: you run it)
#   @thinkterm-build         on        no binary found: build it with cargo in the background
#   @thinkterm-window-icon   auto      auto: add #{@thinkterm_icon} to window-status-format and
#                                      window-status-current-format when they are tmux's
#                                      defaults; on: add it to whatever they are; off: never
#   @thinkterm-summary       auto      the same for #{@thinkterm_summary} in status-right
#   @thinkterm-focus-events  on        set focus-events on (off: leave it)
#   @thinkterm-panel-key     a         prefix + KEY opens the agents panel (off: no key)
#   @thinkterm-panel-size    70%,80%   the panel popup's width,height
#   @thinkterm-card-key      A         prefix + KEY shows the current window's card (off: no key;
#                                      bound only when `thinkterm-sidecar card` exists)
#   @thinkterm-card-style    menu      menu: a menu, each agent an item that goes to its pane;
#                                      popup: the card in a popup until a key is pressed
#   @thinkterm-card-size     60%,50%   the most of the client the menu takes (width,height), or
#                                      the popup's size; agents that do not fit: `N more`
#
# Every command below gets its words as separate arguments; nothing from a pane is run.

set -u

DIR="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
SELF="$DIR/$(basename "${BASH_SOURCE[0]}")"
ICON='#{?@thinkterm_icon, #{@thinkterm_icon},}'
SUMMARY='#{?@thinkterm_summary,#{@thinkterm_summary} ,}'

# The value of a global option, or $2 when it is unset.
get() {
    local v
    v="$(tmux show-option -gqv "$1")"
    printf '%s' "${v:-$2}"
}

# A tmux message (formats are expanded in it: '#' is doubled). While no person's client is
# attached (the config loads before the first client attaches), nobody would see it: the first
# client that attaches gets it, through a hook that then removes itself.
MSG_HOOK='client-attached[9873]'
msg() {
    local text="thinkterm-sidecar: $*"
    text="${text//#/##}"
    case "$(tmux list-clients -F '#{client_control_mode}' 2>/dev/null)" in
    *0*) tmux display-message "$text" ;;
    *) tmux set-hook -g "$MSG_HOOK" "display-message '${text//\'/’}' ; set-hook -gu '$MSG_HOOK'" ;;
    esac
}

# One shell word, single-quoted, with '#' doubled for tmux's format expansion of shell commands
# (run-shell, display-popup).
q() {
    local s="${1//\'/\'\\\'\'}"
    printf "'%s'" "${s//#/##}"
}

find_bin() {
    local b
    b="$(get @thinkterm-bin '')"
    if [ -n "$b" ]; then
        [ -x "$b" ] && { printf '%s' "$b"; return 0; }
        msg "@thinkterm-bin is $b, which is not an executable file"
        return 2
    fi
    for b in "$DIR/target/release/thinkterm-sidecar" "$(command -v thinkterm-sidecar 2>/dev/null)" \
        "$HOME/.cargo/bin/thinkterm-sidecar"; do
        [ -n "$b" ] && [ -x "$b" ] && { printf '%s' "$b"; return 0; }
    done
    return 1
}

# No binary: cargo build --release in the background, then this script again.
build() {
    local cargo
    if [ "$(get @thinkterm-build on)" != on ]; then
        msg "no thinkterm-sidecar found: install it (cargo install --path $DIR, or the .deb) or set @thinkterm-bin"
        return
    fi
    cargo="$(command -v cargo 2>/dev/null || printf '%s' "$HOME/.cargo/bin/cargo")"
    if [ ! -x "$cargo" ]; then
        msg "no thinkterm-sidecar found and no cargo to build it: install Rust (rustup.rs), or the .deb, or set @thinkterm-bin"
        return
    fi
    mkdir -p "$DIR/target"
    if ! mkdir "$DIR/target/.thinkterm-plugin-build" 2>/dev/null; then
        msg "thinkterm-sidecar is being built already (log: $DIR/target/plugin-build.log)"
        return
    fi
    msg "building thinkterm-sidecar with cargo in the background (a few minutes); it starts when built. Log: $DIR/target/plugin-build.log"
    tmux run-shell -b "$(q "$SELF") --build $(q "$cargo")"
}

# --build CARGO: runs in the background (run-shell -b).
if [ "${1:-}" = --build ]; then
    cargo="$2"
    log="$DIR/target/plugin-build.log"
    if (cd "$DIR" && "$cargo" build --release --locked) >"$log" 2>&1; then
        rmdir "$DIR/target/.thinkterm-plugin-build" 2>/dev/null
        msg "built $DIR/target/release/thinkterm-sidecar; starting it"
        exec "$SELF"
    fi
    rmdir "$DIR/target/.thinkterm-plugin-build" 2>/dev/null
    msg "building failed: see $log"
    exit 0
fi

# --start BIN SOCKET: runs in the background (run-shell -b); says why when the daemon did not
# start. "Already running" is success, and starts nothing.
if [ "${1:-}" = --start ]; then
    if ! err="$("$2" -S "$3" run --detach --exit-with-server 2>&1 >/dev/null)"; then
        msg "the daemon did not start: ${err%%$'\n'*} (thinkterm-sidecar doctor says more)"
    fi
    exit 0
fi

# The values tmux itself gives the formats, asked once of a throwaway server with no config
# (it exits at once: it has no session), so "your own format" means "not tmux's default" on
# whatever tmux version runs.
read_defaults() {
    local tmp
    tmp="$(mktemp -d)" || return
    {
        IFS= read -r DEFAULT_window_status_format
        IFS= read -r DEFAULT_window_status_current_format
        IFS= read -r DEFAULT_status_right
    } < <(tmux -S "$tmp/defaults" -f /dev/null start-server \; \
        show-option -gv window-status-format \; \
        show-option -gv window-status-current-format \; \
        show-option -gv status-right 2>/dev/null)
    rm -rf "$tmp"
}

# Whether $2 is tmux's default value of option $1.
is_default() {
    local var="DEFAULT_${1//-/_}"
    [ "$2" = "${!var:-}" ]
}

# $1 with $2 inserted after its first #W (the window name), else at its end.
with_icon() {
    case "$1" in
    *'#W'*) printf '%s' "${1%%'#W'*}#W$2${1#*'#W'}" ;;
    *) printf '%s' "$1$2" ;;
    esac
}

add_icon() {
    local mode cur
    mode="$(get @thinkterm-window-icon auto)"
    [ "$mode" = off ] && return
    for opt in window-status-format window-status-current-format; do
        cur="$(tmux show-option -gv "$opt")"
        case "$cur" in *@thinkterm_icon*) continue ;; esac # already there (yours, or sourced before)
        if [ "$mode" = auto ] && ! is_default "$opt" "$cur"; then
            continue # your own format: left alone
        fi
        tmux set-option -g "$opt" "$(with_icon "$cur" "$ICON")"
    done
}

add_summary() {
    local mode cur len
    mode="$(get @thinkterm-summary auto)"
    [ "$mode" = off ] && return
    cur="$(tmux show-option -gv status-right)"
    case "$cur" in *@thinkterm_summary*) return ;; esac
    if [ "$mode" = auto ] && ! is_default status-right "$cur"; then
        return
    fi
    tmux set-option -g status-right "$SUMMARY$cur"
    len="$(tmux show-option -gv status-right-length)"
    [ "${len:-0}" -lt 60 ] && tmux set-option -g status-right-length 60
}

bind_popup() { # KEY SIZE COMMAND
    local w="${2%,*}" h="${2#*,}"
    tmux bind-key "$1" display-popup -E -w "$w" -h "$h" "$3"
}

# The window card on KEY: a menu on the client that pressed it (run in the background: tmux
# waits for the menu to close; errors go to stdout, which tmux shows), or a popup. tmux fills in
# the client and the window; nothing from a pane is in the command.
bind_card() { # KEY BIN SOCKET
    local size w h card
    size="$(get @thinkterm-card-size 60%,50%)"
    w="${size%,*}" h="${size#*,}"
    card="$(q "$2") -S $(q "$3") card"
    case "$(get @thinkterm-card-style menu)" in
    popup) bind_popup "$1" "$size" "$card --hold '#{window_id}'" ;;
    *) tmux bind-key "$1" run-shell -b \
        "$card --menu --client #{q:client_name} --width $(q "$w") --height $(q "$h") '#{window_id}' 2>&1" ;;
    esac
}

main() {
    local bin sock key found
    bin="$(find_bin)"
    found=$?
    if [ $found -ne 0 ]; then
        # 2: @thinkterm-bin is wrong (said so); 1: nothing found.
        [ $found -eq 1 ] && build
        return 0
    fi
    sock="$(tmux display-message -p '#{socket_path}')"
    [ -n "$sock" ] || sock="${TMUX%%,*}"

    [ "$(get @thinkterm-focus-events on)" = on ] && tmux set-option -g focus-events on
    read_defaults
    add_icon
    add_summary

    key="$(get @thinkterm-panel-key a)"
    if [ -n "$key" ] && [ "$key" != off ]; then
        bind_popup "$key" "$(get @thinkterm-panel-size 70%,80%)" "$(q "$bin") -S $(q "$sock") panel"
    fi
    key="$(get @thinkterm-card-key A)"
    if [ -n "$key" ] && [ "$key" != off ] && "$bin" card --help >/dev/null 2>&1; then
        bind_card "$key" "$bin" "$sock"
    fi

    if [ "$(get @thinkterm-autostart on)" = on ]; then
        tmux run-shell -b "$(q "$SELF") --start $(q "$bin") $(q "$sock")"
    fi
}

main
exit 0
