#!/bin/sh
# make-hotspot-fixture.sh OUT.hprof.gz - dump FixtureApp's heap with jcmd.
# Needs a JDK (javac, java, jcmd).  The dump is taken plain and compressed
# with gzip -9n, so the committed file is small and gunzips exactly.
set -eu
out=${1:-fixtures/hotspot-fixture.hprof.gz}
here=$(cd "$(dirname "$0")" && pwd)
work=$(mktemp -d)
trap 'kill "$pid" 2>/dev/null || true; rm -rf "$work"' EXIT
javac -d "$work" "$here/java/FixtureApp.java"
# A small serial heap keeps the dump to a few MB; no CDS so that every
# object the roots name is in the dump.
java -Xmx24m -XX:+UseSerialGC -Xshare:off -cp "$work" FixtureApp > "$work/log" 2>&1 &
pid=$!
i=0
until grep -q ready "$work/log"; do
    i=$((i + 1))
    [ $i -lt 300 ] || { echo "FixtureApp did not start" >&2; cat "$work/log" >&2; exit 1; }
    sleep 0.1
done
jcmd "$pid" GC.heap_dump "$work/dump.hprof" >/dev/null
gzip -9n < "$work/dump.hprof" > "$out"
echo "$out: $(wc -c < "$work/dump.hprof") bytes plain, $(wc -c < "$out") gzipped"
