#!/bin/sh
# bench.sh BUILD_DIR - the benchmark of `make bench`.
#
# Prepares HotSpot dumps (BenchHeap.java via jcmd) and Android-format dumps
# (hprof-synth) of about 20 MB, 300 MB and 2 GB, then times, in the same run
# so that figures are comparable on a noisy machine: the baselines (cat to
# /dev/null, cat to a file, gzip -1 and pigz -1 of the shrunk output) and
# ours (a read-only pass, a round trip, hprof-shrink in each --arrays mode,
# with --sync (fsync before the rename: cat does not), and with --gzip at
# levels 1 and 6).  Each command runs RUNS times (default
# 3) under bench-time, which times the command alone (fork to wait4, no
# shell); the table shows the median wall time, throughput in MB/s of input,
# the ratio to `cat IN > OUT` on the same input, peak RSS, output size and
# the cores used (median user + system time over median wall time).
# That ratio's baseline is run interleaved with the command: one `cat IN >
# OUT` before each of its runs, and the ratio is of the two medians.  This
# machine's writes can be 2-3x slower for a minute (the 2 GB copy took
# 0.90 s and 2.58 s ten minutes apart); timed side by side, a slow minute
# weighs on both sides instead of deciding the ratio.
#
# Bitmap-heavy inputs of about 300 MB and 2 GB (the sizes of SIZES from
# 300 up) add the path that finds and merges identical Bitmap buffers: a
# HotSpot dump of tools/java/BitmapHeap.java, its `jcmd GC.heap_dump -gz=1`
# twin, and an Android-style one (hprof-synth --pixels).  They are made
# afresh on every run and timed first as the JVM or the generator leaves
# them in the page cache ("fresh": in the small pages their writes made),
# then re-read as the other inputs are (cache_as_read).  The -gz=1 input's
# ratio is to `gzip -dc IN > /dev/null`.
#
# Object-rich HotSpot dumps (tools/java/ObjectRichHeap.java, about four
# records per KB) of the sizes of SIZES from 300 up, cached as the plain
# ones are: the default shrink and each forced path against `cat IN > OUT`.
#
# Through a pipe, the dumps of PIPE_SIZE (default the largest of SIZES):
# `cat IN | cat > OUT` is the baseline, `cat IN | hprof-shrink - OUT` the
# spool-then-shrink (with --multi-pass once the tool knows it), and
# `cat IN | hprof-shrink --one-pass - OUT` runs with TMPDIR a directory
# nobody can write, so that a run which spools fails; its row is followed
# by its ratio to the spool-then-shrink.  The -gz=1 dump goes through a
# pipe as well, against `gzip -dc`.  The one-pass output's size is compared
# with the multi-pass one's on every dump, with the window_ keys of its
# --json report.  Rows that need --one-pass say "not available" while
# `hprof-shrink --help` does not name it.
#
# zstd: -z, -z1, --zstd and --zstd=19 on a shrunk output (of the largest
# plain HotSpot dump: about 230 MB at 2 GB) against gzip -1, gzip -6 and
# zstd -3, and --zstd=19 on the plain dumps under 1 GiB.  The level-19 rows
# run SLOW_RUNS times (default 1; 0 skips them): they take 0.4-0.6 s per
# MB of output on two cores.
#
# Environment: BENCH_DIR (default build/bench), RUNS, SIZES (default
# "20 300 2000", in MB), THREADS (default: cores), CHAIN (classes in the
# class-chain inputs, default 1000000; 0 skips them), PIPE_SIZE, SLOW_RUNS.
set -eu
B=${1:-build}
D=${BENCH_DIR:-$B/bench}
RUNS=${RUNS:-3}
SIZES=${SIZES:-20 300 2000}
THREADS=${THREADS:-$(nproc)}
PIPE_SIZE=${PIPE_SIZE:-$(printf '%s\n' $SIZES | sort -n | tail -n 1)}
SLOW_RUNS=${SLOW_RUNS:-1}
mkdir -p "$D"
results="$D/results.txt"

