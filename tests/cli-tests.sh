#!/bin/sh
# cli-tests.sh - the command-line tools end to end, and real analyzers
# (hprof-conv, VisualVM's heap library) reading what libhprof writes.
# Run by `make check`; HPROF_BUILD names the build directory.
set -eu
B=${HPROF_BUILD:-build}
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT
fails=0
die() { echo "FAIL: $*" >&2; fails=$((fails + 1)); }
banner() { echo "===> $*"; }

HPROF_CONV=/usr/lib/android-sdk/platform-tools/hprof-conv
VISUALVM_JAR=/usr/share/visualvm/visualvm/modules/org-graalvm-visualvm-lib-jfluid-heap.jar
[ -x "$HPROF_CONV" ] || { echo "FAIL: $HPROF_CONV missing (apt-get install hprof-conv)" >&2; exit 1; }
[ -f "$VISUALVM_JAR" ] || { echo "FAIL: $VISUALVM_JAR missing (apt-get install visualvm)" >&2; exit 1; }
command -v javac >/dev/null || { echo "FAIL: javac missing (apt-get install default-jdk-headless)" >&2; exit 1; }
command -v strace >/dev/null || { echo "FAIL: strace missing (apt-get install strace)" >&2; exit 1; }

mkdir -p "$T/java"
javac -d "$T/java" -cp "$VISUALVM_JAR" tests/java/HeapCount.java
heapcount() { java -cp "$VISUALVM_JAR:$T/java" HeapCount "$1"; }

# expect CODE CMD... : run CMD, check its exit status
expect() {
    want=$1; shift
    set +e
    "$@" > "$T/out" 2> "$T/err"
    got=$?
    set -e
    [ "$got" = "$want" ] || die "'$*' exited $got, expected $want: $(cat "$T/err")"
}

banner "generator reproduces the committed fixtures"
for mode in android hotspot; do
    flag=--$mode
    "$B/hprof-synth" $flag --manifest "$T/$mode.manifest" "$T/$mode-synth.hprof"
    gzip -dc "fixtures/$mode-synth.hprof.gz" | cmp -s - "$T/$mode-synth.hprof" ||
        die "hprof-synth $flag differs from fixtures/$mode-synth.hprof.gz"
    cmp -s "$T/$mode.manifest" "fixtures/$mode-synth.manifest" ||
        die "hprof-synth $flag manifest differs from fixtures/$mode-synth.manifest"
done

banner "hprof-verify: usage and exit codes"
expect 0 "$B/hprof-verify" --help
grep -q '^Usage: hprof-verify' "$T/out" || die "--help does not print usage on stdout"
expect 0 "$B/hprof-verify" --version
grep -q 'hprof-verify (hprof-shrink) ' "$T/out" || die "--version"
expect 2 "$B/hprof-verify"
expect 2 "$B/hprof-verify" --no-such-option x
expect 3 "$B/hprof-verify" "$T/does-not-exist.hprof"
printf 'JAVA PROFILE 1.0.2\0\0\0\0\010\0\0\0\0\0\0\0\0\034\0\0\0\0\0\0\0\100' > "$T/bad.hprof"
expect 1 "$B/hprof-verify" "$T/bad.hprof"
grep -q 'bad.hprof: offset 0x1f: HEAP_DUMP_SEGMENT: length 64 runs past the end of the file' "$T/err" ||
    die "verify message: $(cat "$T/err")"
[ "$(wc -l < "$T/err")" = 1 ] || die "verify error is not one line"
# the worst code wins across files: I/O error (3) over invalid (1)
expect 3 "$B/hprof-verify" "$T/bad.hprof" "$T/does-not-exist.hprof"
head -c 1000 "fixtures/hotspot-fixture.hprof.gz" > "$T/truncated.hprof.gz"
expect 1 "$B/hprof-verify" "$T/truncated.hprof.gz"
grep -q 'gzip input is truncated' "$T/err" || die "truncated gzip: $(cat "$T/err")"

banner "hprof-verify: every fixture is valid, from files, gzip and stdin"
for f in fixtures/*.hprof.gz "$T"/*-synth.hprof; do
    expect 0 "$B/hprof-verify" "$f"
    grep -q ': OK: ' "$T/out" || die "verify $f: $(cat "$T/out")"
done
gzip -dc fixtures/hotspot-fixture.hprof.gz | "$B/hprof-verify" - > "$T/out" || die "verify from stdin"
grep -q '^-: OK: JAVA PROFILE 1.0.2, 8-byte ids' "$T/out" || die "verify stdin: $(cat "$T/out")"
# counts agree with the generator's own bookkeeping
for k in instances class_dumps object_arrays primitive_arrays roots strings; do
    want=$(awk -v k=$k '$1 == k { print $2 }' fixtures/android-synth.manifest)
    label=$(echo $k | sed 's/_/ /; s/class dumps/class dumps/')
    "$B/hprof-verify" fixtures/android-synth.hprof.gz | grep -q " $want $label" ||
        die "verify does not count $want $label"
done

banner "round trip: HotSpot dumps load in VisualVM with the same counts"
hotspot="fixtures/hotspot-fixture.hprof.gz $T/hotspot-synth.hprof"
if [ -d ../shared/fixtures ]; then
    hotspot="$hotspot ../shared/fixtures/hotspot-1.0.2-test1.hprof ../shared/fixtures/hotspot-jdk6-x32-1.0.1.hprof"
fi
for f in $hotspot; do
    n=$(basename "$f")
    gzip -dcf "$f" > "$T/$n.in"
    "$B/tests/hprof-roundtrip" "$T/$n.in" "$T/$n.rt"
    "$B/tests/hprof-roundtrip" "$T/$n.in" "$T/$n.split" 4096
    heapcount "$T/$n.in" > "$T/$n.count-in" || die "VisualVM cannot load the input $f"
    for out in rt split; do
        heapcount "$T/$n.$out" > "$T/$n.count-$out" || die "VisualVM cannot load round-tripped $f ($out)"
        cmp -s "$T/$n.count-in" "$T/$n.count-$out" || die "VisualVM counts differ after round trip of $f ($out)"
    done
    echo "    $n: $(head -4 "$T/$n.count-in" | tr '\n' ' ')"
done

banner "round trip: Android dumps convert with hprof-conv and then load in VisualVM"
android="$T/android-synth.hprof"
[ -d ../shared/fixtures ] && android="$android ../shared/fixtures/art-ahat-test-dump.hprof"
for f in $android; do
    n=$(basename "$f")
    "$B/tests/hprof-roundtrip" "$f" "$T/$n.rt" 4096
    "$HPROF_CONV" "$T/$n.rt" "$T/$n.conv" || die "hprof-conv rejects round-tripped $f"
    "$B/hprof-verify" "$T/$n.conv" > /dev/null || die "hprof-conv output of $f is invalid"
    heapcount "$T/$n.conv" > "$T/$n.count" || die "VisualVM cannot load converted $f"
    # VisualVM's instance total = instances + arrays that hprof-verify counts
    v=$("$B/hprof-verify" "$f")
    total=$(echo "$v" | sed -E 's/.* ([0-9]+) instances, ([0-9]+) object arrays, ([0-9]+) primitive arrays.*/\1 \2 \3/' |
        awk '{ print $1 + $2 + $3 }')
    grep -qx "instances $total" "$T/$n.count" || die "$f: VisualVM sees $(grep '^instances' "$T/$n.count"), verify $total"
    echo "    $n: $(head -4 "$T/$n.count" | tr '\n' ' ')"
