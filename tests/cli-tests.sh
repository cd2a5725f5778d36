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

if [ "$fails" -ne 0 ]; then
    echo "cli-tests: $fails failure(s)" >&2
    exit 1
fi
echo "cli-tests: all passed"