# What the tool can do: the one-pass rows run only if it names --one-pass.
shrink_help=$("$B/hprof-shrink" --help 2>&1 || true)
names_option() { case $shrink_help in *"$1"*) return 0 ;; esac; return 1; }
one_pass=; names_option --one-pass && one_pass=--one-pass
multi_pass=; names_option --multi-pass && multi_pass=--multi-pass

# A TMPDIR nobody can write, root included (chattr +i), for the one-pass
# rows: a run that tries to spool its input there fails.  Its immutable
# flag is taken off on the way out, or `make clean` could not remove it.
no_tmp="$D/no-tmp"
release_no_tmp() { chattr -i "$no_tmp" 2>/dev/null || true; }
make_no_tmp() {
    release_no_tmp
    rm -rf "$no_tmp"
    mkdir -p "$no_tmp"
    chmod 555 "$no_tmp"
    [ "$(id -u)" != 0 ] || chattr +i "$no_tmp" 2>/dev/null || true
    if (: > "$no_tmp/probe") 2>/dev/null; then
        rm -f "$no_tmp/probe"
        echo "bench: cannot make $no_tmp unwritable; one-pass rows only check it is empty after" >&2
    fi
}
trap release_no_tmp EXIT
trap 'exit 130' INT TERM

free_mb() { df -Pm "$D" | awk 'NR == 2 { print $4 }'; }

# Start the JVM program tools/java/CLASS.java holding about SIZE_MB of heap
# and wait (at most TRIES quarter-seconds) until it says "ready"; $pid is
# its process.  @return 1 with no JDK or no "ready".
start_jvm() { # CLASS SIZE_MB TRIES
    command -v jcmd >/dev/null || { echo "bench: no JDK, skipping HotSpot inputs" >&2; return 1; }
    mkdir -p "$D/java"
    javac -d "$D/java" -sourcepath tools/java "tools/java/$1.java"
    java -Xmx$(( $2 * 2 + 200 ))m -XX:+UseParallelGC -cp "$D/java" "$1" "$2" > "$D/java/log" 2>&1 &
    pid=$!
    i=0
    until grep -q ready "$D/java/log"; do
        i=$((i + 1)); [ $i -lt "$3" ] || { kill $pid; return 1; }
        sleep 0.25
    done
}

jvm_dump() { # CLASS SIZE_MB OUT
    [ -s "$3" ] && return 0
    start_jvm "$1" "$2" 1200 || return 1
    jcmd $pid GC.heap_dump "$(cd "$(dirname "$3")" && pwd)/$(basename "$3")" > /dev/null
    kill $pid; wait $pid 2>/dev/null || true
}

hotspot_dump() { # SIZE_MB OUT
    jvm_dump BenchHeap "$1" "$2"
}

# About four records per KB: Strings, collections, boxed numbers, Bitmaps.
object_rich_dump() { # SIZE_MB OUT
    jvm_dump ObjectRichHeap "$1" "$2"
}

# A bitmap-heavy HotSpot dump and its -gz=1 twin, from the same JVM.
hotspot_bitmap_dump() { # SIZE_MB OUT OUT_GZ
    rm -f "$2" "$3"
    start_jvm BitmapHeap "$1" 2400 || return 1
    dir=$(cd "$(dirname "$2")" && pwd)
    jcmd $pid GC.heap_dump -gz=1 "$dir/$(basename "$3")" > /dev/null
    jcmd $pid GC.heap_dump "$dir/$(basename "$2")" > /dev/null
    kill $pid; wait $pid 2>/dev/null || true
}

# A bitmap-heavy Android-style dump: about 40% ordinary objects (--scale
# rounds of about 90 KB), 60% pixels in Bitmaps of the usual sizes.
android_bitmap_dump() { # SIZE_MB OUT
    rm -f "$2"
    "$B/hprof-synth" --scale $(( $1 * 400 / 90 )) --pixels $(( $1 * 600000 )) -f "$2"
}

android_dump() { # SIZE_MB OUT
    [ -s "$2" ] && return 0
    # one --scale round is about 90 KB; a large bitmap of 1/8 of the size
    "$B/hprof-synth" --scale $(( $1 * 1000 / 90 )) --big-bitmap $(( $1 * 131072 )) -f "$2"
}

