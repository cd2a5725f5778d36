#!/bin/sh
# check-layering.sh BUILD_DIR - the architecture's rules, checked on the
# sources and the objects built from them:
#   1. layers: src/common includes only itself; src/core common and core;
#      src/rewrite and src/analyze also core and common, never each other;
#      tools/ and include/ see no src/ header at all;
#   2. no two files of src/ include each other in a loop (headers), and no
#      two objects call each other in a loop (nm: who defines what another
#      uses), so that every file can be read knowing only what it uses.
# tsort(1) reports a loop; the script prints it and fails.
set -eu
B=${1:-build}
fail=0
die() { echo "check-layering: $*" >&2; fail=1; }

allowed() { # LAYER -> the layers its files may include
    case $1 in
    common) echo "common" ;;
    core) echo "common core" ;;
    rewrite) echo "common core rewrite" ;;
    analyze) echo "common core analyze" ;;
    esac
}

layer_of() { # header name -> its layer, or "public"
    if [ -f "include/$1" ]; then echo public; return; fi
    for l in common core rewrite analyze; do
        [ -f "src/$l/$1" ] && { echo $l; return; }
    done
    echo unknown
}

edges=$(mktemp)
trap 'rm -f "$edges"' EXIT

for f in src/*/*.c src/*/*.h; do
    layer=$(basename "$(dirname "$f")")
    for h in $(sed -n 's/^#include "\(.*\)"/\1/p' "$f"); do
        hl=$(layer_of "$h")
        [ "$hl" = public ] && continue
        [ "$hl" = unknown ] && { die "$f includes $h, which is in no layer"; continue; }
        case " $(allowed "$layer") " in
        *" $hl "*) ;;
        *) die "$f ($layer) includes $h ($hl)" ;;
        esac
        echo "$(basename "$f") $h" >> "$edges"
    done
done
for f in tools/*.c tools/*.h include/*.h; do
    for h in $(sed -n 's/^#include "\(.*\)"/\1/p' "$f"); do
        [ "$(layer_of "$h")" = public ] || [ -f "$(dirname "$f")/$h" ] ||
            die "$f includes $h, which is not public"
    done
done
if ! tsort "$edges" > /dev/null 2> "$edges.err"; then
    die "headers include each other in a loop: $(tr '\n' ' ' < "$edges.err")"
fi
rm -f "$edges.err"

# Calls between objects: object A calls B when A uses a symbol B defines.
: > "$edges"
defs=$(mktemp)
trap 'rm -f "$edges" "$defs"' EXIT
for o in "$B"/src/*/*.o; do
    nm --defined-only -g "$o" | awk -v o="$(basename "$o" .o)" 'NF == 3 { print $3, o }'
done | sort > "$defs"
for o in "$B"/src/*/*.o; do
    me=$(basename "$o" .o)
    nm --undefined-only -g "$o" | awk '{ print $NF }' | sort -u |
        join - "$defs" | awk -v me="$me" '$2 != me { print me, $2 }'
done | sort -u > "$edges"
[ -s "$edges" ] || die "no calls found between the objects of $B/src (not built?)"
if ! tsort "$edges" > /dev/null 2> "$edges.err"; then
    die "objects call each other in a loop: $(tr '\n' ' ' < "$edges.err")"
fi
rm -f "$edges.err"
[ $fail = 0 ] && echo "check-layering: layers respected, no include or call loops ($(wc -l < "$edges") call edges)"
exit $fail