done

banner "hprof-shrink: usage, exit codes and safe files"
expect 0 "$B/hprof-shrink" --help
grep -q '^Usage: hprof-shrink' "$T/out" || die "shrink --help"
expect 0 "$B/hprof-shrink" --version
expect 2 "$B/hprof-shrink" --arrays=sometimes fixtures/hotspot-synth.hprof.gz "$T/x.hprof"
expect 2 "$B/hprof-shrink" fixtures/hotspot-synth.hprof.gz
expect 3 "$B/hprof-shrink" "$T/does-not-exist.hprof" "$T/x.hprof"
expect 1 "$B/hprof-shrink" "$T/bad.hprof" "$T/x.hprof"
grep -q 'bad.hprof: offset 0x1f: HEAP_DUMP_SEGMENT' "$T/err" || die "shrink error message: $(cat "$T/err")"
[ ! -e "$T/x.hprof" ] || die "a failed shrink left its output"
ls "$T" | grep -q '\.tmp$' && die "a failed shrink left a temporary file"
gzip -dc fixtures/hotspot-synth.hprof.gz > "$T/in.hprof"
cp "$T/in.hprof" "$T/in.copy"
expect 2 "$B/hprof-shrink" -f "$T/in.hprof" "$T/in.hprof"
grep -q 'output is the input' "$T/err" || die "same-file refusal: $(cat "$T/err")"
ln "$T/in.hprof" "$T/hardlink.hprof"
expect 2 "$B/hprof-shrink" -f "$T/in.hprof" "$T/hardlink.hprof"
cmp -s "$T/in.hprof" "$T/in.copy" || die "the input was modified"
expect 0 "$B/hprof-shrink" "$T/in.hprof" "$T/out.hprof"
expect 2 "$B/hprof-shrink" "$T/in.hprof" "$T/out.hprof"
grep -q 'already exists' "$T/err" || die "overwrite refusal: $(cat "$T/err")"
expect 0 "$B/hprof-shrink" -f "$T/in.hprof" "$T/out.hprof"
[ -s "$T/out.hprof" ] || die "no output"
cmp -s "$T/in.hprof" "$T/in.copy" || die "the input was modified"
# a full disk: the error is reported and nothing is left behind
if [ -w /dev/full ]; then
    set +e; "$B/hprof-shrink" "$T/in.hprof" - > /dev/full 2> "$T/err"; got=$?; set -e
    [ "$got" = 3 ] || die "writing to /dev/full exited $got"
    grep -q 'No space left on device' "$T/err" || die "ENOSPC message: $(cat "$T/err")"
fi

banner "hprof-shrink: pipes, gzip in and out, determinism"
gzip -dc fixtures/android-synth.hprof.gz | "$B/hprof-shrink" - - > "$T/pipe.hprof" || die "stdin to stdout"
"$B/hprof-shrink" fixtures/android-synth.hprof.gz "$T/file.hprof" || die "gzip input"
cmp -s "$T/pipe.hprof" "$T/file.hprof" || die "pipe and file outputs differ"
"$B/hprof-shrink" -f fixtures/android-synth.hprof.gz "$T/file2.hprof"
cmp -s "$T/file.hprof" "$T/file2.hprof" || die "output is not deterministic"
"$B/hprof-shrink" -z fixtures/android-synth.hprof.gz "$T/file.hprof.gz" || die "--gzip"
gzip -t "$T/file.hprof.gz" || die "gzip output does not test"
gzip -dc "$T/file.hprof.gz" | cmp -s - "$T/file.hprof" || die "gunzip does not restore the plain output"
head -c 64 "$T/file.hprof.gz" | grep -aq 'HPROF BLOCKSIZE=1048576' || die "no BLOCKSIZE comment"
"$B/hprof-shrink" -z1 fixtures/android-synth.hprof.gz "$T/l1.hprof.gz" && gzip -dc "$T/l1.hprof.gz" | cmp -s - "$T/file.hprof" ||
    die "--gzip=1 differs after gunzip"
"$B/hprof-verify" "$T/file.hprof.gz" > /dev/null || die "gzip output does not verify"

banner "hprof-shrink: --stats and --json"
"$B/hprof-shrink" --json fixtures/android-synth.hprof.gz "$T/j.hprof" > "$T/json"
python3 -c "import json,sys; d=json.load(open(sys.argv[1])); assert d['bitmap_groups']==3, d; assert d['bytes_out']==$(wc -c < "$T/j.hprof"), d" "$T/json" ||
    die "--json is not valid or wrong: $(cat "$T/json")"