median() { sort -n | awk '{ a[NR] = $1 } END { print a[int((NR + 1) / 2)] }'; }

# Put FILE in the page cache as a read from disk would: drop what is cached
# of it, then read it.  How it got cached matters to a mapped reader: a file
# cached by the small writes that made it (cp, jcmd) sits in 4 KiB pages,
# one read back in large folios, and the shrink of the HotSpot 300 MB dump
# took 14.6k page faults and 0.12 s against 5k and 0.08 s.  cat does not
# care (0.104 and 0.106 s).  Every row of an input starts from this state.
cache_as_read() {
    dd if="$1" iflag=nocache count=0 status=none
    cat "$1" > /dev/null
}

# run LABEL INPUT OUTPUT [-i STDIN | -p PIPED] [-o STDOUT] -- COMMAND...:
# time RUNS runs with bench-time (wall time of the command alone, from fork
# to wait4, and its peak RSS), print one row.  OUTPUT is the file whose
# size is shown, - for none.  Each run writes a new file with nothing else
# left to write back: the previous output is removed and dirty pages synced
# before the clock starts, so that no command pays for freeing another's
# output (a 300 MB one takes 80 ms to truncate here) or for its writeback.
# The baseline run before each (with `pair` set) is `cat pair > OUT`, or
# with pair_pipe set `cat pair | cat > OUT`.  A failed command ends the
# bench, unless may_fail is set: then the row says so and run returns 1.
run() {
    r_label=$1 r_in=$2 r_out=$3; shift 3
    : > "$D/times"
    : > "$D/cat_times"
    : > "$D/cpu_times"
    rss=0
    for i in $(seq "$RUNS"); do
        if [ -n "${pair:-}" ]; then # the baseline, just before
            rm -f "$D/cat.out"
            sync
            if [ -n "${pair_pipe:-}" ]; then
                "$B/bench-time" -c -p "$pair" -o "$D/cat.out" -- cat > "$D/time1"
            else
                "$B/bench-time" -c -o "$D/cat.out" -- cat "$pair" > "$D/time1"
            fi
            read -r secs1 kb cpu1 < "$D/time1"
            echo "$secs1" >> "$D/cat_times"
            rm -f "$D/cat.out"
        fi
        [ "$r_out" = - ] || rm -f "$r_out"
        sync
        r_status=0
        "$B/bench-time" -c "$@" > "$D/time1" || r_status=$?
        if [ "$r_status" != 0 ]; then
            [ -n "${may_fail:-}" ] || { echo "bench: $r_label failed (exit $r_status)" >&2; exit 1; }
            printf "%-26s %-34s failed (exit %s)\n" "$(basename "$r_in")" "$r_label" "$r_status" |
                tee -a "$results"
            return 1
        fi
        read -r secs1 kb cpu1 < "$D/time1"
        echo "$secs1" >> "$D/times"
        echo "$cpu1" >> "$D/cpu_times"
        [ "$kb" -gt "$rss" ] && rss=$kb
    done
    secs=$(median < "$D/times")
    cpu=$(median < "$D/cpu_times")
    base=${cat_secs:-0}
    [ -n "${pair:-}" ] && base=$(median < "$D/cat_times")
    size=$(stat -c %s "$r_in")
    outsize=-
    [ "$r_out" != - ] && [ -f "$r_out" ] && outsize=$(awk -v b="$(stat -c %s "$r_out")" 'BEGIN { printf "%.1f", b / 1048576 }')
    awk -v l="$r_label" -v n="$(basename "$r_in")" -v s="$secs" -v b="$size" -v c="$base" \
        -v r="$rss" -v o="$outsize" -v u="$cpu" 'BEGIN {
            mbps = s > 0 ? b / 1048576 / s : 0
            x = c > 0 ? sprintf("%.2f", s / c) : "-"
            k = s > 0 ? u / s : 0
            printf "%-26s %-34s %8.3f %9.0f %7s %8.1f %9s %5.2f\n", n, l, s, mbps, x, r / 1024, o, k
        }' | tee -a "$results"
}

