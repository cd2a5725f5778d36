#!/bin/sh
# demo.sh BUILD_DIR - the main job on a bundled fixture: shrink the
# Android-format dump and the HotSpot dump, show the report, verify.
set -eu
B=${1:-build}
out=${TMPDIR:-/tmp}/hprof-shrink-demo
mkdir -p "$out"
for f in fixtures/android-synth.hprof.gz fixtures/hotspot-fixture.hprof.gz; do
    n=$(basename "$f" .hprof.gz)
    "$B/hprof-shrink" -f --stats "$f" "$out/$n.shrunk.hprof"
    "$B/hprof-verify" "$out/$n.shrunk.hprof"
done
echo "outputs in $out"