"$B/hprof-shrink" --json fixtures/android-synth.hprof.gz - 2> "$T/json2" > /dev/null
python3 -c "import json,sys; json.load(open(sys.argv[1]))" "$T/json2" || die "--json with stdout output goes to stderr"
# names first and zygote/image objects before the app's let the first pass resolve
"$B/hprof-shrink" -f --json fixtures/hotspot-fixture.hprof.gz "$T/j2.hprof" > "$T/json3"
python3 -c "import json,sys; d=json.load(open(sys.argv[1])); e=json.load(open(sys.argv[2]))
assert d['resolved_in_pass_1'] is True and len(d['pass_seconds']) == 2, d
assert e['resolved_in_pass_1'] is True and len(e['pass_seconds']) == 2, e" "$T/json3" "$T/json" ||
    die "--json passes: $(cat "$T/json3" "$T/json")"
"$B/hprof-shrink" --stats -f fixtures/android-synth.hprof.gz "$T/j.hprof" 2> "$T/stats"
grep -q 'bitmap copies merged  *3 ' "$T/stats" || die "--stats: $(cat "$T/stats")"

banner "hprof-shrink: HotSpot outputs load in VisualVM with the input's counts"
for f in $hotspot; do
    n=$(basename "$f")
    for mode in empty zero remove; do
        "$B/hprof-shrink" -q --arrays=$mode "$T/$n.in" "$T/$n.$mode" || die "shrink $f --arrays=$mode"
        heapcount "$T/$n.$mode" > "$T/$n.count-$mode" || die "VisualVM cannot load shrunk $f ($mode)"
        if [ $mode = remove ]; then
            # primitive arrays are gone; everything else is counted the same
            grep -v '\[\]' "$T/$n.count-in" | grep -v '^instances\|^walked\|^class \[[BCDFIJSZ] ' > "$T/a"
            grep -v '\[\]' "$T/$n.count-$mode" | grep -v '^instances\|^walked\|^class \[[BCDFIJSZ] ' > "$T/b"
            cmp -s "$T/a" "$T/b" || die "VisualVM counts differ for $f ($mode)"
        else
            cmp -s "$T/$n.count-in" "$T/$n.count-$mode" || die "VisualVM counts differ for $f ($mode)"
        fi
    done
    echo "    $n: $(wc -c < "$T/$n.in") -> $(wc -c < "$T/$n.empty") bytes (empty), $(wc -c < "$T/$n.zero") (zero), $(wc -c < "$T/$n.remove") (remove)"
done

banner "hprof-shrink: Android outputs convert with hprof-conv and load in VisualVM"
for f in $android; do
    n=$(basename "$f")
    for mode in empty zero; do
        "$B/hprof-shrink" -q --arrays=$mode "$f" "$T/$n.$mode" || die "shrink $f"
        "$HPROF_CONV" "$T/$n.$mode" "$T/$n.$mode.conv" || die "hprof-conv rejects shrunk $f ($mode)"
        "$B/hprof-verify" "$T/$n.$mode.conv" > /dev/null || die "hprof-conv output of shrunk $f is invalid"
        heapcount "$T/$n.$mode.conv" > "$T/$n.$mode.count" || die "VisualVM cannot load converted shrunk $f"
    done
    echo "    $n: $(wc -c < "$f") -> $(wc -c < "$T/$n.empty") bytes; VisualVM: $(head -4 "$T/$n.empty.count" | tr '\n' ' ')"
done

banner "files over 4 GiB with a 3 GiB segment (sparse, so it costs no disk)"
python3 - "$T/huge.hprof" <<'PY'
import struct, sys
# header, then two HEAP_DUMP_SEGMENTs each holding one byte[] of 3 GiB and
# 2 GiB of zeros (a hole), then HEAP_DUMP_END: 5 GiB in all.
with open(sys.argv[1], "wb") as f:
    f.write(b"JAVA PROFILE 1.0.3\0" + struct.pack(">IQ", 4, 0))
    for i, n in enumerate((3 << 30, 2 << 30)):
        f.write(struct.pack(">BII", 0x1C, 0, 14 + n))
        f.write(struct.pack(">BIIIB", 0x23, 0x100 + 8 * i, 0, n, 8))
        f.seek(n, 1)
    f.write(struct.pack(">BII", 0x2C, 0, 0))
PY
"$B/hprof-verify" "$T/huge.hprof" > "$T/out" || die "verify of a 5 GiB file: $(cat "$T/out")"
grep -q '2 primitive arrays (5368709120 bytes)' "$T/out" || die "5 GiB counts: $(cat "$T/out")"
"$B/hprof-shrink" -q "$T/huge.hprof" "$T/huge.out" || die "shrink of a 5 GiB file"
"$B/hprof-verify" "$T/huge.out" > /dev/null || die "shrunk 5 GiB file does not verify"
[ "$(wc -c < "$T/huge.out")" -lt 1000 ] || die "5 GiB of zeros did not shrink"
size=$("$B/hprof-shrink" -q --arrays=zero "$T/huge.hprof" - | wc -c)
[ "$size" = "$(wc -c < "$T/huge.hprof")" ] || die "--arrays=zero of 5 GiB wrote $size bytes"
rm -f "$T/huge.hprof" "$T/huge.out"

