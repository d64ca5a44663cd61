#!/usr/bin/env bash
# Build a tmux from Debian's source package with debug symbols (-g -O0), for reproducing and
# debugging tmux crashes under the sidecar. Not used by the tests.
#
#   scripts/build-tmux.sh 3.3a-3     # bookworm's tmux  -> target/tmux/3.3a-3/tmux
#   scripts/build-tmux.sh 3.5a-3     # trixie's tmux    -> target/tmux/3.5a-3/tmux
#
# Needs: apt-get (deb-src entries are kept in a private apt state under target/tmux/apt, the
# system's sources are not touched), a C compiler, libevent-dev, libncurses-dev, bison,
# pkg-config. As root it installs the missing build dependencies.
set -euo pipefail
version=${1:?usage: build-tmux.sh DEBIAN_VERSION (e.g. 3.3a-3 or 3.5a-3)}
root=$(cd "$(dirname "$0")/.." && pwd)
out=$root/target/tmux/$version
apt=$root/target/tmux/apt

if [ "$(id -u)" = 0 ]; then
  missing=()
  for p in libevent-dev libncurses-dev bison pkg-config dpkg-dev; do
    dpkg -s "$p" >/dev/null 2>&1 || missing+=("$p")
  done
  if [ ${#missing[@]} -gt 0 ]; then
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${missing[@]}"
  fi
fi

mkdir -p "$apt/lists/partial" "$out"
cat >"$apt/sources.list" <<SRC
deb-src http://deb.debian.org/debian bookworm main
deb-src http://deb.debian.org/debian trixie main

SRC
aptopts=(-o "Dir::Etc::SourceList=$apt/sources.list" -o Dir::Etc::SourceParts=/dev/null
  -o "Dir::State::Lists=$apt/lists" -o APT::Sandbox::User=root)
apt-get "${aptopts[@]}" update -qq
cd "$out"
rm -rf src && mkdir src && cd src
apt-get "${aptopts[@]}" source -qq "tmux=$version"
dir=$(find . -maxdepth 1 -type d -name 'tmux-*' | head -1)
cd "$dir"
CFLAGS="-g -O0 -fno-omit-frame-pointer" ./configure -q --enable-debug >/dev/null 2>&1 ||
  CFLAGS="-g -O0 -fno-omit-frame-pointer" ./configure -q
make -s -j"$(nproc)" >/dev/null
cp tmux "$out/tmux"
"$out/tmux" -V
echo "built $out/tmux"
