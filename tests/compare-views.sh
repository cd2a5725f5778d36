#!/bin/sh
# compare-views.sh [--contents] A B - do two heap dumps show an analyst the
# same heap?  Their bytes may differ (records in another order); what is
# compared is what VisualVM's heap library reads of each
# (tests/java/HeapView.java: classes, roots, every object, its fields and
# references, String texts, array types and lengths; with --contents the
# primitive arrays' bytes too) and hprof-info --json's count and bytes
# per class.
#
# A and B may be gzip-compressed. An Android dump (JAVA PROFILE 1.0.3) is
# rewritten by hprof-roundtrip (ART's empty segments dropped, which
# VisualVM refuses) and converted by hprof-conv first, as VisualVM reads
# only the standard format.
#
# Exit 0 when the views are equal, 1 when they differ (the first 20
# differing lines printed, "-" from A, "+" from B), 2 on a usage error or
# a dump that cannot be read.
#
# Environment: HPROF_BUILD (build directory: hprof-info and
# tests/hprof-roundtrip), HEAPVIEW_CLASSES (a directory holding a compiled
# HeapView; compiled into a temporary one when unset), HPROF_CONV,
# VISUALVM_JAR, HEAPVIEW_JAVA_OPTS (default -Xmx2g), COMPARE_VIEWS_KEEP (a
# directory to keep the two views in, as a.view and b.view).
set -eu
B=${HPROF_BUILD:-build}
HPROF_CONV=${HPROF_CONV:-/usr/lib/android-sdk/platform-tools/hprof-conv}
VISUALVM_JAR=${VISUALVM_JAR:-/usr/share/visualvm/visualvm/modules/org-graalvm-visualvm-lib-jfluid-heap.jar}
HERE=$(dirname "$0")

contents=""
[ "${1:-}" != --contents ] || { contents=--contents; shift; }
if [ $# -ne 2 ]; then
    echo "usage: compare-views.sh [--contents] A B" >&2
    exit 2
fi

W=$(mktemp -d)
trap 'rm -rf "$W"' EXIT
fail() { echo "compare-views.sh: $*" >&2; exit 2; }

classes=${HEAPVIEW_CLASSES:-}
if [ -z "$classes" ]; then
    classes="$W/classes"
    javac -d "$classes" -cp "$VISUALVM_JAR" "$HERE/java/HeapView.java" || fail "javac HeapView"
fi

# standard NAME IN: IN as a plain 1.0.2 dump in $W/NAME.hprof
standard() {
    gzip -dcf "$2" > "$W/$1.raw" || fail "$2: cannot read"
    if head -c 18 "$W/$1.raw" | grep -q 'JAVA PROFILE 1.0.3'; then
        "$B/tests/hprof-roundtrip" "$W/$1.raw" "$W/$1.rt" > /dev/null || fail "$2: hprof-roundtrip"
        "$HPROF_CONV" "$W/$1.rt" "$W/$1.hprof" > /dev/null || fail "$2: hprof-conv"
        rm -f "$W/$1.raw" "$W/$1.rt"
    else
        mv "$W/$1.raw" "$W/$1.hprof"
    fi
}

# view NAME IN: VisualVM's view, then hprof-info's classes, into $W/NAME.view
view() {
    standard "$1" "$2"
    # shellcheck disable=SC2086 # the options are words
    java ${HEAPVIEW_JAVA_OPTS:--Xmx2g} -cp "$VISUALVM_JAR:$classes" HeapView $contents "$W/$1.hprof" \
        > "$W/$1.view" || fail "$2: VisualVM cannot load it"
    "$B/hprof-info" --json --top 1000000 "$W/$1.hprof" > "$W/$1.info" || fail "$2: hprof-info"
    python3 - "$W/$1.info" >> "$W/$1.view" <<'PY' || fail "$2: hprof-info's JSON"
import json, sys
text, at, dump = open(sys.argv[1]).read(), 0, 0
while text[at:].strip():  # an object per heap dump
    info, at = json.JSONDecoder().raw_decode(text, at + len(text[at:]) - len(text[at:].lstrip()))
    dump += 1
    for c in sorted(info["top_by_count"], key=lambda c: (c["name"], c["id"] or "")):
        print("info %d class %s %s count=%d bytes=%d" % (dump, c["name"], c["id"], c["count"], c["bytes"]))
PY
    rm -f "$W/$1.hprof" "$W/$1.info"
}

view a "$1"
view b "$2"
[ -z "${COMPARE_VIEWS_KEEP:-}" ] || cp "$W/a.view" "$W/b.view" "$COMPARE_VIEWS_KEEP/"
cmp -s "$W/a.view" "$W/b.view" && exit 0
echo "compare-views.sh: $1 and $2 differ:"
diff --old-line-format='- %L' --new-line-format='+ %L' --unchanged-line-format='' \
    "$W/a.view" "$W/b.view" | head -20 || true
exit 1