banner "signals: SIGINT and SIGTERM leave no partial output"
for sig in INT TERM; do
    rm -f "$T/fifo" "$T/sig.hprof"
    mkfifo "$T/fifo"
    "$B/hprof-shrink" -q "$T/fifo" "$T/sig.hprof" 2> /dev/null &
    pid=$!
    exec 7> "$T/fifo"               # the shrinker now waits for input
    gzip -dc fixtures/android-synth.hprof.gz | head -c 100000 >&7
    i=0
    until ls "$T" | grep -q '^sig.hprof.*\.tmp$'; do
        i=$((i + 1)); [ $i -lt 100 ] || break; sleep 0.05
    done
    ls "$T" | grep -q '^sig.hprof.*\.tmp$' || die "no temporary output while running"
    kill -$sig $pid
    set +e; wait $pid; got=$?; set -e
    exec 7>&-
    [ "$got" -gt 128 ] || die "SIG$sig: exit status $got"
    ls "$T" | grep -q '^sig.hprof' && die "SIG$sig left $(ls "$T" | grep '^sig.hprof')"
done

banner "hostile inputs: one-line errors with offsets, exit 1, bounded memory"
# Saved by check_hostile.  Outside the sanitizer run, the tools run under a
# 512 MB address-space limit, so a length field cannot drive an allocation.
[ -n "$(ls "$B/hostile" 2>/dev/null)" ] || die "no hostile cases in $B/hostile"
limit=""
[ "${SANITIZE:-}" = 1 ] || limit="ulimit -v 524288;"
for f in "$B"/hostile/*.hprof "$T/truncated.hprof.gz"; do
    for tool in hprof-verify hprof-shrink; do
        args="'$f'"
        [ $tool = hprof-shrink ] && args="'$f' '$T/hostile.out'"
        set +e
        sh -c "$limit exec '$B/$tool' $args" > /dev/null 2> "$T/err"
        got=$?
        set -e
        [ "$got" = 1 ] || die "$tool $(basename "$f"): exit $got: $(cat "$T/err")"
        [ "$(wc -l < "$T/err")" = 1 ] || die "$tool $(basename "$f"): not one line: $(cat "$T/err")"
        grep -q "offset 0x\|gzip input is truncated" "$T/err" || die "$tool $(basename "$f"): no offset: $(cat "$T/err")"
        [ ! -e "$T/hostile.out" ] || die "$tool $(basename "$f") left an output"
    done
done

banner "faults while writing: short writes and EINTR change nothing; ENOSPC and EIO leave nothing"
SHIM="$(pwd)/$B/tests/fault_write.so"
export ASAN_OPTIONS="${ASAN_OPTIONS:-}:verify_asan_link_order=0"
gzip -dc fixtures/android-synth.hprof.gz > "$T/fin.hprof"
cp "$T/fin.hprof" "$T/fin.copy"
"$B/hprof-shrink" -q "$T/fin.hprof" "$T/ref.hprof"
"$B/hprof-shrink" -q -z "$T/fin.hprof" "$T/ref.hprof.gz"
for fault in short eintr; do
    HPROF_FAULT=$fault LD_PRELOAD="$SHIM" "$B/hprof-shrink" -q "$T/fin.hprof" "$T/f-$fault.hprof" ||
        die "shrink with $fault writes failed"
    cmp -s "$T/ref.hprof" "$T/f-$fault.hprof" || die "$fault writes changed the output"
    gzip -dc fixtures/android-synth.hprof.gz | HPROF_FAULT=$fault LD_PRELOAD="$SHIM" \
        "$B/hprof-shrink" -q -z - "$T/f-$fault.hprof.gz" || die "spool + gzip with $fault writes failed"
    cmp -s "$T/ref.hprof.gz" "$T/f-$fault.hprof.gz" || die "$fault writes changed the gzip output"
done
for fault in enospc:100000 eio:5000 enospc:0; do
    for z in "" -z; do
        set +e
        HPROF_FAULT=$fault LD_PRELOAD="$SHIM" "$B/hprof-shrink" -q $z "$T/fin.hprof" "$T/f.out" 2> "$T/err"
        got=$?
        set -e
        [ "$got" = 3 ] || die "$fault $z: exit $got"
        case $fault in
        enospc*) grep -q 'No space left on device' "$T/err" || die "$fault: $(cat "$T/err")" ;;
        eio*) grep -q 'Input/output error' "$T/err" || die "$fault: $(cat "$T/err")" ;;
        esac
        [ ! -e "$T/f.out" ] || die "$fault $z left an output"
        ls "$T" | grep -q '^f\.out.*\.tmp$' && die "$fault $z left a temporary file"
    done
done
cmp -s "$T/fin.hprof" "$T/fin.copy" || die "a failed run modified the input"
"$B/hprof-shrink" -q "$T/fin.hprof" "$T/after.hprof"
cmp -s "$T/ref.hprof" "$T/after.hprof" || die "a run after failed ones differs"
# the reader of our output goes away early: EPIPE, exit 3, a message
set +e
{ "$B/hprof-shrink" --arrays=zero "$T/fin.hprof" - 2> "$T/err"; echo $? > "$T/status"; } | head -c 100 > /dev/null
set -e
[ "$(cat "$T/status")" = 3 ] || die "closed pipe: exit $(cat "$T/status")"
grep -q 'Broken pipe' "$T/err" || die "closed pipe: $(cat "$T/err")"

banner "mapped input (the default): same output as pread, bounded memory, and a clean exit if the file is cut under us"
for f in fixtures/*.hprof.gz; do
    gzip -dc "$f" > "$T/m.hprof"
    "$B/hprof-shrink" -q -f "$T/m.hprof" "$T/m-mapped.hprof"
    HPROF_MMAP=0 "$B/hprof-shrink" -q -f "$T/m.hprof" "$T/m-pread.hprof"
    cmp -s "$T/m-mapped.hprof" "$T/m-pread.hprof" || die "$f: mapped and pread outputs differ"
done
# pages behind the reading position are given back: peak RSS stays far below
# the 130 MB the mapping would hold otherwise (a kept 16 MB bitmap included);
# with write-pass workers each maps the file and gives back its own pages
# (under ASan its quarantine of freed blocks counts too: one thread there)
"$B/hprof-synth" --scale 1300 --big-bitmap 16777216 -f "$T/big.hprof"
workers=-j2
[ "${SANITIZE:-}" = 1 ] && workers=-j1
for tool in "hprof-shrink -j1 -f $T/big.hprof $T/big-out.hprof" \
            "hprof-shrink $workers -f $T/big.hprof $T/big-out.hprof" "hprof-verify $T/big.hprof" \
            "hprof-info $T/big.hprof"; do
    for map in 1 0; do
        HPROF_MMAP=$map /usr/bin/time -f %M -o "$T/rss" "$B"/$tool > /dev/null ||
            die "$tool (HPROF_MMAP=$map) failed"
        [ "$(tail -n 1 "$T/rss")" -lt 65536 ] ||
            die "$tool (HPROF_MMAP=$map): peak RSS $(tail -n 1 "$T/rss") KB"
    done
done
rm -f "$T/big.hprof" "$T/big-out.hprof"

banner "the output's writeback starts while a small dump is shrunk, not only at the fsync"
# a 64th of this 2.7 MB input is under 1 MiB, so the step is 1 MiB; the
# output keeps a 2.5 MB bitmap (a step of 8 MiB would never be reached).
# LeakSanitizer cannot run under ptrace: no leak check in these two runs.
"$B/hprof-synth" -f "$T/wb.hprof"
traced_asan="${ASAN_OPTIONS:-}:detect_leaks=0"
ASAN_OPTIONS=$traced_asan strace -f -qq -e trace=sync_file_range -o "$T/wb.strace" \
    "$B/hprof-shrink" -q -j1 -f "$T/wb.hprof" "$T/wb-out.hprof" ||
    die "hprof-shrink under strace failed"
[ "$(grep -c 'sync_file_range(' "$T/wb.strace")" -ge 1 ] ||
    die "writeback requests on a small dump: $(grep -c 'sync_file_range(' "$T/wb.strace")"
# standard output is not a file we fsync: no requests
ASAN_OPTIONS=$traced_asan strace -f -qq -e trace=sync_file_range -o "$T/wb.strace" \
    "$B/hprof-shrink" -q -j1 "$T/wb.hprof" - > "$T/wb-out.hprof" ||
    die "hprof-shrink to stdout under strace failed"
[ "$(grep -c 'sync_file_range(' "$T/wb.strace")" = 0 ] || die "writeback requested on standard output"
rm -f "$T/wb.hprof" "$T/wb-out.hprof"
# another process truncates the input right after it is mapped: SIGBUS,
# caught: one line, exit 3, no output and no temporary file left
for tool in hprof-shrink hprof-verify; do
    gzip -dc fixtures/hotspot-fixture.hprof.gz > "$T/cut.hprof"
    out=""
    [ $tool = hprof-shrink ] && out="$T/cut-out.hprof"
    set +e
    HPROF_FAULT=truncate LD_PRELOAD="$SHIM" "$B/$tool" "$T/cut.hprof" $out > /dev/null 2> "$T/err"
    got=$?
    set -e
    [ "$got" = 3 ] || die "$tool on a file cut under its mapping: exit $got"
    # (the shrink may notice when it opens its own reader of the file)
    grep -Eq "cut.hprof: (read error: the file was truncated or could not be read while mapped|the input changed size while reading)" \
        "$T/err" || die "$tool cut: $(cat "$T/err")"
    [ "$(wc -l < "$T/err")" = 1 ] || die "$tool cut: not one line: $(cat "$T/err")"
    [ ! -e "$T/cut-out.hprof" ] || die "$tool cut: left an output"
    ls "$T" | grep -q '^cut-out.*\.tmp$' && die "$tool cut: left a temporary file"
done

banner "hprof-info: counts agree with hprof-verify, hprof-shrink and the generator"
expect 0 "$B/hprof-info" --help
expect 2 "$B/hprof-info"
expect 1 "$B/hprof-info" "$T/bad.hprof"
info_inputs="fixtures/android-synth.hprof.gz fixtures/hotspot-fixture.hprof.gz fixtures/hotspot-synth.hprof.gz"
[ -d ../shared/fixtures ] && info_inputs="$info_inputs $(ls ../shared/fixtures/*.hprof)"
for f in $info_inputs; do
    n=$(basename "$f" .gz)
    n=${n%.hprof}
    "$B/hprof-info" --json --estimate "$f" > "$T/$n.info" || die "hprof-info $f"
    "$B/hprof-bitmaps" "$f" "$T/$n.bitmaps" || die "hprof-bitmaps $f"
    "$B/hprof-info" --estimate "$f" > "$T/$n.report" || die "hprof-info report $f"
    grep -q '^Top 10 classes by count' "$T/$n.report" || die "report of $f"
    "$B/hprof-verify" "$f" > "$T/$n.verify"
    "$B/hprof-shrink" -q --json "$f" "$T/$n.shrunk" > "$T/$n.shrink"
    "$B/hprof-shrink" -q --json --keep-system-heaps "$f" "$T/$n.kept" > "$T/$n.shrink-kept"
    python3 - "$T/$n.info" "$T/$n.verify" "$T/$n.shrink" "$T/$n.shrink-kept" "fixtures/$n.manifest" <<'PY' || die "hprof-info disagrees on $f"
import json, re, sys, os
info = json.load(open(sys.argv[1]))
verify = open(sys.argv[2]).read()
shrink = json.load(open(sys.argv[3]))
kept = json.load(open(sys.argv[4]))
def v(label):
    return int(re.search(r"(\d+) " + label, verify).group(1))
sub = info["sub_records"]
def n(tag):
    return sub.get(tag, {"count": 0})["count"]
assert n("INSTANCE_DUMP") == v("instances") == shrink["instances_in"]["count"]
assert n("CLASS_DUMP") == v("class dumps")
assert n("OBJECT_ARRAY_DUMP") == v("object arrays") == shrink["object_arrays_in"]["count"]
assert n("PRIMITIVE_ARRAY_DUMP") + n("PRIMITIVE_ARRAY_NODATA") == v("primitive arrays")
assert sum(info["primitive_arrays"][t]["bytes"] for t in info["primitive_arrays"]) == shrink["primitive_arrays_in"]["bytes"]
assert sum(info["roots"].values()) == v("roots")
assert info["records"]["STRING"]["count"] == v("strings") == shrink["strings"]["count"]
assert info["estimate"]["empty"] == shrink["bytes_out"]
assert info["strings"]["count"] == kept["string_values_kept"]["count"] or info["strings"]["count"] >= kept["string_values_kept"]["count"]
assert info["strings"]["bytes"] == kept["string_values_kept"]["bytes"], (info["strings"], kept["string_values_kept"])
b = info["bitmaps"]
assert b["duplicate_groups"] == shrink["bitmap_groups"]
assert b["wasted_bytes"] == shrink["bitmap_duplicates"]["bytes"]
heaps = info["heaps"]
assert sum(h["count"] for h in heaps.values()) == v("instances") + v("object arrays") + v("primitive arrays")
if os.path.exists(sys.argv[5]):
    m = dict(l.split() for l in open(sys.argv[5]))
    assert n("INSTANCE_DUMP") == int(m["instances"])
    assert b["count"] == int(m["bitmaps"]) + (3 if int(m["bitmaps"]) else 0)
    assert b["duplicate_groups"] == int(m["bitmap_groups"])
    assert heaps["zygote"]["count"] + heaps["image"]["count"] == int(m["system_objects"])
PY
done

banner "batch: a directory with a corrupt dump in it, -j, skipping, --json, SIGINT"
mkdir -p "$T/fleet/a/b" "$T/out1" "$T/out2"
cp fixtures/android-synth.hprof.gz fixtures/hotspot-synth.hprof.gz "$T/fleet/"
gzip -dc fixtures/hotspot-fixture.hprof.gz > "$T/fleet/a/b/jcmd.hprof"
head -c 5000 "$T/fleet/a/b/jcmd.hprof" > "$T/fleet/a/cut.hprof"
echo "not a dump" > "$T/fleet/a/notes.txt"
set +e
"$B/hprof-shrink" -r -j2 -o "$T/out1" "$T/fleet" > "$T/batch.out" 2> "$T/batch.err"
got=$?
set -e
[ "$got" = 1 ] || die "batch with a corrupt file exited $got"
[ "$(wc -l < "$T/batch.out")" = 3 ] || die "batch summary lines: $(cat "$T/batch.out")"
grep -q 'cut.hprof: offset 0x' "$T/batch.err" || die "batch error: $(cat "$T/batch.err")"
for f in android-synth.hprof hotspot-synth.hprof a/b/jcmd.hprof; do
    "$B/hprof-verify" "$T/out1/$f" > /dev/null || die "batch output $f"
done
[ ! -e "$T/out1/a/cut.hprof" ] || die "batch left an output for the corrupt file"
find "$T/out1" -name '*.tmp' | grep -q . && die "batch left temporary files"
"$B/hprof-shrink" -r -j1 -o "$T/out2" "$T/fleet" > /dev/null 2>&1 || true
for f in android-synth.hprof hotspot-synth.hprof a/b/jcmd.hprof; do
    cmp -s "$T/out1/$f" "$T/out2/$f" || die "-j1 and -j2 differ on $f"
done
set +e
"$B/hprof-shrink" -r -o "$T/out1" "$T/fleet" > "$T/batch.out" 2> /dev/null
set -e
[ "$(grep -c 'skipped, output is newer' "$T/batch.out")" = 3 ] || die "up-to-date outputs not skipped: $(cat "$T/batch.out")"
set +e
"$B/hprof-shrink" -f --json -z -r -o "$T/out1" "$T/fleet" > "$T/batch.json" 2> /dev/null
set -e
python3 -c "
import json, sys
rows = [json.loads(l) for l in open(sys.argv[1])]
assert len(rows) == 3 and all(r['bytes_written'] > 0 for r in rows), rows
" "$T/batch.json" || die "batch --json: $(cat "$T/batch.json")"
# SIGINT: the finished output stays, the unfinished one leaves nothing
rm -rf "$T/out3" "$T/fifo.hprof"; mkdir -p "$T/out3"
mkfifo "$T/fifo.hprof"
"$B/hprof-shrink" -j1 -o "$T/out3" fixtures/hotspot-synth.hprof.gz "$T/fifo.hprof" > /dev/null 2>&1 &
pid=$!
exec 7> "$T/fifo.hprof"
i=0
until ls "$T/out3" | grep -q '^fifo.hprof.*\.tmp$'; do
    i=$((i + 1)); [ $i -lt 100 ] || break; sleep 0.05
done
kill -INT $pid
set +e; wait $pid; got=$?; set -e
exec 7>&-
[ "$got" -gt 128 ] || die "batch SIGINT: exit $got"
[ -s "$T/out3/hotspot-synth.hprof" ] || die "batch SIGINT removed a finished output"
ls "$T/out3" | grep -q 'tmp$' && die "batch SIGINT left $(ls "$T/out3")"

banner "install: binaries, both libraries exporting only the API, pkg-config (dynamic and static, C99 pedantic), man pages; uninstall"
# Into a staging directory, as a packager does (DESTDIR); the pkg-config
# file names PREFIX, and PKG_CONFIG_SYSROOT_DIR maps it there.  What is
# installed is this run's build: under SANITIZE=1 the libraries are
# instrumented, so the program gets the same sanitizers.
root="$T/root"
lib="$root/usr/local/lib"
make_install() {
    env -u MAKEFLAGS -u MAKELEVEL ${MAKE:-make} -s "$1" PREFIX=/usr/local DESTDIR="$root" B="$B" \
        SANITIZE="${SANITIZE:-}" DEFLATE="${DEFLATE:-libdeflate}" ISAL="${ISAL:-1}" > "$T/install.log" 2>&1 ||
        die "make $1 failed: $(cat "$T/install.log")"
}
make_install install
for f in bin/hprof-shrink bin/hprof-verify bin/hprof-info bin/hprof-bitmaps lib/libhprof.a \
         lib/libhprof.so lib/libhprof.so.0 lib/pkgconfig/libhprof.pc include/hprof.h include/hprof_visitor.h \
         share/man/man1/hprof-shrink.1 share/man/man1/hprof-info.1 share/man/man1/hprof-verify.1 \
         share/man/man1/hprof-bitmaps.1 share/man/man3/libhprof.3; do
    [ -e "$root/usr/local/$f" ] || die "make install did not install $f"
done
for page in man/*.1 man/*.3; do
    LC_ALL=C.UTF-8 MANWIDTH=80 man --warnings -l "$page" > /dev/null 2> "$T/man.err" || die "man $page"
    [ ! -s "$T/man.err" ] || die "man $page warns: $(cat "$T/man.err")"
done
[ "$(readlink "$lib/libhprof.so")" = libhprof.so.0 ] || die "libhprof.so does not point to libhprof.so.0"
case $(readlink "$lib/libhprof.so.0") in
libhprof.so.0.[0-9]*) ;;
*) die "libhprof.so.0 points to '$(readlink "$lib/libhprof.so.0")'" ;;
esac
readelf -d "$lib/libhprof.so.0" | grep -q 'SONAME.*\[libhprof\.so\.0\]' || die "libhprof.so has no soname libhprof.so.0"
# Both libraries define exactly the functions the installed headers declare.
sed -n 's/^HPROF_API[^(]*[ *]\(hprof_[a-z0-9_]*\)(.*/\1/p' "$root/usr/local/include/"*.h | sort > "$T/api"
[ "$(wc -l < "$T/api")" -ge 40 ] || die "found only $(wc -l < "$T/api") HPROF_API declarations"
for l in libhprof.a libhprof.so; do
    nm -g --defined-only "$lib/$l" | awk 'NF == 3 { print $3 }' | sort > "$T/exported"
    grep -v '^hprof_' "$T/exported" > "$T/foreign" && die "$l defines non-hprof_ names: $(tr '\n' ' ' < "$T/foreign")"
    cmp -s "$T/api" "$T/exported" || die "$l defines other names than the API: $(diff "$T/api" "$T/exported" | tr '\n' ' ')"