if [ "$(id -u)" = 0 ] && ! command -v pigz >/dev/null; then
    DEBIAN_FRONTEND=noninteractive apt-get install -y -q pigz > /dev/null 2>&1 || true
fi

inputs="" bitmap_sizes="" rich_inputs=""
for size in $SIZES; do
    need=$(( size * 6 )) # three dumps of the size, outputs, and room to spare
    if [ "$(free_mb)" -lt "$need" ]; then
        echo "bench: $size MB inputs skipped: $(free_mb) MB free, $need MB needed" >&2
        continue
    fi
    hotspot_dump "$size" "$D/hotspot-$size.hprof" && inputs="$inputs $D/hotspot-$size.hprof"
    android_dump "$size" "$D/android-$size.hprof" && inputs="$inputs $D/android-$size.hprof"
    [ "$size" -ge 300 ] && bitmap_sizes="$bitmap_sizes $size"
    [ "$size" -ge 300 ] && object_rich_dump "$size" "$D/object-rich-$size.hprof" &&
        rich_inputs="$rich_inputs $D/object-rich-$size.hprof"
done

{
    echo "hprof-shrink benchmark, $(date -u +%Y-%m-%dT%H:%MZ), $(nproc) cores, $RUNS runs (median), threads $THREADS, load $(cut -d' ' -f1-3 /proc/loadavg)"
    printf "%-26s %-34s %8s %9s %7s %8s %9s %5s\n" input command wall_s MB/s x_cat rss_MB out_MB cores
} | tee "$results"
o="$D/out.hprof"

# The shrink of a bitmap-heavy input as it was left in the page cache, then
# re-read; the -gz=1 input against gzip -dc.  (run() sets `size`: the
# loops over sizes use other names.)
bitmap_rows() { # IN
    in=$1
    cat_secs= pair=
    run "cat IN > OUT (fresh)" "$in" "$o" -o "$o" -- cat "$in"
    cat_secs=$(median < "$D/times") pair=$in
    run "shrink (fresh)" "$in" "$o" -- "$B/hprof-shrink" -q -f "$in" "$o"
    cache_as_read "$in"
    cat_secs= pair=
    run "cat IN > /dev/null" "$in" - -- cat "$in"
    run "cat IN > OUT" "$in" "$o" -o "$o" -- cat "$in"
    cat_secs=$(median < "$D/times") pair=$in
    run "shrink --arrays=empty" "$in" "$o" -- "$B/hprof-shrink" -q -f "$in" "$o"
    run "shrink --arrays=empty -j1" "$in" "$o" -- "$B/hprof-shrink" -q -f -j1 "$in" "$o"
    run "shrink --sync" "$in" "$o" -- "$B/hprof-shrink" -q -f --sync "$in" "$o"
    "$B/hprof-shrink" -q -f "$in" "$D/shrunk.hprof"
    if command -v pigz >/dev/null; then
        run "pigz -p $THREADS -6 (shrunk empty)" "$D/shrunk.hprof" "$o" \
            -i "$D/shrunk.hprof" -o "$o" -- pigz -p "$THREADS" -6
    fi
    for level in 1 6; do
        run "shrink empty -z$level -j$THREADS" "$in" "$o" \
            -- "$B/hprof-shrink" -q -f -z$level -j$THREADS "$in" "$o"
    done
}

gz_rows() { # IN.gz
    in=$1
    cache_as_read "$in"
    cat_secs= pair=
    run "gzip -dc IN > /dev/null" "$in" - -- gzip -dc "$in"
    cat_secs=$(median < "$D/times")
    run "shrink IN.gz (x gzip -dc)" "$in" "$o" -- "$B/hprof-shrink" -q -f "$in" "$o"
    run "cat IN.gz | shrink ${multi_pass:+$multi_pass }-" "$in" "$o" -p "$in" \
        -- "$B/hprof-shrink" -q -f $multi_pass - "$o"
    one_pass_row "$in" "cat IN.gz | shrink --one-pass -" "$(median < "$D/times")" - -p "$in"
}

