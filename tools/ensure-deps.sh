#!/bin/sh
# ensure-deps.sh build|check|fuzz|cluster - install the Debian packages a make target needs.
# As root it runs apt-get; otherwise it prints the exact command and fails,
# so a missing dependency is never silently skipped.
set -eu
what=${1:-build}
pkgs="libssl-dev zlib1g-dev libzstd-dev pkg-config gcc make"
[ "${DEFLATE:-libdeflate}" = libdeflate ] && pkgs="$pkgs libdeflate-dev"
if [ "$what" = fuzz ]; then
    pkgs="$pkgs clang libclang-rt-14-dev"
fi
if [ "$what" = cluster ]; then
    pkgs="$pkgs slurm-wlm munge jq"
fi
if [ "$what" = check ]; then
    pkgs="$pkgs check hprof-conv visualvm default-jdk-headless gzip zstd man-db python3 time strace"
fi
missing=""
for p in $pkgs; do
    # a JDK already on PATH (JDK 17 is preinstalled on our machines) will do
    if [ "$p" = default-jdk-headless ] && command -v javac >/dev/null 2>&1 && command -v jcmd >/dev/null 2>&1; then
        continue
    fi
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed' || missing="$missing $p"
done
[ -z "$missing" ] && exit 0
if [ "$(id -u)" = 0 ]; then
    echo "ensure-deps: installing$missing" >&2
    DEBIAN_FRONTEND=noninteractive apt-get install -y -q $missing >&2 ||
        { apt-get update -q >&2 && DEBIAN_FRONTEND=noninteractive apt-get install -y -q $missing >&2; }
else
    echo "ensure-deps: missing packages:$missing" >&2
    echo "ensure-deps: run: sudo apt-get install -y$missing" >&2
    exit 1
fi