done
export PKG_CONFIG_PATH="$lib/pkgconfig" PKG_CONFIG_SYSROOT_DIR="$root"
pkg-config --static --libs libhprof > "$T/static-libs" || die "pkg-config --static --libs libhprof failed"
case ${DEFLATE:-libdeflate}/${ISAL:-1} in
libdeflate/1) private="-lisal -ldeflate -lcrypto -lz -pthread" ;;
libdeflate/0) private="-ldeflate -lcrypto -lz -pthread" ;;
*) private="-lcrypto -lz -pthread" ;;
esac
grep -q -- "-lhprof $private" "$T/static-libs" ||
    die "pkg-config --static gives '$(cat "$T/static-libs")', wanted -lhprof $private"
"$B/hprof-verify" "$T/in.hprof" > "$T/verify.out"
want=$(sed -n 's/.* \([0-9][0-9]*\) records .* \([0-9][0-9]*\) instances,.*/\1 records, \2 instances/p' "$T/verify.out")
[ -n "$want" ] || die "cannot read the counts of: $(cat "$T/verify.out")"
san_flags=""
[ "${SANITIZE:-}" = 1 ] && san_flags="-fsanitize=address,undefined"
cflags="$san_flags -std=c99 -pedantic -Wall -Wextra -Werror"
# tests/install/count-records.c counts records and instances as
# hprof-verify does.  Dynamically: the shared library, found at run time.
# shellcheck disable=SC2046,SC2086 # lists of words
cc $cflags -o "$T/count-dyn" tests/install/count-records.c $(pkg-config --cflags --libs libhprof) ||
    die "a C99 -pedantic program does not build against libhprof.so with pkg-config"
