#!/usr/bin/env bash
# Builds the Debian package into target/debian/: the release binary, the man pages and the
# bash/zsh/fish completions generated from it (`thinkterm-sidecar man`, `completions`: never
# written by hand), the systemd user unit (not enabled), the tmux plugin and snippets, the docs.
# Installs cargo-deb when it is missing. Prints the package's path on the last line.
#
#   packaging/build-deb.sh            then: dpkg -i target/debian/thinkterm-sidecar_*.deb
set -euo pipefail
cd "$(dirname "$0")/.."

if ! cargo deb --version >/dev/null 2>&1; then
    echo "build-deb: installing cargo-deb" >&2
    cargo install cargo-deb --locked
fi

cargo build --release --locked
bin=target/release/thinkterm-sidecar
out=target/packaging
rm -rf "$out"
mkdir -p "$out/man" "$out/completions"
"$bin" man --out "$out/man"
"$bin" completions bash >"$out/completions/thinkterm-sidecar.bash"
"$bin" completions zsh >"$out/completions/_thinkterm-sidecar"
"$bin" completions fish >"$out/completions/thinkterm-sidecar.fish"

rm -f target/debian/thinkterm-sidecar_*.deb
cargo deb --no-build --locked >&2
ls target/debian/thinkterm-sidecar_*.deb
