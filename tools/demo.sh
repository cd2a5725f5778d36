#!/bin/sh
# demo.sh BUILD_DIR - the main job on a bundled fixture: shrink the
# Android-format dump and the HotSpot dump, show the report, verify.
# Outputs go to a fresh directory (mktemp -d), printed at the end, so that
# runs never meet each other's files.
set -eu
B=${1:-build}
out=$(mktemp -d "${TMPDIR:-/tmp}/hprof-shrink-demo.XXXXXX")
for f in fixtures/android-synth.hprof.gz fixtures/hotspot-fixture.hprof.gz; do
    n=$(basename "$f" .hprof.gz)
    "$B/hprof-shrink" --stats "$f" "$out/$n.shrunk.hprof"
    "$B/hprof-verify" "$out/$n.shrunk.hprof"
done
echo "outputs in $out"