readelf -d "$T/count-dyn" | grep -q 'NEEDED.*libhprof\.so\.0' || die "the program does not need libhprof.so.0"
[ "$(LD_LIBRARY_PATH="$lib" "$T/count-dyn" "$T/in.hprof")" = "$want" ] ||
    die "dynamically linked: '$(LD_LIBRARY_PATH="$lib" "$T/count-dyn" "$T/in.hprof" 2>&1)', hprof-verify: '$want'"
# Statically: libhprof.a and what Libs.private adds.  ld prefers the .so
# beside it, hence -l:libhprof.a; -static is no option (Debian ships no
# static ISA-L).
# shellcheck disable=SC2046,SC2086
cc $cflags -o "$T/count-static" tests/install/count-records.c \
    $(pkg-config --cflags --static --libs libhprof | sed 's/-lhprof /-l:libhprof.a /') ||
    die "a C99 -pedantic program does not build against libhprof.a with pkg-config --static"
readelf -d "$T/count-static" | grep -q 'libhprof' && die "the static program still needs libhprof.so"
[ "$("$T/count-static" "$T/in.hprof")" = "$want" ] ||
    die "statically linked: '$("$T/count-static" "$T/in.hprof" 2>&1)', hprof-verify: '$want'"
unset PKG_CONFIG_PATH PKG_CONFIG_SYSROOT_DIR
make_install uninstall
[ -z "$(find "$root" ! -type d)" ] || die "make uninstall left $(find "$root" ! -type d)"