# A row of the tool that cannot be run yet.
not_available() { # IN LABEL
    printf "%-26s %-34s not available: hprof-shrink --help names no --one-pass\n" \
        "$(basename "$1")" "$2" | tee -a "$results"
}

# One-pass run with the unwritable TMPDIR, then a line with its ratio to
# MULTI_SECS (the multi-pass row's median, 0 for none) and what is in
# TMPDIR.  SHRINK_IN is the shrink's input (- for standard input),
# BENCH_TIME_OPTIONS what run() passes to bench-time before `--`.
one_pass_row() { # IN LABEL MULTI_SECS SHRINK_IN [BENCH_TIME_OPTIONS...]
    op_in=$1 op_label=$2 op_multi=$3 op_src=$4; shift 4
    if [ -z "$one_pass" ]; then
        not_available "$op_in" "$op_label"
        return 0
    fi
    make_no_tmp
    op_ok=yes
    may_fail=yes
    run "$op_label" "$op_in" "$o" "$@" -- env TMPDIR="$no_tmp" \
        "$B/hprof-shrink" -q -f --one-pass "$op_src" "$o" || op_ok=
    may_fail=
    [ -n "$op_ok" ] || return 0
    op_files=$(ls -A "$no_tmp")
    awk -v s="$secs" -v m="$op_multi" -v t="${op_files:-nothing}" -v d="$no_tmp" 'BEGIN {
        x = m > 0 ? sprintf("%.2f", s / m) : "-"
        printf "%-26s %-34s x multi-pass %s; written to TMPDIR (unwritable): %s\n", "", "", x, t
    }' | tee -a "$results"
}

# Through a pipe, as a dump comes from kubectl exec, adb exec-out or ssh:
# against `cat IN | cat > OUT`, today's spool-then-shrink and the one pass.
pipe_rows() { # IN
    p_in=$1
    cache_as_read "$p_in"
    cat_secs= pair= pair_pipe=
    run "cat IN | cat > OUT" "$p_in" "$o" -p "$p_in" -o "$o" -- cat
    cat_secs=$(median < "$D/times") pair=$p_in pair_pipe=yes
    run "cat IN | shrink ${multi_pass:+$multi_pass }-" "$p_in" "$o" -p "$p_in" \
        -- "$B/hprof-shrink" -q -f $multi_pass - "$o"
    one_pass_row "$p_in" "cat IN | shrink --one-pass -" "$(median < "$D/times")" - -p "$p_in"
    pair= pair_pipe=
}

# The one-pass output's size against the multi-pass one's, and the window_
# keys of its --json report (not timed).
one_pass_size() { # IN
    s_in=$1
    if [ -z "$one_pass" ]; then
        not_available "$s_in" "size one-pass / multi-pass"
        return 0
    fi
    make_no_tmp
    "$B/hprof-shrink" -q -f $multi_pass "$s_in" "$D/multi.hprof"
    if ! cat "$s_in" | TMPDIR="$no_tmp" "$B/hprof-shrink" -q -f --one-pass --json - \
            "$D/one.hprof" > "$D/one.json" 2> "$D/one.err"; then
        printf "%-26s %-34s failed: %s\n" "$(basename "$s_in")" "size one-pass / multi-pass" \
            "$(head -n 1 "$D/one.err")" | tee -a "$results"
        return 0
    fi
    awk -v n="$(basename "$s_in")" -v a="$(stat -c %s "$D/one.hprof")" \
        -v b="$(stat -c %s "$D/multi.hprof")" 'BEGIN {
        r = b > 0 ? a / b : 0
        printf "%-26s %-34s %.1f / %.1f MB = %.4f (target <= 1.01)\n", n,
            "size one-pass / multi-pass", a / 1048576, b / 1048576, r
    }' | tee -a "$results"
    window=$(grep -oE '"window_[a-z_]*": *(\{[^}]*\}|[0-9]+)' "$D/one.json" | tr -d '"' |
        tr '\n' ' ')
    printf "%-26s %-34s %s\n" "" "window report" "${window:-no window_ keys in --json}" |
        tee -a "$results"
    rm -f "$D/one.hprof" "$D/multi.hprof" "$D/one.json" "$D/one.err"
}

