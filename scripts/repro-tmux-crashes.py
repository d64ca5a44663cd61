#!/usr/bin/env python3
"""Deterministic reproductions of the two tmux crashes a control-mode observer can trigger
(tmux 3.2 to 3.5a), each on a private server, without the sidecar:

  identify      a control client between MSG_IDENTIFY_FLAGS and MSG_IDENTIFY_DONE when a
                session is created: control_write() with no control state (control.c).
                `tmux -C` sends its flags in the first of three reads (two messages carry a
                descriptor, and the server reads those alone), so the window is real; here the
                client pauses in it on purpose.
  identify-safe the same client, in the order the sidecar uses: both descriptors first, then
                flags and DONE in one write. Expected to survive.
  subscription  a control client with an all-panes (%*) subscription, slow to exit, whose
                session is killed: control_check_subs_all_panes() walks a NULL session.
  subscription-pane  the same with per-pane (%N) subscriptions, as the sidecar now uses.
                Expected to survive.

usage: repro-tmux-crashes.py CASE [--tmux PATH]
Prints "survived" or "CRASHED" and exits 0 or 1.
"""
import os, resource, socket, struct, subprocess, sys, time

MSG = dict(FLAGS=100, TERM=101, TTYNAME=102, STDIN=104, DONE=106, CLIENTPID=107, CWD=108,
           FEATURES=109, STDOUT=110, LONGFLAGS=111, COMMAND=200)
CLIENT_CONTROL, CLIENT_UTF8 = 0x2000, 0x10000


def imsg(kind, data=b"", fd=False):
    return struct.pack("=IHHII", kind, 16 + len(data), 1 if fd else 0, 8, os.getpid()) + data


def main():
    # The crashed servers would leave core files behind.
    resource.setrlimit(resource.RLIMIT_CORE, (0, 0))
    case = sys.argv[1]
    tmux = sys.argv[sys.argv.index("--tmux") + 1] if "--tmux" in sys.argv else "tmux"
    name = f"repro-{os.getpid()}"
    t = lambda *a, **k: subprocess.run([tmux, "-L", name, "-f", "/dev/null", *a],
                                       capture_output=True, text=True, **k)
    t("new-session", "-d", "-s", "keep", "sleep 100000")
    t("new-session", "-d", "-s", "victim", "sleep 100000")
    pid = int(t("display-message", "-p", "#{pid}").stdout)
    sock_path = t("display-message", "-p", "#{socket_path}").stdout.strip()
    procs = []
    try:
        if case.startswith("identify"):
            s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
            s.connect(sock_path)
            r_in, w_in = os.pipe()
            r_out, w_out = os.pipe()
            flags = CLIENT_CONTROL | CLIENT_UTF8
            rest = (imsg(MSG["LONGFLAGS"], struct.pack("=Q", flags))
                    + imsg(MSG["TERM"], b"\0") + imsg(MSG["FEATURES"], struct.pack("=i", 0))
                    + imsg(MSG["TTYNAME"], b"\0") + imsg(MSG["CWD"], b"/\0")
                    + imsg(MSG["CLIENTPID"], struct.pack("=i", os.getpid())) + imsg(MSG["DONE"]))
            if case == "identify":
                # tmux -C's order: flags first, then the descriptors; we stop before DONE.
                s.sendall(imsg(MSG["FLAGS"], struct.pack("=i", flags)))
                socket.send_fds(s, [imsg(MSG["STDIN"], fd=True)], [r_in])
                socket.send_fds(s, [imsg(MSG["STDOUT"], fd=True)], [w_out])
                time.sleep(0.3)
                t("new-session", "-d", "-s", "new")   # every control client: %sessions-changed
                time.sleep(0.3)
                try:
                    s.sendall(rest)
                except BrokenPipeError:
                    pass  # the server is gone
            else:
                socket.send_fds(s, [imsg(MSG["STDIN"], fd=True)], [r_in])
                socket.send_fds(s, [imsg(MSG["STDOUT"], fd=True)], [w_out])
                time.sleep(0.3)
                t("new-session", "-d", "-s", "new")
                s.sendall(imsg(MSG["FLAGS"], struct.pack("=i", flags)) + rest)
            time.sleep(0.5)
        elif case.startswith("subscription"):
            pane = t("display-message", "-p", "-t", "victim", "#{pane_id}").stdout.strip()
            what = "%*" if case == "subscription" else pane
            p = subprocess.Popen([tmux, "-L", name, "-C", "attach", "-t", "victim"],
                                 stdin=subprocess.PIPE, stdout=subprocess.DEVNULL)
            procs.append(p)
            p.stdin.write(f"refresh-client -B 'x:{what}:#{{pane_title}}'\n".encode())
            p.stdin.flush()
            time.sleep(0.5)
            # A client slow to leave (a loaded machine, a reader that is not reading):
            os.kill(p.pid, 19)  # SIGSTOP
            t("kill-session", "-t", "victim")
            time.sleep(2.5)     # the subscription timer runs every second
            os.kill(p.pid, 18)  # SIGCONT
        else:
            sys.exit(f"unknown case {case}")
        try:
            # The state follows the parenthesised command name ("(tmux: server)" has a space).
            alive = open(f"/proc/{pid}/stat").read().rsplit(")", 1)[1].split()[0] not in "ZX"
        except FileNotFoundError:
            alive = False
        print(("survived" if alive else "CRASHED") + f": {case}, server {pid}, "
              + subprocess.run([tmux, "-V"], capture_output=True, text=True).stdout.strip())
        return 0 if alive else 1
    finally:
        for p in procs:
            p.kill()
        subprocess.run(["kill", "-9", str(pid)], capture_output=True)


if __name__ == "__main__":
    sys.exit(main())