banner "hprof-bitmaps: one file per distinct content, pixels equal to the dump's, on shrunk files too"
expect 2 "$B/hprof-bitmaps" fixtures/android-synth.hprof.gz
"$B/hprof-bitmaps" fixtures/android-synth.hprof.gz "$T/bm" || die "hprof-bitmaps"
"$B/hprof-shrink" -q fixtures/android-synth.hprof.gz "$T/bm-shrunk.hprof"
"$B/hprof-bitmaps" "$T/bm-shrunk.hprof" "$T/bm2" || die "hprof-bitmaps on a shrunk dump"
"$B/hprof-info" --json fixtures/android-synth.hprof.gz > "$T/bm.info"
python3 - "$T/bm" "$T/bm.info" <<'PY' || die "hprof-bitmaps output is wrong"
import hashlib, json, os, struct, sys, zlib
out, info = sys.argv[1], json.load(open(sys.argv[2]))
# distinct contents: one file each
distinct = {(b["md5"], b["buffer_bytes"]) for b in info["bitmaps"]["list"] if b["buffer"]}
files = [f for f in os.listdir(out) if f != "index.tsv"]
assert len(files) == len(distinct) == 5, (files, distinct)
for f in files:
    data = open(os.path.join(out, f), "rb").read()
    md5 = f[:32]
    if "x" in f.split(".")[0]:   # an mBuffer picture: decode the PNG, compare pixels
        assert data[:8] == b"\x89PNG\r\n\x1a\n"
        at, idat, w = 8, b"", None
        while at < len(data):
            n, kind = struct.unpack(">I4s", data[at:at + 8])
            body = data[at + 8:at + 8 + n]
            assert zlib.crc32(kind + body) == struct.unpack(">I", data[at + 8 + n:at + 12 + n])[0]
            if kind == b"IHDR":
                w, h, depth, color = struct.unpack(">IIBB", body[:10])
                assert depth == 8 and color == 6
            if kind == b"IDAT":
                idat += body
            at += 12 + n
        raw = zlib.decompress(idat)
        rows = [raw[y * (4 * w + 1) + 1:(y + 1) * (4 * w + 1)] for y in range(h)]
        assert all(raw[y * (4 * w + 1)] == 0 for y in range(h))
        assert hashlib.md5(b"".join(rows)).hexdigest() == md5, f
    else:                        # a DumpData buffer, as it is
        assert hashlib.md5(data).hexdigest() == md5, f
