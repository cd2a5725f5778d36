#!/bin/sh
# output-digests.sh BUILD_DIR OUT_FILE [INPUT...] - the SHA-256 of what
# hprof-shrink writes for each input in each mode, one "digest input mode"
# line per run, so that a refactor can prove its outputs byte-identical:
#
#   tools/output-digests.sh build before.txt      # on the old code
#   tools/output-digests.sh build after.txt       # on the new code
#   diff before.txt after.txt
#
# Inputs: the given files, else the bundled fixtures, ../shared/fixtures when
# present, and generated dumps (hprof-synth, both formats, with the NODATA
# record, and with several bitmaps) under $DIGEST_DIR (default BUILD/digests).
# Modes: every --arrays mode, with and without --keep-system-heaps, --redact
# and -z, at -j1 and -j2 (48 runs per input); DIGEST_FLAGS adds options to
# every run (e.g. --keep-names, to compare with code older than that rule).
set -eu
B=$1
OUT=$2
shift 2
D=${DIGEST_DIR:-$B/digests}
[ -x "$B/hprof-shrink" ] || { echo "output-digests: no $B/hprof-shrink (run make first)" >&2; exit 1; }
mkdir -p "$D"

if [ $# -eq 0 ]; then
    for f in fixtures/*.hprof.gz; do
        plain="$D/$(basename "$f" .gz)"
        [ -s "$plain" ] || gzip -dc "$f" > "$plain"
        set -- "$@" "$plain"
    done
    for f in ../shared/fixtures/*.hprof; do
        [ -f "$f" ] && set -- "$@" "$f"
    done
    [ -s "$D/synth-android.hprof" ] || "$B/hprof-synth" --scale 3 -f "$D/synth-android.hprof"
    [ -s "$D/synth-nodata.hprof" ] || "$B/hprof-synth" --nodata -f "$D/synth-nodata.hprof"
    [ -s "$D/synth-hotspot.hprof" ] || "$B/hprof-synth" --hotspot --scale 3 -f "$D/synth-hotspot.hprof"
    [ -s "$D/synth-big.hprof" ] || "$B/hprof-synth" --scale 40 --big-bitmap 9000000 -f "$D/synth-big.hprof"
    set -- "$@" "$D/synth-android.hprof" "$D/synth-nodata.hprof" "$D/synth-hotspot.hprof" \
        "$D/synth-big.hprof"
fi

: > "$OUT"
tmp="$D/out.$$"
trap 'rm -f "$tmp"' EXIT
for input in "$@"; do
    for arrays in empty zero remove; do
        for heaps in "" --keep-system-heaps; do
            for redact in "" --redact; do
                for gz in "" -z; do
                    for j in -j1 -j2; do
                        mode="--arrays=$arrays $heaps $redact $gz $j"
                        # shellcheck disable=SC2086 # the mode is words
                        if "$B/hprof-shrink" -q -f ${DIGEST_FLAGS:-} $mode "$input" "$tmp" 2> "$D/err.$$"; then
                            sum=$(sha256sum < "$tmp" | cut -c1-64)
                        else
                            sum="exit$?:$(head -c 200 "$D/err.$$" | tr '\n' ' ')"
                        fi
                        echo "$sum $(basename "$input") $mode" | tr -s ' ' >> "$OUT"
                    done
                done
            done
        done
    done
done
rm -f "$D/err.$$"
echo "$(wc -l < "$OUT") runs over $# inputs -> $OUT"
