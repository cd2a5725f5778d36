#!/bin/sh
# check-layering.sh BUILD_DIR - the architecture's rules, checked on the
# sources (in the current directory) and the objects built from them:
#   1. layers: src/common uses only itself; src/core common and core;
#      src/rewrite and src/analyze also core and common, never each other;
#      checked twice, on the includes and on the calls (nm: an object calls
#      another when it uses a symbol the other defines), since a file can
#      call what it never includes (a declaration of its own, a header one
#      layer down that declares a function defined one layer up);
#      tools/ and include/ see no src/ header at all;
#   2. no two files of src/ include each other in a loop (headers), and no
#      two objects call each other in a loop, so that every file can be read
#      knowing only what it uses.
# tsort(1) reports a loop; the script prints it and fails.
# tests/layering-tests.sh runs it on small trees that break each rule.
set -eu
B=${1:-build}
fail=0
die() { echo "check-layering: $*" >&2; fail=1; }

allowed() { # LAYER -> the layers its files may include and call
    case $1 in
    common) echo "common" ;;
    core) echo "common core" ;;
    rewrite) echo "common core rewrite" ;;
    analyze) echo "common core analyze" ;;
    esac
}

may_use() { # LAYER USED_LAYER -> true when the rule allows it
    case " $(allowed "$1") " in
    *" $2 "*) return 0 ;;
    *) return 1 ;;
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
defs=$(mktemp)
trap 'rm -f "$edges" "$edges.err" "$defs"' EXIT

for f in src/*/*.c src/*/*.h; do
    [ -f "$f" ] || continue
    layer=$(basename "$(dirname "$f")")
    for h in $(sed -n 's/^#include "\(.*\)"/\1/p' "$f"); do
        hl=$(layer_of "$h")
        [ "$hl" = public ] && continue
        [ "$hl" = unknown ] && { die "$f includes $h, which is in no layer"; continue; }
        may_use "$layer" "$hl" || die "$f ($layer) includes $h ($hl)"
        echo "$(basename "$f") $h" >> "$edges"
    done
done
for f in tools/*.c tools/*.h include/*.h; do
    [ -f "$f" ] || continue
    for h in $(sed -n 's/^#include "\(.*\)"/\1/p' "$f"); do
        [ "$(layer_of "$h")" = public ] || [ -f "$(dirname "$f")/$h" ] ||
            die "$f includes $h, which is not public"
    done
done
if ! tsort "$edges" > /dev/null 2> "$edges.err"; then
    die "headers include each other in a loop: $(tr '\n' ' ' < "$edges.err")"
fi

# The objects of today's sources only: an object left in $B by a source
# since moved or removed would otherwise define its symbols twice.
objects=
for c in src/*/*.c; do
    [ -f "$c" ] || continue
    o="$B/${c%.c}.o"
    if [ -f "$o" ]; then objects="$objects $o"; else die "$o is not built"; fi
done

# Calls between objects: "CALLER CALLEE SYMBOL", objects named layer/file.
name_of() { echo "$(basename "$(dirname "$1")")/$(basename "$1" .o)"; }
for o in $objects; do
    nm --defined-only -g "$o" | awk -v o="$(name_of "$o")" 'NF == 3 { print $3, o }'
done | sort > "$defs"
for o in $objects; do
    nm --undefined-only -g "$o" | awk '{ print $NF }' | sort -u |
        join - "$defs" | awk -v me="$(name_of "$o")" '$2 != me { print me, $2, $1 }'
done | sort -u > "$edges"
[ -s "$edges" ] || die "no calls found between the objects of $B/src (not built?)"

# Direction: one line per offending pair of objects, naming one symbol.
bad=$(awk '{ split($1, a, "/"); split($2, b, "/"); print a[1], b[1], $1, $2, $3 }' "$edges" |
    while read -r from to caller callee sym; do
        may_use "$from" "$to" || echo "$caller $callee $sym $from $to"
    done | sort -u -k1,2)
if [ -n "$bad" ]; then
    echo "$bad" | while read -r caller callee sym from to; do
        echo "check-layering: $caller.o ($from) calls $sym, defined in $callee.o ($to)" >&2
    done
    fail=1
fi

cut -d' ' -f1,2 "$edges" | sort -u > "$edges.pairs"
mv "$edges.pairs" "$edges"
if ! tsort "$edges" > /dev/null 2> "$edges.err"; then
    die "objects call each other in a loop: $(tr '\n' ' ' < "$edges.err")"
fi
[ $fail = 0 ] && echo "check-layering: layers respected in includes and calls, no include or call loops ($(wc -l < "$edges") call edges)"
exit $fail