index = open(os.path.join(out, "index.tsv")).read().splitlines()
assert len(index) == 1 + len(files)
shared = [l for l in index[1:] if l.split("\t")[1].count(",") >= 1]
assert len(shared) >= 3, index   # A (three bitmaps), C/D, the two equal DumpData buffers
PY
cmp -s "$T/bm/index.tsv" "$T/bm2/index.tsv" || true
[ "$(ls "$T/bm" | sort)" = "$(ls "$T/bm2" | sort)" ] || die "hprof-bitmaps differs on the shrunk dump"
for f in "$T"/bm/*.png; do cmp -s "$f" "$T/bm2/$(basename "$f")" || die "pixels differ after shrinking: $f"; done

banner "--redact: analyzers still open the output with the same counts"
expect 2 "$B/hprof-shrink" --redact-keep=android.app.Activity.mTitle fixtures/android-synth.hprof.gz "$T/r.hprof"
expect 2 "$B/hprof-shrink" --redact --redact-keep=nodot fixtures/android-synth.hprof.gz "$T/r.hprof"
expect 2 "$B/hprof-shrink" --redact=everything fixtures/android-synth.hprof.gz "$T/r.hprof"
for f in fixtures/hotspot-fixture.hprof.gz "$T/hotspot-synth.hprof"; do
    n=$(basename "$f")
    "$B/hprof-shrink" -q --redact --redact-fields "$f" "$T/$n.redacted" || die "--redact $f"
    heapcount "$T/$n.redacted" > "$T/$n.count-redacted" || die "VisualVM cannot load redacted $f"
    cmp -s "$T/$n.count-in" "$T/$n.count-redacted" || die "VisualVM counts differ after --redact of $f"
done
"$B/hprof-shrink" -q --redact fixtures/android-synth.hprof.gz "$T/ra.hprof"
"$HPROF_CONV" "$T/ra.hprof" "$T/ra.conv" || die "hprof-conv rejects a redacted dump"
heapcount "$T/ra.conv" > /dev/null || die "VisualVM cannot load a redacted Android dump"
grep -q "5b2f0c1e-77aa-4f3e-9d1a-0c4e6d2b9f10" "$T/ra.hprof" || die "the KeyedWeakReference key was redacted"
grep -q "Secret account overview" "$T/ra.hprof" && die "Activity.mTitle survived --redact"
"$B/hprof-shrink" -q --redact --redact-keep=android.app.Activity.mTitle fixtures/android-synth.hprof.gz "$T/rb.hprof"
grep -q "Secret account overview" "$T/rb.hprof" || die "--redact-keep=android.app.Activity.mTitle did not keep it"

banner "bench-time: the benchmark's timer redirects, reports and passes the status on"
printf 'abc' > "$T/bt.in"
"$B/bench-time" -i "$T/bt.in" -o "$T/bt.out" -- tr a-c x-z > "$T/bt.time" || die "bench-time tr failed"
[ "$(cat "$T/bt.out")" = xyz ] || die "bench-time: stdin/stdout not redirected: $(cat "$T/bt.out")"
grep -Eqx '[0-9]+\.[0-9]{6} [1-9][0-9]*' "$T/bt.time" || die "bench-time printed: $(cat "$T/bt.time")"
"$B/bench-time" -- sleep 0.2 > "$T/bt.time"
awk '{ exit !($1 >= 0.2 && $1 < 5) }' "$T/bt.time" || die "bench-time timed sleep 0.2 as $(cat "$T/bt.time")"
"$B/bench-time" -c -- sh -c 'i=0; while [ $i -lt 200000 ]; do i=$((i+1)); done' > "$T/bt.time"
awk '{ exit !(NF == 3 && $3 > 0 && $3 <= 2 * $1 + 0.01) }' "$T/bt.time" || die "bench-time -c printed $(cat "$T/bt.time")"
expect 3 "$B/bench-time" -- sh -c 'exit 3'
expect 127 "$B/bench-time" -- /nonexistent/command
expect 2 "$B/bench-time"

if [ "$fails" -ne 0 ]; then
    echo "cli-tests: $fails failure(s)" >&2
    exit 1
fi
echo "cli-tests: all passed"