# An object-rich dump on its file: the default path and each forced one.
object_rich_rows() { # IN
    in=$1
    cache_as_read "$in"
    cat_secs= pair=
    run "cat IN > /dev/null" "$in" - -- cat "$in"
    run "cat IN > OUT" "$in" "$o" -o "$o" -- cat "$in"
    cat_secs=$(median < "$D/times") pair=$in
    run "read-only pass" "$in" - -- "$B/tests/hprof-roundtrip" --scan "$in"
    run "shrink" "$in" "$o" -- "$B/hprof-shrink" -q -f "$in" "$o"
    forced_path_rows "$in"
}

# The shrink of a file on each path forced, when the tool has both.
forced_path_rows() { # IN
    f_in=$1 f_multi=0
    if [ -n "$multi_pass" ]; then
        run "shrink --multi-pass" "$f_in" "$o" -- "$B/hprof-shrink" -q -f --multi-pass "$f_in" "$o"
        f_multi=$(median < "$D/times")
    fi
    one_pass_row "$f_in" "shrink --one-pass" "$f_multi" "$f_in"
}

# Compressed output of an already shrunk dump (SHRUNK, about 230 MB at the
# default sizes): gzip and zstd levels against gzip(1) and zstd(1).
zstd_rows() { # SHRUNK
    z_in=$1
    cache_as_read "$z_in"
    cat_secs= pair=
    run "cat IN > OUT" "$z_in" "$o" -o "$o" -- cat "$z_in"
    cat_secs=$(median < "$D/times") pair=$z_in
    for level in 1 6; do
        run "gzip -$level" "$z_in" "$o" -i "$z_in" -o "$o" -- gzip -$level
    done
    command -v zstd >/dev/null &&
        run "zstd -3 -T$THREADS" "$z_in" "$o" -i "$z_in" -o "$o" -- zstd -q -3 -T"$THREADS"
    for z in -z -z1 --zstd; do
        run "shrink $z -j$THREADS" "$z_in" "$o" -- "$B/hprof-shrink" -q -f $z -j$THREADS "$z_in" "$o"
    done
    slow_run "shrink --zstd=19 -j$THREADS" "$z_in" "$o" \
        -- "$B/hprof-shrink" -q -f --zstd=19 -j$THREADS "$z_in" "$o"
    pair=
}

# run() with SLOW_RUNS runs: for the rows that take minutes.
slow_run() {
    [ "$SLOW_RUNS" -gt 0 ] || return 0
    slow_saved=$RUNS
    RUNS=$SLOW_RUNS
    run "$@"
    RUNS=$slow_saved
}

for bsize in $bitmap_sizes; do
    need=$(( bsize * 5 ))
    if [ "$(free_mb)" -lt "$need" ]; then
        echo "bench: $bsize MB bitmap inputs skipped: $(free_mb) MB free, $need MB needed" >&2
        continue
    fi
    hs="$D/hotspot-bitmaps-$bsize.hprof"
    if hotspot_bitmap_dump "$bsize" "$hs" "$hs.gz"; then
        bitmap_rows "$hs"
        gz_rows "$hs.gz"
        [ "$bsize" != "$PIPE_SIZE" ] || pipe_rows "$hs"
        one_pass_size "$hs"
    fi
    an="$D/android-bitmaps-$bsize.hprof"
    if android_bitmap_dump "$bsize" "$an"; then
        bitmap_rows "$an"
        [ "$bsize" != "$PIPE_SIZE" ] || pipe_rows "$an"
        one_pass_size "$an"
    fi
    rm -f "$hs" "$hs.gz" "$an"
done

