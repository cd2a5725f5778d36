#!/bin/sh
# layering-tests.sh - tests/check-layering.sh fails on each kind of breach
# and passes the same small tree without it: a tree of two layers, one
# object in each, compiled here, the script run in it.
set -eu
script=$(cd "$(dirname "$0")" && pwd)/check-layering.sh
CC=${CC:-cc}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
failures=0

# tree NAME: a fresh tree with src/common/low.c and src/core/high.c, where
# high calls low as the rule allows.
tree() {
    t="$work/$1"
    mkdir -p "$t/src/common" "$t/src/core" "$t/build/src/common" "$t/build/src/core"
    printf '#include "low.h"\nint low_fn(void) { return 1; }\n' > "$t/src/common/low.c"
    printf 'int low_fn(void);\n' > "$t/src/common/low.h"
    printf '#include "low.h"\nint high_fn(void);\nint high_fn(void) { return low_fn() + 1; }\n' \
        > "$t/src/core/high.c"
    printf 'int high_fn(void);\n' > "$t/src/core/high.h"
}

build() { # in the current tree
    for c in "$t"/src/*/*.c; do
        rel=${c#"$t"/}
        $CC -c -I"$t/src/common" -I"$t/src/core" -o "$t/build/${rel%.c}.o" "$c"
    done
}

# expect NAME STATUS PATTERN: the script exits STATUS in tree NAME and its
# output holds PATTERN.
expect() {
    out=$(cd "$work/$1" && sh "$script" build 2>&1) && rc=0 || rc=$?
    if [ "$rc" = "$2" ] && printf '%s\n' "$out" | grep -q -- "$3"; then
        echo "ok: $1"
    else
        echo "FAIL: $1: exit $rc, wanted $2 and '$3' in:" >&2
        printf '%s\n' "$out" >&2
        failures=$((failures + 1))
    fi
}

echo "===> a tree that keeps the rules passes"
tree good && build
expect good 0 "layers respected in includes and calls"

echo "===> a call from common into core fails, naming both objects and the symbol"
# The declaration is the caller's own, so no include shows the breach, and
# core does not call common here, so no loop does either.
tree call_up
printf 'int high_fn(void);\nint low_fn(void) { return high_fn(); }\n' > "$t/src/common/low.c"
printf 'int high_fn(void);\nint high_fn(void) { return 2; }\n' > "$t/src/core/high.c"
build
expect call_up 1 "common/low.o (common) calls high_fn, defined in core/high.o (core)"

echo "===> an include from common of a core header fails"
tree include_up
printf '#include "high.h"\nint low_fn(void) { return 1; }\n' > "$t/src/common/low.c"
build
expect include_up 1 "src/common/low.c (common) includes high.h (core)"

echo "===> two objects of one layer calling each other fail as a loop"
tree call_loop
printf 'int high_fn(void);\nint other_fn(void);\nint other_fn(void) { return high_fn(); }\n' \
    > "$t/src/core/other.c"
printf 'int other_fn(void);\nint high_fn(void);\nint high_fn(void) { return other_fn(); }\n' \
    > "$t/src/core/high.c"
build
expect call_loop 1 "objects call each other in a loop"

echo "===> an object left behind by a moved source is not counted"
tree stale && build
cp "$t/build/src/core/high.o" "$t/build/src/common/high.o"
expect stale 0 "layers respected in includes and calls"

[ "$failures" = 0 ] && echo "layering-tests: all passed"
exit "$failures"
