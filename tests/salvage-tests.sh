#!/bin/sh
# salvage-tests.sh - dumps cut short, end to end: every fixture cut at 40
# offsets spread over it and just inside and after its first records.
# Without --salvage each tool fails (exit 1) with a message that mentions
# --salvage, unless the cut falls exactly between two records outside a
# heap dump, where what is left is itself a complete dump (exit 0).  With
# --salvage hprof-shrink writes a dump that hprof-verify accepts strictly
# and says on one line what was lost; a few outputs are loaded in
# VisualVM's heap library (Android ones after hprof-conv).
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
heapcount() { java -cp "$VISUALVM_JAR:$T/java" HeapCount "$1"; }
loads=0
if [ -x "$HPROF_CONV" ] && [ -f "$VISUALVM_JAR" ] && command -v javac >/dev/null; then
    mkdir -p "$T/java"
    javac -d "$T/java" -cp "$VISUALVM_JAR" tests/java/HeapCount.java
    loads=1
else
    die "hprof-conv, VisualVM or javac missing (make check installs them)"
fi

# run CMD... : its exit status in $rc, its output in $T/out and $T/err
run() {
    set +e
    "$@" > "$T/out" 2> "$T/err"
    rc=$?
    set -e
}

inputs=""
for f in fixtures/*.hprof.gz; do
    n=$(basename "$f" .gz)
    gzip -dc "$f" > "$T/$n"
    inputs="$inputs $T/$n"
done
for f in ../shared/fixtures/*.hprof; do
    [ -f "$f" ] && inputs="$inputs $f"
done

banner "salvage: options and messages"
run "$B/hprof-shrink" --help
grep -q -- '--salvage' "$T/out" || die "hprof-shrink --help lacks --salvage"
run "$B/hprof-verify" --help
grep -q -- '--salvage' "$T/out" || die "hprof-verify --help lacks --salvage"
run "$B/hprof-info" --help
grep -q -- '--salvage' "$T/out" || die "hprof-info --help lacks --salvage"
first=$(echo $inputs | cut -d' ' -f1) # a dump of several MB: gzip and zstd blocks to cut
f=$first
size=$(wc -c < "$f")
head -c $((size / 2)) "$f" > "$T/half.hprof"
run "$B/hprof-shrink" -f "$T/half.hprof" "$T/half.out"
[ "$rc" = 1 ] || die "a cut dump without --salvage: exit $rc"
grep -q -- '--salvage keeps what is complete' "$T/err" || die "no hint at --salvage: $(cat "$T/err")"
[ -e "$T/half.out" ] && die "a failed shrink left its output"
# each tool that has --salvage ends the library's message with it, once;
# the library's message names no option (check_hostile)
for tool in hprof-shrink hprof-verify hprof-info; do
    out=; [ $tool = hprof-shrink ] && out=$T/half.out
    run "$B/$tool" "$T/half.hprof" $out
    [ "$rc" = 1 ] && [ "$(wc -l < "$T/err")" = 1 ] &&
        grep -q "^$tool: .*half.hprof: offset 0x[0-9a-f]*: .*[^;]; --salvage keeps what is complete$" "$T/err" &&
        [ "$(grep -o -- --salvage "$T/err" | wc -l)" = 1 ] || die "$tool, a cut dump: exit $rc: $(cat "$T/err")"
done
run "$B/hprof-shrink" -f --salvage --json "$T/half.hprof" "$T/half.out"
[ "$rc" = 0 ] || die "--salvage: exit $rc: $(cat "$T/err")"
grep -q "half.hprof: input cut at offset 0x[0-9a-f]*: [0-9]* bytes lost (.*; \(1 reference points\|[0-9]* references point\) at objects that never arrived$" "$T/err" ||
    die "--salvage report: $(cat "$T/err")"
grep -q '"salvage":{"cut":true,"input_end":'"$size"'\|"salvage":{"cut":true,"input_end":'$((size / 2)) "$T/out" ||
    die "--json lacks the salvage object: $(cat "$T/out")"
run "$B/hprof-info" --salvage --json "$T/half.hprof"
[ "$rc" = 0 ] || die "hprof-info --salvage: exit $rc: $(cat "$T/err")"
grep -q '"salvage":{"cut":true' "$T/out" || die "hprof-info --json lacks the salvage object"
run "$B/hprof-shrink" -f --salvage --json "$f" "$T/whole.out"
[ "$rc" = 0 ] || die "--salvage on a complete dump: exit $rc"
[ -s "$T/err" ] && die "--salvage on a complete dump reports: $(cat "$T/err")"
grep -q '"salvage":{"cut":false}' "$T/out" || die "complete dump: $(cat "$T/out")"
run "$B/hprof-shrink" -f "$f" "$T/plain.out"
cmp -s "$T/whole.out" "$T/plain.out" || die "--salvage changes the output of a complete dump"
head -c 40 "$f" > "$T/tiny.hprof"
run "$B/hprof-shrink" -f --salvage "$T/tiny.hprof" "$T/tiny.out"
[ "$rc" = 1 ] || die "nothing to salvage: exit $rc"
grep -q 'nothing to salvage' "$T/err" || die "nothing to salvage: $(cat "$T/err")"

banner "salvage: a dump cut between records before its heap dump"
# the offset of the first heap record: what is before it is what runtimes
# write before a heap dump, names, classes and stack traces
first_heap() {
    python3 - "$1" <<'PY'
import struct, sys
d = open(sys.argv[1], "rb").read()
pos = d.index(b"\0") + 13
while d[pos] not in (0x0c, 0x1c):
    pos += 9 + struct.unpack(">I", d[pos + 5:pos + 9])[0]
print(pos)
PY
}
for f in $inputs; do
    n=$(basename "$f" .hprof)
    at=$(first_heap "$f")
    head -c "$at" "$f" > "$T/noheap.hprof"
    # without --salvage it passes for a complete dump and is shrunk (exit
    # 0, the same output with -q or not), but one line warns that it looks cut,
    # from a file or a pipe (the one pass); -q silences it
    warning="warning: $T/noheap.hprof: no heap dump, only the names, classes and stack traces written before one: it looks cut before its heap dump, and analyzers refuse a dump without one"
    run "$B/hprof-shrink" -q -f "$T/noheap.hprof" "$T/noheap-q.out"
    [ "$rc" = 0 ] && [ ! -s "$T/err" ] || die "$n cut before its heap, -q without --salvage: exit $rc: $(cat "$T/err")"
    run "$B/hprof-shrink" -f "$T/noheap.hprof" "$T/noheap.out"
    [ "$rc" = 0 ] && [ "$(grep -c warning "$T/err")" = 1 ] && grep -qxF "hprof-shrink: $warning" "$T/err" ||
        die "$n cut before its heap, without --salvage: exit $rc: $(cat "$T/err")"
    cmp -s "$T/noheap.out" "$T/noheap-q.out" || die "$n cut before its heap: the warning changed the output"
    run sh -c "cat '$T/noheap.hprof' | '$B/hprof-shrink' -f - '$T/noheap-pipe.out'"
    [ "$rc" = 0 ] && grep -qxF "hprof-shrink: $(echo "$warning" | sed "s#$T/noheap.hprof#standard input#")" "$T/err" ||
        die "$n cut before its heap, from a pipe: exit $rc: $(cat "$T/err")"
    rm -f "$T/noheap.out" "$T/noheap-q.out" "$T/noheap-pipe.out"
    # hprof-verify and hprof-info read it as valid too, and warn the same
    for tool in hprof-verify hprof-info; do
        run "$B/$tool" "$T/noheap.hprof"
        [ "$rc" = 0 ] && [ "$(grep -c warning "$T/err")" = 1 ] && grep -qxF "$tool: $warning" "$T/err" ||
            die "$n cut before its heap, $tool: exit $rc: $(cat "$T/err")"
    done
    run "$B/hprof-verify" -q "$T/noheap.hprof"
    [ "$rc" = 0 ] && [ ! -s "$T/err" ] || die "$n cut before its heap, hprof-verify -q: $(cat "$T/err")"
    # with it, the input is cut: one line, at the cut, nothing left behind
    for tool in hprof-shrink hprof-verify hprof-info; do
        out=; [ $tool = hprof-shrink ] && out=$T/noheap.out
        run "$B/$tool" --salvage "$T/noheap.hprof" $out
        [ "$rc" = 1 ] && [ "$(wc -l < "$T/err")" = 1 ] &&
            grep -qx "$tool: $T/noheap.hprof: offset 0x$(printf %x "$at"): end of file: cut before any complete heap sub-record: nothing to salvage" "$T/err" ||
            die "$n cut before its heap, $tool --salvage: exit $rc: $(cat "$T/err")"
    done
    [ -e "$T/noheap.out" ] && die "$n cut before its heap: --salvage left an output"
    ls "$T" | grep -q '^hprof-shrink\..*\.tmp$' && die "$n cut before its heap: a temporary file left"
done
# a dump that has no heap dump and is not cut (a profile of the hprof agent,
# CONTROL_SETTINGS first): salvaged, as without --salvage
{ printf 'JAVA PROFILE 1.0.2\0\0\0\0\4\0\0\0\0\0\0\0\0'
  printf '\16\0\0\0\0\0\0\0\6\0\0\0\2\0\4'
  printf '\1\0\0\0\0\0\0\0\11\0\0\0\20Thing'; } > "$T/profile.hprof"
for salvage in "" --salvage; do
    run "$B/hprof-shrink" -f $salvage "$T/profile.hprof" "$T/profile.out"
    [ "$rc" = 0 ] && [ -s "$T/profile.out" ] && ! grep -q warning "$T/err" ||
        die "a profile without a heap dump, $salvage: exit $rc: $(cat "$T/err")"
done

f=$first
for z in gzip zstd; do
    banner "salvage: a $z input cut short, from a file and from a pipe"
    ext=$([ $z = gzip ] && echo gz || echo zst)
    $z -q -c "$f" > "$T/whole.hprof.$ext"
    zsize=$(wc -c < "$T/whole.hprof.$ext")
    head -c $((zsize * 9 / 10)) "$T/whole.hprof.$ext" > "$T/cut.hprof.$ext"
    run "$B/hprof-shrink" -f "$T/cut.hprof.$ext" "$T/$ext.out"
    [ "$rc" = 1 ] || die "a cut $z input without --salvage: exit $rc"
    grep -q "$z input is truncated; --salvage keeps what is complete" "$T/err" ||
        die "cut $z: $(cat "$T/err")"
    run "$B/hprof-shrink" -f --salvage --json "$T/cut.hprof.$ext" "$T/$ext.out"
    [ "$rc" = 0 ] || die "a cut $z input with --salvage: exit $rc: $(cat "$T/err")"
    grep -q "cut.hprof.$ext: $z input cut at offset 0x[0-9a-f]* (compressed): what it held is salvaged" "$T/err" ||
        die "cut $z report: $(cat "$T/err")"
    grep -q "\"${z}_cut_offset\":[0-9]" "$T/out" || die "cut $z --json: $(cat "$T/out")"
    run "$B/hprof-verify" "$T/$ext.out"
    [ "$rc" = 0 ] || die "the output of a cut $z input does not verify: $(cat "$T/err")"
    run "$B/hprof-verify" --salvage "$T/cut.hprof.$ext"
    [ "$rc" = 0 ] || die "hprof-verify --salvage of a cut $z input: exit $rc: $(cat "$T/err")"
    # through cat: standard input redirected from the file would be read as the file
    run sh -c "cat '$T/cut.hprof.$ext' | '$B/hprof-shrink' -f --salvage - '$T/$ext-pipe.out'"
    [ "$rc" = 0 ] || die "a cut $z input from a pipe with --salvage: exit $rc: $(cat "$T/err")"
    cmp -s "$T/$ext.out" "$T/$ext-pipe.out" || die "a cut $z input: another output from a pipe"
done

banner "salvage: every fixture cut at 40 offsets and more"
cuts=0 boundaries=0 loaded=0 before=0
for f in $inputs; do
    n=$(basename "$f" .hprof)
    size=$(wc -c < "$f")
    # the header's end: the NUL of the version string, then 12 bytes
    hdr=$(($(head -c 64 "$f" | tr '\0' '\n' | head -1 | wc -c) + 12))
    offsets="$hdr $((hdr + 1)) $((hdr + 8)) $((hdr + 9)) $((hdr + 10)) $((hdr + 40))"
    for k in $(seq 1 40); do
        offsets="$offsets $((size / 41 * k + k * 7))"
    done
    pick=0
    for off in $offsets; do
        [ "$off" -lt "$size" ] || continue
        cuts=$((cuts + 1))
        head -c "$off" "$f" > "$T/cut.hprof"
        run "$B/hprof-verify" "$T/cut.hprof"
        if [ "$rc" = 0 ]; then
            boundaries=$((boundaries + 1)) # a complete dump: a cut between records
        else
            [ "$rc" = 1 ] || die "$n cut at $off: hprof-verify exit $rc"
            grep -q -- '--salvage\|(truncated?)' "$T/err" || die "$n cut at $off: $(cat "$T/err")"
        fi
        run "$B/hprof-shrink" -q -f --salvage "$T/cut.hprof" "$T/cut.out"
        if [ "$rc" = 1 ] && grep -q 'nothing to salvage' "$T/err"; then
            before=$((before + 1)) # cut before the first complete heap sub-record
            continue
        fi
        [ "$rc" = 0 ] || { die "$n cut at $off: --salvage exit $rc: $(cat "$T/err")"; continue; }
        run "$B/hprof-verify" "$T/cut.out"
        [ "$rc" = 0 ] || die "$n cut at $off: the salvaged output does not verify: $(cat "$T/err")"
        pick=$((pick + 1))
        if [ "$loads" = 1 ] && [ "$pick" = 20 ]; then
            # a name of its own: VisualVM caches what it learns of a file
            # in FILE.hwcache, which a later file of the same name would reuse
            out="$T/load-$n-$off.hprof"
            cp "$T/cut.out" "$out"
            if head -c 18 "$out" | grep -q '1.0.3'; then
                "$HPROF_CONV" "$out" "$out.conv" > /dev/null 2>&1 ||
                    die "$n cut at $off: hprof-conv rejects the salvaged output"
                out="$out.conv"
            fi
            heapcount "$out" > "$T/count" 2>&1 ||
                die "$n cut at $off: VisualVM cannot load the salvaged output: $(tail -3 "$T/count")"
            loaded=$((loaded + 1))
        fi
    done
    # hprof-verify and hprof-info report on the last cut too
    run "$B/hprof-verify" --salvage "$T/cut.hprof"
    [ "$rc" = 0 ] || die "$n: hprof-verify --salvage exit $rc: $(cat "$T/err")"
    run "$B/hprof-info" --salvage "$T/cut.hprof"
    [ "$rc" = 0 ] || die "$n: hprof-info --salvage exit $rc: $(cat "$T/err")"
done
echo "    $cuts cuts ($boundaries between records, already complete; $before before any heap" \
    "sub-record, nothing to salvage), $loaded outputs loaded in VisualVM"

banner "salvage: a zero-filled tail ends the data, after a cut anywhere or a whole dump"
# the offset of the heap record in the middle of the dump $1
middle_heap_record() {
    python3 - "$1" <<'PY'
import struct, sys
d = open(sys.argv[1], "rb").read()
pos, heaps = d.index(b"\0") + 13, []
while pos + 9 <= len(d):
    if d[pos] in (0x0c, 0x1c):
        heaps.append(pos)
    pos += 9 + struct.unpack(">I", d[pos + 5:pos + 9])[0]
print(heaps[len(heaps) // 2])
PY
}
# hprof-shrink run with the options "$@" on the file $in and then on its
# bytes from a pipe, a .gz and a .zst file and both through a pipe: each
# exits as the file does, writes its output and says the same about it
# (the lines that name the input, but the summary's timing)
said() { grep "^hprof-shrink: $1: " "$2" | sed "s#^hprof-shrink: $1: ##"; }
each_stream_as_the_file() {
    run "$B/hprof-shrink" -f "$@" "$in" "$T/ref.out"
    want=$rc
    said "$in" "$T/err" > "$T/ref.said"
    gzip -c "$in" > "$T/s.hprof.gz"
    zstd -q -f -c "$in" -o "$T/s.hprof.zst"
    for way in pipe gz zst gz-pipe zst-pipe; do
        rm -f "$T/s.out"
        case $way in
        pipe) run sh -c "cat '$in' | '$B/hprof-shrink' -f $* - '$T/s.out'" ;;
        gz|zst) run "$B/hprof-shrink" -f "$@" "$T/s.hprof.$way" "$T/s.out" ;;
        *) run sh -c "cat '$T/s.hprof.${way%-pipe}' | '$B/hprof-shrink' -f $* - '$T/s.out'" ;;
        esac
        name=$T/s.hprof.$way
        case $way in *pipe) name="standard input" ;; esac
        [ "$rc" = "$want" ] || { die "$what from a $way, $*: exit $rc, $want from the file: $(cat "$T/err")"; continue; }
        said "$name" "$T/err" | cmp -s - "$T/ref.said" ||
            die "$what from a $way, $*: $(cat "$T/err"); from the file: $(cat "$T/ref.said")"
        [ "$rc" != 0 ] || cmp -s "$T/ref.out" "$T/s.out" || die "$what from a $way: another output"
    done
}
zcuts=0
for f in $inputs; do
    n=$(basename "$f" .hprof)
    size=$(wc -c < "$f")
    # a whole dump with zeros appended: the plain shrink's bytes, and said so
    cp "$f" "$T/zeros.hprof"
    head -c 70000 /dev/zero >> "$T/zeros.hprof"
    run "$B/hprof-verify" "$T/zeros.hprof"
    [ "$rc" = 1 ] && grep -q "offset 0x$(printf %x "$size"): zero bytes where a record should start (a preallocated or zero-filled tail?); --salvage keeps what is complete$" "$T/err" ||
        die "$n + zeros, no --salvage: exit $rc: $(cat "$T/err")"
    run "$B/hprof-shrink" -f --salvage "$T/zeros.hprof" "$T/zeros.out"
    [ "$rc" = 0 ] || die "$n + zeros: --salvage exit $rc: $(cat "$T/err")"
    grep -q "zeros.hprof: 70000 zero bytes at offset 0x$(printf %x "$size") taken as the end of the data" "$T/err" ||
        die "$n + zeros: $(cat "$T/err")"
    "$B/hprof-shrink" -q -f "$f" "$T/plain.out"
    cmp -s "$T/zeros.out" "$T/plain.out" || die "$n + zeros: not the plain shrink's output"
    # the same from a pipe, compressed or both; and cut at a heap record, zero-filled
    in=$T/zeros.hprof what="$n + zeros"
    each_stream_as_the_file --salvage
    each_stream_as_the_file
    head -c "$(middle_heap_record "$f")" "$f" > "$T/zrec.hprof"
    truncate -s $((size + 4096)) "$T/zrec.hprof"
    in=$T/zrec.hprof what="$n cut at a heap record, zero-filled"
    each_stream_as_the_file --salvage
    each_stream_as_the_file
    # cut anywhere, then zero-filled past the original size: what the cut
    # alone salvages, to the byte
    for k in $(seq 1 12); do
        off=$((size / 13 * k + k * 11))
        zcuts=$((zcuts + 1))
        head -c "$off" "$f" > "$T/cut.hprof"
        cp "$T/cut.hprof" "$T/zcut.hprof"
        truncate -s $((size + 4096)) "$T/zcut.hprof"
        run "$B/hprof-shrink" -q -f --salvage "$T/cut.hprof" "$T/cut.out"
        want=$rc
        run "$B/hprof-shrink" -f --salvage "$T/zcut.hprof" "$T/zcut.out"
        [ "$rc" = "$want" ] || { die "$n cut at $off, zero-filled: exit $rc, $want without zeros: $(cat "$T/err")"; continue; }
        [ "$rc" = 0 ] || continue
        grep -q "zcut.hprof: [0-9]* zero bytes at offset 0x[0-9a-f]* taken as the end of the data" "$T/err" ||
            die "$n cut at $off, zero-filled: $(cat "$T/err")"
        cmp -s "$T/cut.out" "$T/zcut.out" || die "$n cut at $off, zero-filled: not what the cut alone salvages"
        if [ $((k % 4)) = 0 ]; then
            in=$T/zcut.hprof what="$n cut at $off, zero-filled"
            each_stream_as_the_file --salvage
        fi
    done
done
echo "    $zcuts zero-filled cuts"

banner "salvage: a zero tail that is a hole (sparse file, zstd bomb) is not read through"
# A preallocated tail can be a hole of gigabytes, and the copy of a
# compressed zero bomb ends in one as long as it inflates to: where the
# zeros start is found from the file's last data, a few reads, not a read
# of every zero backwards (65,536 of 64 KiB for this 4 GiB).
command -v strace > /dev/null || { echo "FAIL: strace missing (apt-get install strace)" >&2; exit 1; }
gzip -dc fixtures/hotspot-synth.hprof.gz > "$T/hole.hprof"
truncate -s +4G "$T/hole.hprof"
ASAN_OPTIONS="${ASAN_OPTIONS:-}:detect_leaks=0" strace -f -qq -e trace=pread64,read -o "$T/hole.strace" \
    "$B/hprof-shrink" -q -f --salvage "$T/hole.hprof" "$T/hole.out" || die "a sparse zero tail: exit $?"
reads=$(grep -c 'read' "$T/hole.strace" || true)
[ "$reads" -lt 2000 ] || die "a sparse zero tail of 4 GiB took $reads reads"
gzip -dc fixtures/hotspot-synth.hprof.gz > "$T/hole.ref"
"$B/hprof-shrink" -q -f "$T/hole.ref" "$T/hole.ref.out"
cmp -s "$T/hole.out" "$T/hole.ref.out" || die "a sparse zero tail: not the whole dump's output"
rm -f "$T/hole.hprof" "$T/hole.strace"

banner "salvage: a file of several heap dumps cut anywhere keeps each dump's complete records"
mcuts=0
# what hprof-verify counts of each dump, a line each: "INSTANCES OBJ_ARRAYS PRIM_ARRAYS"
dump_objects() {
    "$B/hprof-verify" --salvage "$1" 2>/dev/null |
        sed -n 's/.*OK: .* \([0-9]*\) instances\?, \([0-9]*\) object arrays\?, \([0-9]*\) primitive arrays\? .*/\1 \2 \3/p'
}
for shape in "" --whole-dumps; do
    "$B/hprof-synth" -f --hotspot --dumps 3 $shape "$T/multi.hprof" > /dev/null
    size=$(wc -c < "$T/multi.hprof")
    for pct in 15 30 45 55 70 85 95; do
        off=$((size * pct / 100))
        head -c "$off" "$T/multi.hprof" > "$T/mcut.hprof"
        mcuts=$((mcuts + 1))
        run "$B/hprof-shrink" -q -f --salvage "$T/mcut.hprof" "$T/mcut.out"
        [ "$rc" = 0 ] || { die "${shape:-segments} cut at $pct%: exit $rc: $(cat "$T/err")"; continue; }
        "$B/hprof-verify" -q "$T/mcut.out" || die "${shape:-segments} cut at $pct%: the output does not verify"
        # every dump keeps what it held complete in the cut input
        dump_objects "$T/mcut.hprof" > "$T/mcut.in"
        dump_objects "$T/mcut.out" > "$T/mcut.kept"
        [ -s "$T/mcut.in" ] && cmp -s "$T/mcut.in" "$T/mcut.kept" ||
            die "${shape:-segments} cut at $pct%: $(tr '\n' ';' < "$T/mcut.in") became $(tr '\n' ';' < "$T/mcut.kept")"
    done
done
echo "    $mcuts cuts of files of three heap dumps"

[ "$fails" = 0 ] || { echo "$fails salvage test(s) failed" >&2; exit 1; }
echo "salvage tests passed"