for in in $inputs; do
    cache_as_read "$in"
    cat_secs= pair=
    run "cat IN > /dev/null" "$in" - -- cat "$in"
    run "cat IN > OUT" "$in" "$o" -o "$o" -- cat "$in"
    cat_secs=$(median < "$D/times") pair=$in
    run "read-only pass" "$in" - -- "$B/tests/hprof-roundtrip" --scan "$in"
    run "round trip" "$in" "$o" -- "$B/tests/hprof-roundtrip" "$in" "$o"
    for mode in empty zero remove; do
        run "shrink --arrays=$mode" "$in" "$o" -- "$B/hprof-shrink" -q -f --arrays=$mode "$in" "$o"
    done
    run "shrink --sync" "$in" "$o" -- "$B/hprof-shrink" -q -f --sync "$in" "$o"
    forced_path_rows "$in"
    # --gzip against the baselines compressing the same (already shrunk) output
    for mode in empty zero; do
        "$B/hprof-shrink" -q -f --arrays=$mode "$in" "$D/shrunk.hprof"
        run "gzip -1 (shrunk $mode)" "$D/shrunk.hprof" "$o" -i "$D/shrunk.hprof" -o "$o" -- gzip -1
        if command -v pigz >/dev/null; then
            for level in 1 6; do
                run "pigz -p $THREADS -$level (shrunk $mode)" "$D/shrunk.hprof" "$o" \
                    -i "$D/shrunk.hprof" -o "$o" -- pigz -p "$THREADS" -$level
            done
        fi
        for level in 1 6; do
            run "shrink $mode -z$level -j$THREADS" "$in" "$o" \
                -- "$B/hprof-shrink" -q -f --arrays=$mode -z$level -j$THREADS "$in" "$o"
        done
        # --zstd (for uploads) against zstd(1) on the same shrunk output
        if command -v zstd >/dev/null; then
            run "zstd -1 (shrunk $mode)" "$D/shrunk.hprof" "$o" -i "$D/shrunk.hprof" -o "$o" \
                -- zstd -q -1 -T"$THREADS"
        fi
        run "shrink $mode --zstd -j$THREADS" "$in" "$o" \
            -- "$B/hprof-shrink" -q -f --arrays=$mode --zstd -j$THREADS "$in" "$o"
    done
    [ "$(stat -c %s "$in")" -ge 1073741824 ] ||
        slow_run "shrink empty --zstd=19 -j$THREADS" "$in" "$o" \
            -- "$B/hprof-shrink" -q -f --zstd=19 -j$THREADS "$in" "$o"
    one_pass_size "$in"
    case $in in *-"$PIPE_SIZE".hprof) pipe_rows "$in" ;; esac
done

for in in $rich_inputs; do
    object_rich_rows "$in"
    one_pass_size "$in"
    case $in in *-"$PIPE_SIZE".hprof) pipe_rows "$in" ;; esac
done

# The largest plain HotSpot dump's shrunk output, for the compression rows.
zstd_in=
for size in $(printf '%s\n' $SIZES | sort -n); do
    case " $inputs " in *" $D/hotspot-$size.hprof "*) zstd_in=$D/hotspot-$size.hprof ;; esac
done
if [ -n "$zstd_in" ]; then
    "$B/hprof-shrink" -q -f "$zstd_in" "$D/shrunk.hprof"
    zstd_rows "$D/shrunk.hprof"
fi
# Class graphs: CHAIN classes chained by superclass, listed root first and
# leaf first (leaf first is the order that would cost the square of the
# classes if superclasses were resolved by searching), against a read of the
# file.  CHAIN=0 skips them.
CHAIN=${CHAIN:-1000000}
if [ "$CHAIN" -gt 0 ]; then
    for order in root leaf; do
        in="$D/chain-$order-first.hprof"
        flag=; [ $order = leaf ] && flag=--leaf-first
        "$B/hprof-synth" -f --class-chain "$CHAIN" $flag "$in"
        cache_as_read "$in"
        cat_secs= pair=
        run "cat IN > /dev/null" "$in" - -- cat "$in"
        cat_secs=$(median < "$D/times")
        run "shrink" "$in" "$o" -- "$B/hprof-shrink" -q -f "$in" "$o"
        run "verify" "$in" - -o "$D/tool.out" -- "$B/hprof-verify" "$in"
        run "info" "$in" - -o "$D/tool.out" -- "$B/hprof-info" "$in"
        rm -f "$in" "$D/tool.out"
    done
fi
rm -f "$o" "$D/shrunk.hprof" "$D/cat.out"
release_no_tmp
rm -rf "$no_tmp"
echo "results in $results"
