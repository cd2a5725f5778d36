#!/bin/sh
# fuzz.sh BUILD_DIR SECONDS - run each libFuzzer target for SECONDS.
# Seeds come from the generator and the fixtures; what libFuzzer learns is
# kept in BUILD_DIR/fuzz/corpus-TARGET between runs; crashers land in
# BUILD_DIR/fuzz/ (minimise them with -minimize_crash=1 and commit them
# under tests/fuzz/corpus/TARGET/ so `make check` replays them).
set -eu
B=$1
SECONDS_EACH=$2
F=$B/fuzz
mkdir -p "$F/seeds"
# Small seeds keep executions fast: the generator's dumps are ~100 KB, so
# only their first records seed directly; the hand-made cases are tiny.
"$B/hprof-synth" -f --hotspot "$F/seeds/hotspot.hprof"
"$B/hprof-synth" -f --big-bitmap 4096 --nodata "$F/seeds/android.hprof"
# A whole small Android dump (130 KB: its bitmaps, merged copies and put-aside
# instances come after the population) seeds every target, and every target
# reads whole inputs of up to 256 KB: with the first 16 KB only, the reader,
# verify and info targets never reached a dump's later records, nor a flipped
# segment tag or a class chain.
"$B/hprof-synth" -f --scale 1 --big-bitmap 4096 "$F/seeds/android-whole.hprof"
"$B/hprof-synth" -f --class-chain 2000 --leaf-first "$F/seeds/class-chain.hprof"
cp "$B"/hostile/*.hprof "$F/seeds/" 2>/dev/null || true
status=0
for t in reader shrink verify info; do
    corpus=$F/corpus-$t
    mkdir -p "$corpus"
    for s in "$F"/seeds/*.hprof; do
        if [ $t = shrink ]; then # the first byte picks the --arrays mode
            for m in 0 1 2 3; do printf "\\00$m" | cat - "$s" > "$corpus/seed-$m-$(basename "$s")"; done
        else
            cp "$s" "$corpus/"
        fi
    done
    echo "===> fuzz_$t for $SECONDS_EACH s"
    set +e
    max_len=262144
    "$F/fuzz_$t" -max_total_time="$SECONDS_EACH" -max_len=$max_len -rss_limit_mb=2048 \
        -malloc_limit_mb=512 -timeout=10 -print_final_stats=1 -artifact_prefix="$F/$t-" \
        "$corpus" tests/fuzz/corpus/$t > "$F/$t.log" 2>&1
    rc=$?
    set -e
    grep -E '^stat::number_of_executed_units|^stat::peak_rss_mb' "$F/$t.log" | sed "s/^/fuzz_$t: /"
    if [ $rc -ne 0 ]; then
        echo "fuzz_$t FAILED (exit $rc): see $F/$t.log" >&2
        tail -30 "$F/$t.log" >&2
        status=1
    fi
done
exit $status
