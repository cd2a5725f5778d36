#!/bin/sh
# cli-tests.sh - the command-line tools end to end, and real analyzers
# (hprof-conv, VisualVM's heap library) reading what libhprof writes.
# Run by `make check`; HPROF_BUILD names the build directory.
set -eu
B=${HPROF_BUILD:-build}
T=$(mktemp -d)
trap 'umount "$T/small" 2> /dev/null || true; rm -rf "$T"' EXIT
fails=0
die() { echo "FAIL: $*" >&2; fails=$((fails + 1)); }
# A shell without job control starts its background jobs with SIGINT
# ignored, and the tools keep a signal ignored at start ignored, as gzip
# does: a job meant to be stopped by SIGINT is started through
# `env --default-signal=INT` (env execs it: $! is the tool's pid).
# COMMAND... as a user id of its own, under a limit of N tasks
# (RLIMIT_NPROC, which binds every user but root and counts all the
# user's tasks: a uid nobody else runs as leaves the limit to COMMAND).
# The files it uses must be that uid's ($LIMITED_UID).
LIMITED_UID=$((61000 + $$ % 4000))
as_limited_user() { # N COMMAND...
    n=$1; shift
    ASAN_OPTIONS="${ASAN_OPTIONS:-}:detect_leaks=0" \
        setpriv --reuid=$LIMITED_UID --regid=$LIMITED_UID --clear-groups prlimit --nproc="$n" "$@"
}
# Signal SIG to PID and wait for it: its exit status in $got.  One that
# outlives the signal by 60 s is a failure, not a hang of the suite.
signal_and_wait() { # SIG PID
    kill -"$1" "$2"
    i=0
    while kill -0 "$2" 2> /dev/null && [ $i -lt 1200 ]; do i=$((i + 1)); sleep 0.05; done
    if kill -0 "$2" 2> /dev/null; then
        die "SIG$1 did not stop process $2"
        kill -KILL "$2"
    fi
    set +e; wait "$2"; got=$?; set -e
}
banner() { echo "===> $*"; }
finish() {
    if [ "$fails" -ne 0 ]; then
        echo "cli-tests: $fails failure(s)" >&2
        exit 1
    fi
    echo "cli-tests: all passed"
    exit 0
}

# expect CODE CMD... : run CMD, check its exit status
expect() {
    want=$1; shift
    set +e
    "$@" > "$T/out" 2> "$T/err"
    got=$?
    set -e
    [ "$got" = "$want" ] || die "'$*' exited $got, expected $want: $(cat "$T/err")"
}

# The command-line conventions are functions t_NAME, run after
# the end-to-end suite below; `tests/cli-tests.sh NAME...` runs only those,
# without Java or the analyzers, to iterate quickly.
TESTS=""

# start_app LOG JAVA_ARGS...: a Java program in the background ($app),
# waited for (30 s at most) until it prints "ready" into LOG.
start_app() {
    app_log=$1; shift
    java "$@" > "$app_log" 2>&1 &
    app=$!
    i=0
    until grep -qs ready "$app_log"; do
        i=$((i + 1)); [ $i -lt 300 ] || break
        sleep 0.1
    done
}

# dump_app OUT JCMD_OPTION JAVA_ARGS...: start a Java program that prints
# "ready" once its heap is built, dump that heap to OUT with jcmd (with
# JCMD_OPTION, say -gz=1, if not empty), and stop the program.
dump_app() {
    app_out=$1 app_opt=$2; shift 2
    start_app "$app_out.log" "$@"
    # shellcheck disable=SC2086 # no option is no word
    jcmd $app GC.heap_dump $app_opt "$app_out" > /dev/null || die "jcmd could not dump $*"
    kill $app 2>/dev/null || true; wait $app 2>/dev/null || true
}

# jvm_dump_into_fifo OUT JCMD_OPTION JAVA_ARGS...: as dump_app, but jcmd
# writes the heap into a named pipe, read by `cat > OUT` (a one-pass
# shrink can take cat's place). HotSpot creates its dump file exclusively
# ("Unable to create ...: File exists" for the FIFO, and jcmd still exits
# 0) unless given -overwrite, which JDK 17.0.15 has; it never seeks, with
# -gz=1 too. Its open waits for a reader, and while the reader is slow the
# whole JVM waits at the dump's safepoint.
# FIFO_READERs of jvm_dump_into_fifo: FIFO OUT
fifo_cat() { cat "$1" > "$2"; }
# hprof-shrink reads the FIFO itself, as it comes, nothing in TMPDIR; what
# it read is kept (tee) for the multi-pass shrink to compare with
fifo_shrink() {
    tee "$2.raw" < "$1" | TMPDIR=/nonexistent "$B/hprof-shrink" -q -f --json - "$2" > "$2.json"
}

jvm_dump_into_fifo() {
    fifo_out=$1 fifo_opt=$2; shift 2
    start_app "$fifo_out.log" "$@"
    rm -f "$fifo_out.fifo"
    mkfifo "$fifo_out.fifo"
    ${FIFO_READER:-fifo_cat} "$fifo_out.fifo" "$fifo_out" &
    reader=$!
    # shellcheck disable=SC2086 # no option is no word
    timeout 300 jcmd $app GC.heap_dump -overwrite $fifo_opt "$fifo_out.fifo" > "$fifo_out.jcmd" 2>&1 || true
    if ! grep -q 'Heap dump file created' "$fifo_out.jcmd"; then
        die "jcmd could not dump $* into a FIFO: $(cat "$fifo_out.jcmd")"
        timeout 5 sh -c ': > "$1"' sh "$fifo_out.fifo" || true # the reader still waits for a writer
    fi
    wait $reader || die "reading the FIFO jcmd wrote"
    kill $app 2>/dev/null || true; wait $app 2>/dev/null || true
    rm -f "$fifo_out.fifo"
}

# mode FILE: its permission bits in octal
mode() { stat -c %a "$1"; }

TESTS="$TESTS permissions"
t_permissions() {
    d=$T/perm; rm -rf "$d"; mkdir -p "$d/batch"
    gzip -dc fixtures/hotspot-synth.hprof.gz > "$d/in.hprof"
    cp fixtures/hotspot-synth.hprof.gz "$d/in.hprof.gz"
    chmod 600 "$d/in.hprof" "$d/in.hprof.gz"
    # the output is never readable by more people than the input
    (umask 022; "$B/hprof-shrink" -q "$d/in.hprof" "$d/out.hprof") || die "shrink"
    [ "$(mode "$d/out.hprof")" = 600 ] || die "a 0600 input gave a $(mode "$d/out.hprof") output"
    (umask 022; "$B/hprof-shrink" -q -z "$d/in.hprof.gz" "$d/out.hprof.gz") || die "shrink -z"
    [ "$(mode "$d/out.hprof.gz")" = 600 ] || die "-z: a 0600 input gave $(mode "$d/out.hprof.gz")"
    (umask 022; "$B/hprof-shrink" -q -o "$d/batch" "$d/in.hprof" > /dev/null) || die "batch"
    [ "$(mode "$d/batch/in.hprof")" = 600 ] || die "batch: a 0600 input gave $(mode "$d/batch/in.hprof")"
    # the directories a batch run makes: the input's bits plus x where r
    (umask 022; "$B/hprof-shrink" -q -o "$d/made/out" "$d/in.hprof" > /dev/null) || die "batch, new -o"
    [ "$(mode "$d/made")" = 700 ] && [ "$(mode "$d/made/out")" = 700 ] ||
        die "batch: a 0600 input gave directories $(mode "$d/made") $(mode "$d/made/out")"
    # and the owner may always write in them: a read-only input's outputs
    # go there (root writes anywhere, so the bits are what is checked)
    cp "$d/in.hprof" "$d/ro.hprof"; chmod 444 "$d/ro.hprof"
    (umask 022; "$B/hprof-shrink" -q -o "$d/ro/out" "$d/ro.hprof" > /dev/null) || die "batch, read-only input"
    [ "$(mode "$d/ro")" = 755 ] && [ "$(mode "$d/ro/out")" = 755 ] ||
        die "batch: a 0444 input gave directories $(mode "$d/ro") $(mode "$d/ro/out")"
    # as a user whom the bits bind (the test's own directory is 0700)
    if [ "$(id -u)" = 0 ] && id nobody > /dev/null 2>&1 &&
        su nobody -s /bin/sh -c "'$(cd "$B" && pwd)/hprof-shrink' --version" > /dev/null 2>&1; then
        nb=$(mktemp -d /tmp/hprof-perm.XXXXXX); chmod 755 "$nb"; chown nobody "$nb"
        cp "$d/ro.hprof" "$nb/in.hprof"; chown nobody "$nb/in.hprof"
        su nobody -s /bin/sh -c "cd $nb && TMPDIR=$nb '$(cd "$B" && pwd)/hprof-shrink' -q -o out in.hprof" \
            > /dev/null 2> "$T/err" || { rm -rf "$nb"; die "batch as nobody, a 0444 input: it failed"; }
        [ -s "$nb/out/in.hprof" ] || { rm -rf "$nb"; die "batch as nobody, a 0444 input: no output"; }
        # its input's identity recorded, with the output's bits as they were
        [ ! -s "$T/err" ] || { rm -rf "$nb"; die "batch as nobody, a 0444 input: $(cat "$T/err")"; }
        [ "$(mode "$nb/out/in.hprof")" = 444 ] || { rm -rf "$nb"; die "batch as nobody: output $(mode "$nb/out/in.hprof")"; }
        rm -rf "$nb"
    fi
    # the input's bits, whatever the umask (as gzip does)
    chmod 640 "$d/in.hprof"
    (umask 077; "$B/hprof-shrink" -q -f "$d/in.hprof" "$d/out.hprof") || die "shrink 0640"
    [ "$(mode "$d/out.hprof")" = 640 ] || die "a 0640 input gave $(mode "$d/out.hprof")"
    # a FIFO's bits say who may write into it: its dump is kept 0600
    mkfifo -m 666 "$d/fifo.hprof"
    (cat "$d/in.hprof" > "$d/fifo.hprof" &)
    (umask 022; "$B/hprof-shrink" -q "$d/fifo.hprof" "$d/from-fifo.hprof") || die "shrink from a FIFO"
    [ "$(mode "$d/from-fifo.hprof")" = 600 ] || die "a 0666 FIFO gave a $(mode "$d/from-fifo.hprof") output"
    # standard input: 0600, or stricter with the umask
    (umask 022; "$B/hprof-shrink" -q - "$d/stdin.hprof" < "$d/in.hprof") || die "stdin"
    [ "$(mode "$d/stdin.hprof")" = 600 ] || die "stdin input gave $(mode "$d/stdin.hprof")"
    (umask 077; "$B/hprof-shrink" -q - "$d/stdin2.hprof" < "$d/in.hprof") || die "stdin 077"
    [ "$(mode "$d/stdin2.hprof")" = 600 ] || die "stdin input, umask 077: $(mode "$d/stdin2.hprof")"
    (umask 277; "$B/hprof-shrink" -q - "$d/stdin3.hprof" < "$d/in.hprof") || die "stdin 277"
    [ "$(mode "$d/stdin3.hprof")" = 400 ] || die "stdin input, umask 277: $(mode "$d/stdin3.hprof")"
    # as root, owner and group too
    if [ "$(id -u)" = 0 ]; then
        chown 65534:65534 "$d/in.hprof"
        "$B/hprof-shrink" -q -f "$d/in.hprof" "$d/out.hprof" || die "shrink (chown)"
        [ "$(stat -c %u:%g "$d/out.hprof")" = 65534:65534 ] || die "root: owner $(stat -c %u:%g "$d/out.hprof")"
    fi
}

TESTS="$TESTS batch_shrinks_a_file_named_twice_once"
t_batch_shrinks_a_file_named_twice_once() {
    # the same file by two paths, or a directory given twice, is one input:
    # shrunk once, under the name given first (whatever the sorted order),
    # the other name skipped naming it; a different file that would write
    # the same output still fails, with the names it collides with, and so
    # does every other name of a file that fails so
    d=$T/tw; rm -rf "$d"; mkdir -p "$d/in" "$d/other"
    gzip -dc fixtures/hotspot-synth.hprof.gz > "$d/in/x.hprof"
    for first in "$d/in/x.hprof" "$d/in/../in/x.hprof"; do
        second=$([ "$first" = "$d/in/x.hprof" ] && echo "$d/in/../in/x.hprof" || echo "$d/in/x.hprof")
        rm -rf "$d/o1"
        expect 0 "$B/hprof-shrink" -o "$d/o1" "$first" "$second"
        grep -qx "1 shrunk, 0 failed, 1 skipped" "$T/out" || die "named twice: $(cat "$T/out")"
        grep -qxF "$second -> $d/o1/x.hprof: skipped, the same file as $first" "$T/out" &&
            grep -q "^$first -> $d/o1/x.hprof: [0-9]* -> " "$T/out" ||
            die "named twice, $first first: $(cat "$T/out")"
        "$B/hprof-verify" "$d/o1/x.hprof" > /dev/null || die "named twice: the output does not verify"
        # roots: the first given is walked first, its dumps the ones shrunk
        rm -rf "$d/o2"
        expect 0 "$B/hprof-shrink" -r -o "$d/o2" "${first%/x.hprof}" "${second%/x.hprof}"
        grep -qx "1 shrunk, 0 failed, 1 skipped" "$T/out" || die "directory twice: $(cat "$T/out")"
        grep -qxF "$second -> $d/o2/x.hprof: skipped, the same file as $first" "$T/out" ||
            die "directory twice, ${first%/x.hprof} first: $(cat "$T/out")"
    done
    rm -rf "$d/o2"
    expect 0 "$B/hprof-shrink" -r -o "$d/o2" "$d/in" "$d/in/"
    grep -qx "1 shrunk, 0 failed, 1 skipped" "$T/out" || die "directory twice: $(cat "$T/out")"
    gzip -dc fixtures/android-synth.hprof.gz > "$d/other/x.hprof"
    expect 1 "$B/hprof-shrink" -o "$d/o3" "$d/in/x.hprof" "$d/other/x.hprof" "$d/in/../in/x.hprof"
    grep -qx "0 shrunk, 3 failed, 0 skipped" "$T/out" || die "named twice beside another: $(cat "$T/out")"
    [ "$(grep -c 'would write' "$T/err")" = 3 ] || die "named twice beside another: $(cat "$T/err")"
    # the name repeated fails as the name it repeats does, naming the other file
    grep -qxF "hprof-shrink: $d/in/../in/x.hprof: skipped: $d/other/x.hprof would write $d/o3/x.hprof too" "$T/err" &&
        grep -qxF "hprof-shrink: $d/in/x.hprof: skipped: $d/other/x.hprof would write $d/o3/x.hprof too" "$T/err" &&
        grep -qxF "hprof-shrink: $d/other/x.hprof: skipped: $d/in/x.hprof would write $d/o3/x.hprof too" "$T/err" ||
        die "named twice beside another: $(cat "$T/err")"
    grep -q "same file" "$T/out" "$T/err" && die "a name said to be the same file as one that failed"
    [ ! -e "$d/o3/x.hprof" ] || die "a colliding output was written"
    expect 1 "$B/hprof-shrink" --json -o "$d/o3" "$d/in/x.hprof" "$d/other/x.hprof" "$d/in/../in/x.hprof"
    grep -q '"input":"'"$d"'/in/../in/x.hprof",.*"status":"failed",.*"exit":1,"class":"invalid input"' "$T/out" ||
        die "named twice beside another, --json: $(cat "$T/out")"
    # a file named again beside two others: the same, "(and others)"
    cp "$d/other/x.hprof" "$d/x.hprof"
    expect 1 "$B/hprof-shrink" -o "$d/o4" "$d/other/x.hprof" "$d/in/x.hprof" "$d/x.hprof" "$d/other/../other/x.hprof"
    grep -qx "0 shrunk, 4 failed, 0 skipped" "$T/out" || die "named twice beside two: $(cat "$T/out")"
    grep -qxF "hprof-shrink: $d/other/../other/x.hprof: skipped: $d/in/x.hprof would write $d/o4/x.hprof too (and others)" "$T/err" ||
        die "named twice beside two: $(cat "$T/err")"
}

TESTS="$TESTS batch_trees"
t_batch_trees() {
    d=$T/bt; rm -rf "$d"; mkdir -p "$d"
    gzip -dc fixtures/hotspot-synth.hprof.gz > "$d/x.hprof"
    # x.hprof beside x.hprof.gz: both would write out/x.hprof; neither is
    # written, both are named, before any work (exit 1)
    mkdir -p "$d/coll"
    cp "$d/x.hprof" "$d/coll/a.hprof"; cp fixtures/hotspot-synth.hprof.gz "$d/coll/a.hprof.gz"
    cp "$d/x.hprof" "$d/coll/b.hprof"
    expect 1 "$B/hprof-shrink" -r -o "$d/outc" "$d/coll"
    grep -q "coll/a.hprof: skipped: .*coll/a.hprof.gz would write .*outc/a.hprof too" "$T/err" &&
        grep -q "coll/a.hprof.gz: skipped: .*coll/a.hprof would write" "$T/err" ||
        die "collision not reported with both names: $(cat "$T/err")"
    [ ! -e "$d/outc/a.hprof" ] || die "a colliding output was written"
    [ -s "$d/outc/b.hprof" ] || die "the other input was not shrunk"
    grep -qx "1 shrunk, 2 failed, 0 skipped" "$T/out" || die "collision tally: $(cat "$T/out")"
    mkdir -p "$d/a" "$d/b"; cp "$d/x.hprof" "$d/a/"; cp "$d/x.hprof" "$d/b/"
    expect 1 "$B/hprof-shrink" -j2 -o "$d/outab" "$d/a/x.hprof" "$d/b/x.hprof"
    [ "$(grep -c 'would write' "$T/err")" = 2 ] || die "-o o a/x b/x: $(cat "$T/err")"
    [ ! -e "$d/outab/x.hprof" ] || die "-o o a/x b/x wrote one of them"
    # a directory where the batch would name an output fails that file,
    # run after run: its output never goes inside it
    mkdir -p "$d/outdir/x.hprof"
    for run in 1 2; do
        expect 2 "$B/hprof-shrink" -o "$d/outdir" "$d/x.hprof"
        grep -q "outdir/x.hprof: is a directory" "$T/err" || die "batch run $run, OUT a directory: $(cat "$T/err")"
        [ -z "$(ls -A "$d/outdir/x.hprof")" ] || die "batch run $run wrote into the directory at OUT"
    done
    # a FIFO named *.hprof is skipped, never opened (it would hang)
    mkdir -p "$d/tree/sub"; cp "$d/x.hprof" "$d/tree/sub/"; mkfifo "$d/tree/fifo.hprof"
    # a symbolic link to a dump is followed; a dump with a newline in its
    # name stays on one line; ANDROID.HPROF matches; a 246-byte name works
    ln -s ../x.hprof "$d/tree/link.hprof"
    cp "$d/x.hprof" "$d/tree/new
line.hprof"
    cp "$d/x.hprof" "$d/tree/ANDROID.HPROF"
    long=$(printf '%0240d' 0).hprof
    cp "$d/x.hprof" "$d/tree/$long"
    set +e
    timeout 60 "$B/hprof-shrink" -r -j2 -o "$d/outt/" "$d/tree" > "$T/out" 2> "$T/err"
    got=$?
    set -e
    [ "$got" = 0 ] || die "tree batch exited $got: $(cat "$T/err")"
    grep -q 'fifo.hprof: skipped, not a regular file (a FIFO)' "$T/out" || die "FIFO: $(cat "$T/out")"
    for f in sub/x.hprof link.hprof ANDROID.HPROF "$long" "new
line.hprof"; do
        [ -s "$d/outt/$f" ] || die "tree batch did not write $f"
    done
    [ "$(wc -l < "$T/out")" = 7 ] || die "not one line per file: $(cat "$T/out")"
    grep -qF 'new\nline.hprof" -> "' "$T/out" || die "newline name not quoted: $(cat "$T/out")"
    grep -q '//' "$T/out" && die "doubled slash: $(cat "$T/out")"
    grep -qx "5 shrunk, 0 failed, 1 skipped" "$T/out" || die "tree tally: $(cat "$T/out")"
    # IN's trailing slashes, however many, are not part of the relative paths
    expect 0 "$B/hprof-shrink" -r -o "$d/outs" "$d/tree//"
    [ -s "$d/outs/sub/x.hprof" ] || die "IN// lost a byte of the relative path: $(cat "$T/out")"
    # the output directory inside the input tree is not walked
    "$B/hprof-shrink" -r -o "$d/tree/shrunk" "$d/tree" > /dev/null 2>&1 || die "out inside in"
    "$B/hprof-shrink" -r -f -o "$d/tree/shrunk" "$d/tree" > "$T/out" 2>&1 || die "out inside in (2)"
    [ ! -e "$d/tree/shrunk/shrunk" ] || die "the output directory was walked"
    expect 2 "$B/hprof-shrink" -r -o "$d/tree" "$d/tree"
    grep -q 'tree: is the output directory: choose another -o' "$T/err" || die "-o IN IN: $(cat "$T/err")"
    grep -q '^[^ ]*tree/shrunk/' "$T/out" && die "walked into the output: $(cat "$T/out")"
    # unreadable directories are reported, exit non-zero (not as root)
    chmod 711 "$T" "$d"
    mkdir -p "$d/nb/ok" "$d/nb/closed"; cp "$d/x.hprof" "$d/nb/ok/"; chmod -R a+rX "$d/nb"
    chmod 000 "$d/nb/closed"; mkdir -p "$d/nbout"; chmod 777 "$d/nbout"
    asnobody="setpriv --reuid=65534 --regid=65534 --clear-groups"
    expect 3 $asnobody "$B/hprof-shrink" -r -o "$d/nbout" "$d/nb"
    grep -q 'nb/closed: cannot read this directory: Permission denied' "$T/err" || die "unreadable dir: $(cat "$T/err")"
    [ -s "$d/nbout/ok/x.hprof" ] || die "unreadable dir stopped the rest"
    expect 3 $asnobody "$B/hprof-shrink" -r -o "$d/nbout" "$d/nb/closed"
    grep -q 'closed: cannot read this directory' "$T/err" || die "unreadable IN: $(cat "$T/err")"
    # a run killed with SIGKILL leaves its temporary file; the next batch
    # over that directory removes it, and not one a live process holds
    mkdir -p "$d/stale"; mkfifo "$d/slow.hprof"
    "$B/hprof-shrink" -q "$d/slow.hprof" "$d/stale/x.hprof" 2> /dev/null &
    pid=$!
    exec 7> "$d/slow.hprof"
    i=0; until ls "$d/stale" | grep -q '\.tmp$'; do i=$((i + 1)); [ $i -lt 100 ] || break; sleep 0.05; done
    kill -KILL $pid; { wait $pid; } 2> /dev/null || true; exec 7>&-
    stale=$(ls "$d/stale" | grep '\.tmp$') || die "no temporary file after SIGKILL"
    : > "$d/stale/hprof-shrink.Zzzzzz.tmp"
    flock "$d/stale/hprof-shrink.Zzzzzz.tmp" sleep 30 &
    holder=$!
    sleep 0.2
    expect 0 "$B/hprof-shrink" -o "$d/stale" "$d/x.hprof"
    grep -q "removed .*stale/$stale, a temporary file left by an interrupted run" "$T/err" || die "stale: $(cat "$T/err")"
    [ ! -e "$d/stale/$stale" ] || die "the stale temporary file stayed"
    [ -e "$d/stale/hprof-shrink.Zzzzzz.tmp" ] || die "a held temporary file was removed"
    kill $holder; wait $holder 2>/dev/null || true
}

TESTS="$TESTS stdin_position"
t_stdin_position() {
    # a regular file as standard input is read from where it stands, as
    # cat reads it: here past 7 bytes that are not the dump's
    d=$T/sp; rm -rf "$d"; mkdir -p "$d"
    gzip -dc fixtures/hotspot-synth.hprof.gz > "$d/x.hprof"
    { printf 'prefix!'; cat "$d/x.hprof"; } > "$d/px.hprof"
    cat "$d/x.hprof" | "$B/hprof-shrink" -q - "$d/ref.hprof"
    for passes in --one-pass --multi-pass; do
        { dd bs=7 count=1 of=/dev/null 2> /dev/null
          "$B/hprof-shrink" -q -f $passes - "$d/out.hprof"; } < "$d/px.hprof" 2> "$T/err" ||
            die "$passes, standard input past its start: $(cat "$T/err")"
        "$B/hprof-shrink" -q -f $passes - "$d/want.hprof" < "$d/x.hprof"
        cmp -s "$d/want.hprof" "$d/out.hprof" || die "$passes, standard input past its start: another output"
    done
    { dd bs=7 count=1 of=/dev/null 2> /dev/null; "$B/hprof-verify" -; } < "$d/px.hprof" > /dev/null 2> "$T/err" ||
        die "hprof-verify, standard input past its start: $(cat "$T/err")"
}

TESTS="$TESTS a_directory_locked_by_another_program_does_not_hang_a_run"
t_a_directory_locked_by_another_program_does_not_hang_a_run() {
    # the output directory's lock keeps our sweep of stale temporary files
    # off a file being created or renamed, for a few system calls; another
    # program holding it for good is waited for briefly, not forever
    d=$T/dl; rm -rf "$d"; mkdir -p "$d/out" "$d/batch"
    gzip -dc fixtures/hotspot-synth.hprof.gz > "$d/x.hprof"
    flock -o -x "$d/out" sleep 120 > /dev/null 2>&1 &
    holder=$!
    i=0; until ! flock -n -s "$d/out" true; do i=$((i + 1)); [ $i -lt 100 ] || break; sleep 0.05; done
    expect 0 timeout 60 "$B/hprof-shrink" -q "$d/x.hprof" "$d/out/x.hprof"
    expect 0 timeout 60 "$B/hprof-shrink" -q -o "$d/out" "$d/x.hprof"
    pkill -P $holder sleep; wait $holder 2> /dev/null || true
    "$B/hprof-verify" "$d/out/x.hprof" > /dev/null || die "the output does not verify"
    ls "$d/out" | grep -q '\.tmp$' && die "a temporary file stayed: $(ls "$d/out")"
    return 0
}

TESTS="$TESTS a_signal_ignored_at_start_stays_ignored"
t_a_signal_ignored_at_start_stays_ignored() {
    # nohup(1) ignores SIGHUP, a shell's background job SIGINT: the run
    # they started goes on through them, alone or in a batch
    d=$T/ign; rm -rf "$d"; mkdir -p "$d/out"
    gzip -dc fixtures/android-synth.hprof.gz > "$d/x.hprof"
    for batch in no yes; do
        rm -f "$d/fifo" "$d/out/"*; mkfifo "$d/fifo"
        if [ $batch = yes ]; then
            set -- -j1 -o "$d/out" "$d/fifo.hprof"; ln -sf "$d/fifo" "$d/fifo.hprof"
        else
            set -- "$d/fifo" "$d/out/x.hprof"
        fi
        sh -c 'trap "" HUP INT; exec "$@"' sh "$B/hprof-shrink" -q "$@" > /dev/null 2> "$d/err" &
        pid=$!
        exec 7> "$d/fifo"
        head -c 100000 "$d/x.hprof" >&7
        i=0; until ls "$d/out" | grep -q '\.tmp$'; do i=$((i + 1)); [ $i -lt 200 ] || break; sleep 0.05; done
        ls "$d/out" | grep -q '\.tmp$' || die "batch=$batch: no temporary output while running"
        if [ $batch = yes ]; then # the child as well as the batch
            pgrep -P $pid > /dev/null || die "batch=yes: no child running"
            pkill -HUP -P $pid 2> /dev/null || true
        fi
        kill -HUP $pid 2> /dev/null || true; kill -INT $pid 2> /dev/null || true; sleep 0.2
        tail -c +100001 "$d/x.hprof" >&7 2> /dev/null || true # the run may be gone
        exec 7>&-
        set +e; wait $pid; got=$?; set -e
        [ "$got" = 0 ] || die "batch=$batch: an ignored signal stopped the run: exit $got: $(cat "$d/err")"
        "$B/hprof-verify" "$d/out/"*.hprof > /dev/null || die "batch=$batch: the output does not verify"
    done
    rm -f "$d/fifo.hprof"
}

TESTS="$TESTS a_batch_passes_a_hangup_on_to_its_children"
t_a_batch_passes_a_hangup_on_to_its_children() {
    # as SIGINT and SIGTERM: a child orphaned by its parent's death would
    # go on writing into the output directory
    d=$T/hup; rm -rf "$d"; mkdir -p "$d/out"
    mkfifo "$d/fifo.hprof"
    "$B/hprof-shrink" -q -j1 -o "$d/out" "$d/fifo.hprof" > /dev/null 2>&1 &
    pid=$!
    exec 7> "$d/fifo.hprof"
    gzip -dc fixtures/android-synth.hprof.gz | head -c 100000 >&7
    i=0; until ls "$d/out" | grep -q '\.tmp$'; do i=$((i + 1)); [ $i -lt 100 ] || break; sleep 0.05; done
    child=$(pgrep -P $pid) || die "no child running"
    kill -HUP $pid
    set +e; wait $pid; got=$?; set -e
    [ "$got" = 129 ] || die "batch SIGHUP: exit $got"
    # the input still open: an orphan would wait for the rest of it
    i=0
    while kill -0 "$child" 2> /dev/null; do
        i=$((i + 1)); [ $i -lt 100 ] || { die "the child outlived its batch"; break; }; sleep 0.05
    done
    exec 7>&-
    sleep 0.2
    ls "$d/out" | grep -q . && die "batch SIGHUP left $(ls "$d/out")"
    return 0
}

TESTS="$TESTS a_batch_removes_what_a_killed_child_left"
t_a_batch_removes_what_a_killed_child_left() {
    # a child killed outright (SIGKILL, a crash) cannot remove its
    # temporary file: the batch does, when it reaps the child
    d=$T/kc; rm -rf "$d"; mkdir -p "$d/out"
    mkfifo "$d/fifo.hprof"
    "$B/hprof-shrink" -j1 -o "$d/out" "$d/fifo.hprof" > "$d/out.txt" 2> "$d/err" &
    pid=$!
    exec 7> "$d/fifo.hprof"
    gzip -dc fixtures/android-synth.hprof.gz | head -c 100000 >&7
    i=0; until ls "$d/out" | grep -q '\.tmp$'; do i=$((i + 1)); [ $i -lt 100 ] || break; sleep 0.05; done
    ls "$d/out" | grep -q '\.tmp$' || die "no temporary output while running"
    child=$(pgrep -P $pid) || die "no child running"
    [ -z "$child" ] || kill -KILL "$child"
    exec 7>&-
    set +e; wait $pid; got=$?; set -e
    [ "$got" = 3 ] || die "a killed child: exit $got"
    grep -q "killed by signal 9" "$d/out.txt" "$d/err" || die "not reported: $(cat "$d/out.txt" "$d/err")"
    ls "$d/out" | grep -q . && die "a killed child's file stayed: $(ls "$d/out")"
    return 0
}

TESTS="$TESTS batch_counts_an_entry_it_cannot_reach_as_failed"
t_batch_counts_an_entry_it_cannot_reach_as_failed() {
    # a dump past PATH_MAX deep in a tree cannot be named: that entry
    # fails, in the tally and in --json, and the walk goes on
    d=$T/deep; rm -rf "$d"; mkdir -p "$d/tree/z"
    gzip -dc fixtures/hotspot-synth.hprof.gz > "$d/x.hprof"
    cp "$d/x.hprof" "$d/tree/a.hprof"
    cp "$d/x.hprof" "$d/tree/z/b.hprof"
    python3 - "$d/tree" "$d/x.hprof" <<'PY'
import os, shutil, sys
os.chdir(sys.argv[1])   # relative steps: a shell's cd stops at PATH_MAX
for _ in range(25):
    os.mkdir("d" * 200)
    os.chdir("d" * 200)
shutil.copyfile(sys.argv[2], "deep.hprof")
PY
    set +e; "$B/hprof-shrink" --json -r -o "$d/out" "$d/tree" > "$d/batch.json" 2> "$T/err"; got=$?; set -e
    [ "$got" = 3 ] || die "exit $got: $(cat "$T/err")"
    python3 -c "
import json, sys
rows = [json.loads(l) for l in open(sys.argv[1])]
assert rows[-1] == {'shrunk': 2, 'failed': 1, 'skipped': 0, 'exit': 3}, rows
failed = [r for r in rows[:-1] if r.get('status') == 'failed']
assert len(failed) == 1 and 'File name too long' in failed[0]['error'], failed
" "$d/batch.json" || die "batch --json: $(cat "$d/batch.json")"
    [ -s "$d/out/a.hprof" ] && [ -s "$d/out/z/b.hprof" ] || die "the reachable dumps were not shrunk: $(ls -R "$d/out")"
    rm -rf "$d"
}

TESTS="$TESTS batch_waits_for_a_slot_under_a_process_limit"
t_batch_waits_for_a_slot_under_a_process_limit() {
    # a limit on processes (ulimit -u, a container's pids.max) lets fewer
    # children run than -j asks: the others wait their turn, none fails
    if [ "$(id -u)" != 0 ]; then
        echo "(a process limit: not tried, it needs root to run as another user)"
        return 0
    fi
    nb=$(mktemp -d /tmp/hprof-nproc.XXXXXX); chmod 755 "$nb"
    gzip -dc fixtures/hotspot-synth.hprof.gz > "$nb/x.hprof"
    for i in 1 2 3 4; do cp "$nb/x.hprof" "$nb/f$i.hprof"; done
    # the tool is run from the directory the uid can reach: the build's
    # may sit under one closed to others (a clone in a mktemp -d)
    cp "$B/hprof-shrink" "$nb/hprof-shrink"
    chown -R $LIMITED_UID "$nb"
    # the batch and two children
    set +e
    as_limited_user 3 "$nb/hprof-shrink" -j3 -o "$nb/out" "$nb"/f?.hprof \
        > "$T/out" 2> "$T/err"
    got=$?
    set -e
    [ "$got" = 0 ] || die "under a process limit: exit $got: $(cat "$T/out" "$T/err")"
    grep -q "^4 shrunk, 0 failed, 0 skipped" "$T/out" || die "under a process limit: $(cat "$T/out")"
    rm -rf "$nb"
}

TESTS="$TESTS a_limit_on_threads_gives_the_same_bytes"
t_a_limit_on_threads_gives_the_same_bytes() {
    # with no thread to be had (ulimit -u, pids.max), the write pass, the
    # gzip sink and a gzip input's inflation run their jobs in the caller:
    # the same bytes as without a limit, not "cannot start a thread"
    if [ "$(id -u)" != 0 ]; then
        echo "(a limit on threads: not tried, it needs root to run as another user)"
        return 0
    fi
    nb=$(mktemp -d /tmp/hprof-threads.XXXXXX); chmod 755 "$nb"
    "$B/hprof-synth" --scale 200 -f "$nb/x.hprof"
    gzip -c "$nb/x.hprof" > "$nb/x.hprof.gz"
    cp "$B/hprof-shrink" "$nb/hprof-shrink" # one the uid can reach, as above
    chown -R $LIMITED_UID "$nb"
    bin=$nb/hprof-shrink
    for run in "x.hprof" "-z x.hprof" "x.hprof.gz"; do
        (cd "$nb" && "$bin" -q -j4 $run ref)
        set +e
        (cd "$nb" && as_limited_user 1 "$bin" -q -j4 $run out) 2> "$T/err"
        got=$?
        set -e
        [ "$got" = 0 ] || die "no thread to be had ($run): exit $got: $(cat "$T/err")"
        cmp -s "$nb/ref" "$nb/out" || die "no thread to be had ($run): other bytes"
        rm -f "$nb/ref" "$nb/out"
    done
    rm -rf "$nb"
}

TESTS="$TESTS a_stalled_input_costs_no_core"
t_a_stalled_input_costs_no_core() {
    # a dump that stops coming for a while (a slow pipe, a JVM at its
    # safepoint): the helper threads that poll for work sleep longer and
    # longer, up to 1 ms, instead of waking every 20 us for as long as it
    # lasts (about 30,000 wakeups in 2 s under strace; at most about 2,100
    # now)
    d=$T/stall; rm -rf "$d"; mkdir -p "$d"; mkfifo "$d/fifo"
    "$B/hprof-synth" --scale 50 -f "$d/x.hprof"
    "$B/hprof-shrink" -q -f "$d/fifo" "$d/out.hprof" 2> /dev/null &
    pid=$!
    exec 7> "$d/fifo"
    head -c 3000000 "$d/x.hprof" >&7
    sleep 1
    ASAN_OPTIONS="${ASAN_OPTIONS:-}:detect_leaks=0" timeout -s INT 2 \
        strace -f -qq -e trace=nanosleep,clock_nanosleep -o "$d/trace" -p $pid 2> /dev/null || true
    exec 7>&-
    set +e; wait $pid; set -e
    sleeps=$(grep -c 'nanosleep' "$d/trace" || true)
    [ "$sleeps" -gt 0 ] || die "no polling thread seen while the input stalled: $(head -3 "$d/trace")"
    [ "$sleeps" -lt 5000 ] || die "a stalled input: $sleeps wakeups in 2 s"
    rm -rf "$d"
}

TESTS="$TESTS single_run_removes_stale_temps"
t_single_run_removes_stale_temps() {
    # a killed run's temporary file (the one pass's scratch area makes it
    # terabytes long, sparse) goes at the next run into its directory, and
    # not one a live run holds
    d=$T/srt; rm -rf "$d"; mkdir -p "$d/out"
    gzip -dc fixtures/hotspot-synth.hprof.gz > "$d/x.hprof"
    truncate -s 4T "$d/out/hprof-shrink.Aaaaaa.tmp"
    : > "$d/out/hprof-shrink.Zzzzzz.tmp"
    flock "$d/out/hprof-shrink.Zzzzzz.tmp" sleep 30 &
    holder=$!
    sleep 0.2
    expect 0 "$B/hprof-shrink" "$d/x.hprof" "$d/out/x.hprof"
    grep -q "removed .*hprof-shrink.Aaaaaa.tmp, a temporary file left by an interrupted run" "$T/err" ||
        die "single run, stale temporary file: $(cat "$T/err")"
    [ ! -e "$d/out/hprof-shrink.Aaaaaa.tmp" ] || die "single run: the stale temporary file stayed"
    [ -e "$d/out/hprof-shrink.Zzzzzz.tmp" ] || die "single run: a held temporary file was removed"
    # -q promises no warnings: the file still goes, silently
    truncate -s 4T "$d/out/hprof-shrink.Aaaaaa.tmp"
    expect 0 "$B/hprof-shrink" -q -f "$d/x.hprof" "$d/out/x.hprof"
    [ ! -s "$T/err" ] || die "single run -q said: $(cat "$T/err")"
    [ ! -e "$d/out/hprof-shrink.Aaaaaa.tmp" ] || die "single run -q: the stale temporary file stayed"
    kill $holder; wait $holder 2> /dev/null || true
}

TESTS="$TESTS batch_fifo_input"
t_batch_fifo_input() {
    # a FIFO named as an input brings a new dump each time: never "up to
    # date", so a second run reads it (else its writer would wait forever)
    d=$T/bfi; rm -rf "$d"; mkdir -p "$d"
    gzip -dc fixtures/hotspot-synth.hprof.gz > "$d/x.hprof"
    mkfifo "$d/f.hprof"
    for run in 1 2; do
        cat "$d/x.hprof" > "$d/f.hprof" &
        writer=$!
        expect 0 timeout 60 "$B/hprof-shrink" -o "$d/out" "$d/f.hprof"
        if kill -0 $writer 2> /dev/null; then
            kill $writer
            die "batch run $run left the FIFO's writer waiting: $(cat "$T/out" "$T/err")"
        fi
        wait $writer
        grep -q "skipped, up to date" "$T/out" "$T/err" && die "batch run $run skipped a FIFO: $(cat "$T/out")"
    done
    cat "$d/x.hprof" | "$B/hprof-shrink" -q - "$d/ref.hprof" # a stream: the one pass
    cmp -s "$d/ref.hprof" "$d/out/f.hprof" || die "batch of a FIFO: another output"
}

TESTS="$TESTS address_space_limit"
t_address_space_limit() {
    # under ulimit -v the input is read rather than mapped (each reader of
    # a pass maps it again) and the threads share one malloc arena: a
    # 14 MB dump at -j2 under 200 MB (ASan needs an unlimited address
    # space: not under SANITIZE=1)
    [ "${SANITIZE:-}" = 1 ] && return 0
    d=$T/asl; rm -rf "$d"; mkdir -p "$d"
    "$B/hprof-synth" -f --scale 60 --big-bitmap 9000000 "$d/x.hprof"
    for flags in "-j2" "-j2 --one-pass"; do
        "$B/hprof-shrink" -q -f $flags "$d/x.hprof" "$d/ref.hprof"
        sh -c "ulimit -v 200000; exec '$B/hprof-shrink' -q $flags '$d/x.hprof' '$d/lim.hprof'" 2> "$T/err" ||
            die "$flags under ulimit -v 200000: $(cat "$T/err")"
        cmp -s "$d/ref.hprof" "$d/lim.hprof" || die "$flags under ulimit -v: another output"
        rm -f "$d/lim.hprof"
    done
}

TESTS="$TESTS batch_replaced_input"
t_batch_replaced_input() {
    # an input replaced with its old mtime kept (cp -p, rsync -a) is redone;
    # one left alone is skipped
    d=$T/bri; rm -rf "$d"; mkdir -p "$d/in" "$d/new"
    gzip -dc fixtures/hotspot-synth.hprof.gz > "$d/in/a.hprof"
    gzip -dc fixtures/android-synth.hprof.gz > "$d/new/a.hprof"
    cp "$d/in/a.hprof" "$d/in/b.hprof"
    touch -d '2020-01-01 00:00:00' "$d/in/a.hprof" "$d/in/b.hprof" "$d/new/a.hprof"
    expect 0 "$B/hprof-shrink" -r -o "$d/out" "$d/in"
    cmp -s "$d/out/a.hprof" "$d/out/b.hprof" || die "a and b differ"
    expect 0 "$B/hprof-shrink" --json -r -o "$d/out" "$d/in"
    grep -c '"status":"skipped"' "$T/out" | grep -qx 2 || die "unchanged inputs not skipped: $(cat "$T/out")"
    cp -p "$d/new/a.hprof" "$d/in/a.hprof"
    sleep 0.01
    expect 0 "$B/hprof-shrink" --json -r -o "$d/out" "$d/in"
    grep -q '"input":"[^"]*a.hprof","output":"[^"]*","status":"shrunk"' "$T/out" ||
        die "an input replaced by cp -p was not redone: $(cat "$T/out")"
    grep -q '"input":"[^"]*b.hprof",.*"status":"skipped"' "$T/out" || die "b not skipped: $(cat "$T/out")"
    "$B/hprof-shrink" -q -f "$d/new/a.hprof" "$d/ref.hprof"
    cmp -s "$d/out/a.hprof" "$d/ref.hprof" || die "the output of the replaced input is the old one"
    # the same bytes copied over it: a new ctime, so redone too (a redo, never a stale output)
    cp -p "$d/in/b.hprof" "$d/b.copy"; cp -p "$d/b.copy" "$d/in/b.hprof"
    expect 0 "$B/hprof-shrink" --json -r -o "$d/out" "$d/in"
    grep -q '"input":"[^"]*b.hprof",.*"status":"shrunk"' "$T/out" || die "b copied over not redone: $(cat "$T/out")"
}

TESTS="$TESTS batch_json"
t_batch_json() {
    d=$T/bj; rm -rf "$d"; mkdir -p "$d/in"
    gzip -dc fixtures/hotspot-synth.hprof.gz > "$d/in/ok.hprof"
    head -c 5000 "$d/in/ok.hprof" > "$d/in/cut.hprof"
    cp "$d/in/ok.hprof" "$d/in/$(printf 'caf\351\377.hprof')"   # Latin-1, not UTF-8
    mkfifo "$d/in/pipe.hprof"
    # a pair that would write one output (named to come first): the batch
    # says so before the children that come after it start, and none of them
    # may take that for its own error
    cp "$d/in/ok.hprof" "$d/in/a.hprof"; gzip -c "$d/in/ok.hprof" > "$d/in/a.hprof.gz"
    expect 1 timeout 60 "$B/hprof-shrink" --json -r -o "$d/out" "$d/in"
    python3 - "$T/out" <<'PY' || die "batch --json: $(cat "$T/out")"
import json, sys
raw = open(sys.argv[1], "rb").read()
raw.decode("utf-8")                     # strict: every line is valid UTF-8
rows = [json.loads(l) for l in raw.decode().splitlines()]
by = {r.get("status"): [] for r in rows}
for r in rows:
    by[r.get("status")].append(r)
assert len(by["shrunk"]) == 2, rows
f, = [r for r in by["failed"] if r["input"].endswith("cut.hprof")]
assert f["exit"] == 1 and f["class"] == "invalid input", f
assert isinstance(f["offset"], int) and f["offset"] > 0 and "offset 0x" in f["error"], f
assert "would write" not in f["error"] and "cut.hprof" in f["error"], f
twins = [r for r in by["failed"] if "/a.hprof" in r["input"]]
assert len(twins) == 2 and all("would write" in r["error"] for r in twins), twins
s, = by["skipped"]
assert s["input"].endswith("pipe.hprof") and "not a regular file" in s["reason"], s
assert any(r["input"].endswith("caf\u00e9\u00ff.hprof") for r in by["shrunk"]), rows
assert rows[-1] == {"shrunk": 2, "failed": 3, "skipped": 1, "exit": 1}, rows[-1]
PY
}

TESTS="$TESTS batch_shard"
t_batch_shard() {
    d=$T/shard; rm -rf "$d"; mkdir -p "$d/in/a" "$d/in/b"
    gzip -dc fixtures/hotspot-synth.hprof.gz > "$d/ok.hprof"
    for i in 1 2 3 4 5 6 7 8 9 10 11 12; do cp "$d/ok.hprof" "$d/in/a/x$i.hprof"; done
    for i in 1 2 3 4 5 6; do cp "$d/ok.hprof" "$d/in/b/y$i.hprof"; done
    gzip -c "$d/ok.hprof" > "$d/in/b/y1.hprof.gz"    # writes y1.hprof too: one shard sees both
    zstd -q -c "$d/ok.hprof" > "$d/in/b/y2.hprof.zst" # and y2.hprof
    expect 2 "$B/hprof-shrink" --shard=3/3 -o "$d/out" "$d/in"
    expect 2 "$B/hprof-shrink" --shard=1 -o "$d/out" "$d/in"
    expect 2 "$B/hprof-shrink" --shard=0/0 -o "$d/out" "$d/in"
    expect 2 "$B/hprof-shrink" --shard=0/2 "$d/ok.hprof" "$d/out.hprof"
    for k in 0 1 2; do
        set +e
        "$B/hprof-shrink" --shard=$k/3 --json -r -o "$d/out" "$d/in" > "$d/s$k.json" 2>/dev/null
        set -e
    done
    python3 - "$d" <<'PY' || die "batch --shard"
import json, os, sys
d = sys.argv[1]
lines = {k: [json.loads(l) for l in open(f"{d}/s{k}.json")] for k in range(3)}
for k, rows in lines.items():
    assert all(r["shard"] == f"{k}/3" for r in rows), rows     # every line names its shard
    assert "shrunk" in rows[-1], rows[-1]                       # the tally last
inputs = [r["input"] for rows in lines.values() for r in rows if "input" in r]
tree = sorted(os.path.join(r, f) for r, _, fs in os.walk(f"{d}/in") for f in fs)
assert sorted(inputs) == tree, (inputs, tree)                   # each input once, in one shard
pair = [k for k, rows in lines.items() for r in rows if r.get("input", "").endswith("/y1.hprof")]
gz = [k for k, rows in lines.items() for r in rows if r.get("input", "").endswith("/y1.hprof.gz")]
assert pair == gz, (pair, gz)                                   # x and x.gz meet in one shard
pair = [k for k, rows in lines.items() for r in rows if r.get("input", "").endswith("/y2.hprof")]
zst = [k for k, rows in lines.items() for r in rows if r.get("input", "").endswith("/y2.hprof.zst")]
assert pair == zst, (pair, zst)                                 # x and x.zst too
for r in (r for rows in lines.values() for r in rows if r.get("input", "").split("/")[-1][:3] in ("y1.", "y2.")):
    assert r["status"] == "failed" and "would write" in r["error"], r
outs = sorted(os.path.join(r, f) for r, _, fs in os.walk(f"{d}/out") for f in fs)
assert len(outs) == len(tree) - 4, outs                         # every other input, once
PY
    # the same partition from another root and another working directory
    mkdir -p "$d/else/where"; mv "$d/in" "$d/else/where/tree"
    abs_b=$(cd "$B" && pwd)
    for k in 0 1 2; do
        (cd "$d/else" && "$abs_b/hprof-shrink" --shard=$k/3 --json -f -r -o "$d/out2" where/tree 2>/dev/null ||
            true) | python3 -c '
import json, sys
print("\n".join(sorted(json.loads(l)["input"].split("/tree/")[1] for l in sys.stdin if "\"input\"" in l)))' > "$d/moved$k"
        python3 -c '
import json, sys
print("\n".join(sorted(json.loads(l)["input"].split("/in/")[1] for l in open(sys.argv[1]) if "\"input\"" in l)))' "$d/s$k.json" |
            cmp -s - "$d/moved$k" || die "--shard=$k/3 takes other files from another root"
    done
}

TESTS="$TESTS batch_json_lines"
t_batch_json_lines() {
    # lines over 4 KiB (failing inputs under 2 KB paths) from children,
    # "skipped" lines from the parent, two at a time: every line whole
    d=$T/bjl; rm -rf "$d"; mkdir -p "$d/in"
    comp=$(printf 'd%.0s' $(seq 200))
    for b in 1 2 3 4 5 6; do
        p=$d/in/b$b; for i in 1 2 3 4 5 6 7 8 9 10; do p=$p/$comp; done
        mkdir -p "$p"
        for f in 1 2 3 4; do echo garbage > "$p/bad$f.hprof"; done
    done
    gzip -dc fixtures/hotspot-synth.hprof.gz > "$d/in/s1.hprof"
    for k in $(seq 2 20); do cp "$d/in/s1.hprof" "$d/in/s$k.hprof"; done
    "$B/hprof-shrink" -q -r -o "$d/out" "$d/in" > /dev/null 2>&1 || true
    touch "$d"/out/s*.hprof
    for run in $(seq 12); do
        set +e; "$B/hprof-shrink" --json -j2 -r -o "$d/out" "$d/in" > "$d/lines" 2> /dev/null; set -e
        python3 - "$d/lines" <<'PY' || die "batch --json -j2, run $run: a line is not JSON"
import json, sys
lines = open(sys.argv[1], "rb").read().split(b"\n")
assert lines[-1] == b""
rows = [json.loads(l) for l in lines[:-1]]
assert len(rows) == 45 and rows[-1] == {"shrunk": 0, "failed": 24, "skipped": 20, "exit": 1}, rows[-1]
assert sum(len(json.dumps(r)) > 4096 for r in rows) == 24
PY
    done
}

TESTS="$TESTS batch_file_usage_error"
t_batch_file_usage_error() {
    # --dump=2 past one file's dumps fails that file alone: the others are
    # shrunk, every child is waited for, and the tally comes last
    d=$T/bfu; rm -rf "$d"; mkdir -p "$d/in"
    "$B/hprof-synth" --hotspot -f "$d/in/a1.hprof" > /dev/null
    for i in 2 3 4 5; do "$B/hprof-synth" --hotspot --dumps 3 -f "$d/in/m$i.hprof" > /dev/null; done
    expect 2 "$B/hprof-shrink" -j2 --dump=2 --json -r -o "$d/out" "$d/in"
    python3 - "$T/out" <<'PY' || die "batch, a file's usage error: $(cat "$T/out")"
import json, sys
rows = [json.loads(l) for l in open(sys.argv[1])]
assert rows[-1] == {"shrunk": 4, "failed": 1, "skipped": 0, "exit": 2}, rows[-1]
bad = [r for r in rows[:-1] if r["status"] == "failed"]
assert len(bad) == 1 and bad[0]["input"].endswith("/a1.hprof") and bad[0]["exit"] == 2, bad
PY
    for i in 2 3 4 5; do [ -s "$d/out/m$i.hprof" ] || die "batch, a file's usage error: no m$i.hprof"; done
    [ -z "$(find "$d/out" -name 'hprof-shrink.*.tmp')" ] || die "batch, a file's usage error: temporary files left"
}

TESTS="$TESTS special_outputs"
t_special_outputs() {
    d=$T/so; rm -rf "$d"; mkdir -p "$d/dir"
    gzip -dc fixtures/hotspot-synth.hprof.gz > "$d/x.hprof"
    "$B/hprof-shrink" -q "$d/x.hprof" "$d/ref.hprof"
    # a character device: written in place, no temporary file, no -f
    expect 0 "$B/hprof-shrink" --stats "$d/x.hprof" /dev/null
    grep -q "output  *$(wc -c < "$d/ref.hprof") bytes" "$T/err" ||
        die "--stats to /dev/null: $(cat "$T/err")"
    expect 0 "$B/hprof-shrink" -f -z "$d/x.hprof" /dev/null
    # a FIFO: its reader gets the same bytes as a file
    mkfifo "$d/fifo"
    cat "$d/fifo" > "$d/from-fifo.hprof" &
    reader=$!
    expect 0 "$B/hprof-shrink" -q "$d/x.hprof" "$d/fifo"
    wait $reader
    cmp -s "$d/ref.hprof" "$d/from-fifo.hprof" || die "FIFO output differs"
    # a name of a descriptor (/dev/stdout, here through a link of our own
    # so that the system's is never at stake; /dev/fd/N): written where it
    # leads, a regular file too, even with -f; the link stays; the report
    # goes to stderr, as with -
    ln -s /proc/self/fd/1 "$d/stdout"
    "$B/hprof-shrink" -f --json "$d/x.hprof" "$d/stdout" > "$d/via-stdout.hprof" 2> "$d/json" ||
        die "OUT /dev/stdout: $(cat "$d/json")"
    [ -L "$d/stdout" ] || die "OUT /dev/stdout: the link was replaced"
    cmp -s "$d/ref.hprof" "$d/via-stdout.hprof" || die "OUT /dev/stdout: another output"
    grep -q '"output":"-"' "$d/json" || die "OUT /dev/stdout: no report on stderr: $(cat "$d/json")"
    "$B/hprof-shrink" -q "$d/x.hprof" /dev/fd/3 3> "$d/via-fd3.hprof" || die "OUT /dev/fd/3"
    cmp -s "$d/ref.hprof" "$d/via-fd3.hprof" || die "OUT /dev/fd/3: another output"
    expect 2 "$B/hprof-shrink" -q "$d/x.hprof" /dev/fd/9
    grep -q 'descriptor 9 is not open' "$T/err" || die "OUT a closed descriptor: $(cat "$T/err")"
    # ... but never the file standard input reads, nor standard error
    cp "$d/x.hprof" "$d/in-out.hprof"
    set +e; "$B/hprof-shrink" -q - /dev/stdin <> "$d/in-out.hprof" 2> "$T/err"; got=$?; set -e
    [ "$got" = 2 ] && grep -q 'output is the input' "$T/err" || die "OUT /dev/stdin, IN -: exit $got: $(cat "$T/err")"
    cmp -s "$d/x.hprof" "$d/in-out.hprof" || die "OUT /dev/stdin, IN -: the input was changed"
    expect 2 "$B/hprof-shrink" -q -f "$d/x.hprof" /dev/stderr
    grep -q 'standard error takes the messages' "$T/err" || die "OUT /dev/stderr: $(cat "$T/err")"
    # a directory: into it under IN's name, as cp does (.gz with -z)
    expect 0 "$B/hprof-shrink" -q "$d/x.hprof" "$d/dir"
    cmp -s "$d/ref.hprof" "$d/dir/x.hprof" || die "OUT a directory: $(ls "$d/dir")"
    expect 2 "$B/hprof-shrink" -q "$d/x.hprof" "$d/dir/"
    grep -q 'already exists' "$T/err" || die "into a directory without -f: $(cat "$T/err")"
    expect 0 "$B/hprof-shrink" -q -z fixtures/hotspot-synth.hprof.gz "$d/dir"
    gzip -dc "$d/dir/hotspot-synth.hprof.gz" | cmp -s - "$d/ref.hprof" || die "-z into a directory"
    expect 2 "$B/hprof-shrink" - "$d/dir" < "$d/x.hprof"
    grep -q 'dir: is a directory (with standard input, name the output file)' "$T/err" ||
        die "stdin into a directory: $(cat "$T/err")"
}

TESTS="$TESTS stdout_errors"
t_stdout_errors() {
    # a write error on standard output names it, not the input
    gzip -dc fixtures/hotspot-synth.hprof.gz > "$T/se.hprof"
    for z in "" -z; do
        set +e; "$B/hprof-shrink" $z "$T/se.hprof" - > /dev/full 2> "$T/err"; got=$?; set -e
        [ "$got" = 3 ] || die "/dev/full $z: exit $got"
        grep -qx 'hprof-shrink: standard output: write: No space left on device' "$T/err" ||
            die "/dev/full $z: $(cat "$T/err")"
    done
    expect 3 "$B/hprof-shrink" "$T/se.hprof" /dev/full
    grep -qx 'hprof-shrink: /dev/full: write: No space left on device' "$T/err" || die "OUT /dev/full: $(cat "$T/err")"
    # a report that cannot be written is an I/O error, on a full disk or
    # with standard output closed; with nothing to write, closed is fine
    for cmd in "hprof-shrink --json -f $T/se.hprof $T/se-out.hprof" "hprof-verify $T/se.hprof" \
               "hprof-info $T/se.hprof" "hprof-synth --help"; do
        set +e; "$B"/$cmd > /dev/full 2> "$T/err"; got=$?; set -e
        [ "$got" = 3 ] || die "$cmd > /dev/full: exit $got"
        grep -q "standard output: write error" "$T/err" || die "$cmd > /dev/full: $(cat "$T/err")"
        set +e; "$B"/$cmd >&- 2> "$T/err"; got=$?; set -e
        [ "$got" = 3 ] || die "$cmd >&-: exit $got"
    done
    # ... and, as any failure, leaves no OUT: the report goes first
    rm -f "$T/se-out.hprof"
    set +e; "$B/hprof-shrink" --json "$T/se.hprof" "$T/se-out.hprof" > /dev/full 2> "$T/err"; got=$?; set -e
    [ "$got" = 3 ] && [ "$(wc -l < "$T/err")" = 1 ] || die "--json > /dev/full: exit $got: $(cat "$T/err")"
    [ ! -e "$T/se-out.hprof" ] || die "--json > /dev/full left OUT"
    # ... nor loses the older OUT that -f would have replaced
    printf 'older OUT\n' > "$T/se-out.hprof"
    set +e; "$B/hprof-shrink" -f --json "$T/se.hprof" "$T/se-out.hprof" > /dev/full 2> "$T/err"; got=$?; set -e
    [ "$got" = 3 ] && [ "$(cat "$T/se-out.hprof")" = "older OUT" ] ||
        die "-f --json > /dev/full: exit $got, OUT: $(head -c 40 "$T/se-out.hprof" 2>&1)"
    rm -f "$T/se-out.hprof"
    set +e; "$B/hprof-shrink" -q -f "$T/se.hprof" "$T/se-out.hprof" >&- 2> "$T/err"; got=$?; set -e
    [ "$got" = 0 ] && "$B/hprof-verify" -q "$T/se-out.hprof" || die "-q with stdout closed: exit $got: $(cat "$T/err")"
}

TESTS="$TESTS stdout_a_closed_pipe"
# standard output a pipe whose reader is gone (tool | head -1), closed
# before a byte is written so that no timing decides: every tool that has
# something to say there says that it could not (EPIPE) and exits 3, as
# its man page says, rather than dying of SIGPIPE (141), with any option
# that prints; with nothing to print, a closed pipe is no error
t_stdout_a_closed_pipe() {
    d=$T/cp; rm -rf "$d"; mkdir -p "$d"
    gzip -dc fixtures/android-synth.hprof.gz > "$d/in.hprof"
    # to_a_closed_pipe CMD...: the exit status in $got (128 + N: signal N)
    to_a_closed_pipe() {
        got=$(python3 - "$@" 2> "$T/err" <<'PY'
import os, subprocess, sys
r, w = os.pipe()
os.close(r)
rc = subprocess.call(sys.argv[1:], stdout=w)  # SIGPIPE as the shell leaves it
print(128 - rc if rc < 0 else rc)
PY
)
    }
    for cmd in "hprof-info $d/in.hprof" "hprof-info --json $d/in.hprof" \
               "hprof-info --top 1000 $d/in.hprof" "hprof-info --estimate $d/in.hprof" \
               "hprof-verify $d/in.hprof" "hprof-shrink -f --json $d/in.hprof $d/out.hprof" \
               "hprof-shrink -f $d/in.hprof -" \
               "hprof-info --help" "hprof-verify --help" "hprof-bitmaps --help" \
               "hprof-shrink --help" "hprof-synth --help" "hprof-info -V" "hprof-bitmaps -V"; do
        # shellcheck disable=SC2086 # the command's words
        to_a_closed_pipe "$B"/$cmd
        [ "$got" = 3 ] && grep -q 'standard output: write' "$T/err" ||
            die "$cmd into a closed pipe: exit $got: $(cat "$T/err")"
    done
    to_a_closed_pipe "$B/hprof-bitmaps" "$d/in.hprof" "$d/images"
    [ "$got" = 0 ] && [ -s "$d/images/index.tsv" ] || die "hprof-bitmaps, stdout a closed pipe: exit $got: $(cat "$T/err")"
    to_a_closed_pipe "$B/hprof-verify" -q "$d/in.hprof"
    [ "$got" = 0 ] || die "hprof-verify -q, stdout a closed pipe: exit $got: $(cat "$T/err")"
}

TESTS="$TESTS stdout_is_input"
t_stdout_is_input() {
    # standard output appended to the input is refused as cat refuses it
    # (exit 2), for a named input and for standard input; IN is unchanged
    d=$T/si; rm -rf "$d"; mkdir -p "$d"
    gzip -dc fixtures/hotspot-synth.hprof.gz > "$d/ref.hprof"
    cp "$d/ref.hprof" "$d/in.hprof"
    for cmd in "hprof-shrink $d/in.hprof -" "hprof-shrink --json $d/in.hprof $d/o.hprof" \
               "hprof-verify $d/in.hprof" "hprof-info $d/in.hprof"; do
        set +e; "$B"/$cmd >> "$d/in.hprof" 2> "$T/err"; got=$?; set -e
        [ "$got" = 2 ] || die "$cmd >> IN: exit $got"
        grep -q "in.hprof: input file is output file" "$T/err" || die "$cmd >> IN: $(cat "$T/err")"
        cmp -s "$d/ref.hprof" "$d/in.hprof" || die "$cmd >> IN changed IN"
    done
    # standard error too: even the refusal would go into IN, so it goes
    # nowhere, and the exit status tells
    # (a run of several files is refused whole: no later file's messages
    # would be seen)
    for cmd in "hprof-shrink --stats $d/in.hprof $d/o.hprof" "hprof-verify $d/in.hprof" \
               "hprof-info $d/in.hprof" "hprof-bitmaps $d/in.hprof $d/bm" \
               "hprof-verify $d/ref.hprof $d/in.hprof" "hprof-info $d/ref.hprof $d/in.hprof" \
               "hprof-shrink -o $d/bo $d/ref.hprof $d/in.hprof"; do
        set +e; "$B"/$cmd > /dev/null 2>> "$d/in.hprof"; got=$?; set -e
        [ "$got" = 2 ] || die "$cmd 2>> IN: exit $got"
        cmp -s "$d/ref.hprof" "$d/in.hprof" || die "$cmd 2>> IN changed IN"
        cp "$d/ref.hprof" "$d/in.hprof"
    done
    [ ! -e "$d/o.hprof" ] && [ ! -e "$d/bm" ] && [ ! -e "$d/bo" ] || die "a run refused for 2>> IN left an output"
    for cmd in "hprof-shrink - -" "hprof-verify -" "hprof-info -"; do
        set +e; "$B"/$cmd < "$d/in.hprof" >> "$d/in.hprof" 2> "$T/err"; got=$?; set -e
        [ "$got" = 2 ] || die "$cmd < IN >> IN: exit $got"
        grep -q "standard input: input file is output file" "$T/err" || die "$cmd < IN >> IN: $(cat "$T/err")"
        cmp -s "$d/ref.hprof" "$d/in.hprof" || die "$cmd < IN >> IN changed IN"
    done
    # OUT named, standard input its file: refused even with -f, also
    # through a link, and IN unchanged
    ln -s in.hprof "$d/link.hprof"
    for out in "$d/in.hprof" "$d/link.hprof"; do
        set +e; "$B/hprof-shrink" -f - "$out" < "$d/in.hprof" 2> "$T/err"; got=$?; set -e
        [ "$got" = 2 ] || die "hprof-shrink -f - $out < IN: exit $got"
        grep -q "output is the input" "$T/err" || die "hprof-shrink -f - $out < IN: $(cat "$T/err")"
        cmp -s "$d/ref.hprof" "$d/in.hprof" || die "hprof-shrink -f - $out < IN changed IN"
    done
    # another file, or the same one read but written elsewhere, is fine
    "$B/hprof-shrink" - - < "$d/in.hprof" > "$d/o2.hprof" || die "stdin to another file"
    "$B/hprof-verify" "$d/in.hprof" >> "$d/o3.txt" || die "verify appending to another file"
}

TESTS="$TESTS array_counts_add_up"
t_array_counts_add_up() {
    # what each primitive array became adds up to the arrays read, in both
    # shrinks and every --arrays mode, with twin Bitmap buffers that
    # something else names too (merged for their Bitmaps, the record stays
    # as --arrays says: one of the duplicates, not counted again); the
    # arrays the output lacks are among the duplicates and the removed
    d=$T/ac; rm -rf "$d"; mkdir -p "$d"
    "$B/hprof-synth" --pixels 300000 -f "$d/px.hprof"
    gzip -dc fixtures/android-synth.hprof.gz > "$d/an.hprof"
    for f in "$d/px.hprof" "$d/an.hprof"; do
        for opts in "--multi-pass" "--one-pass" "--multi-pass --arrays=zero" "--one-pass --arrays=remove"; do
            "$B/hprof-shrink" -q -f --json --keep-system-heaps $opts "$f" "$d/o.hprof" > "$d/r.json" ||
                die "$opts $f"
            "$B/hprof-verify" "$f" "$d/o.hprof" > "$d/v.txt" || die "$opts $f: verify"
            python3 - "$d/r.json" "$d/v.txt" "$opts" <<'PY' || die "$opts $f: the array counts do not add up"
import json, re, sys
j = json.load(open(sys.argv[1]))
c = lambda k: j[k]["count"]
parts = ["string_values_kept", "bitmap_buffers_kept", "natives_kept", "bitmap_duplicates",
         "arrays_emptied", "arrays_zeroed", "arrays_removed"]
assert sum(c(k) for k in parts) == c("primitive_arrays_in"), {k: c(k) for k in parts + ["primitive_arrays_in"]}
n_in, n_out = [int(x) for x in re.findall(r"(\d+) primitive arrays", open(sys.argv[2]).read())]
assert n_in == c("primitive_arrays_in"), (n_in, j["primitive_arrays_in"])
gone = n_in - n_out
assert gone <= c("bitmap_duplicates") + c("arrays_removed"), (n_in, n_out, j["bitmap_duplicates"])
if "remove" in sys.argv[3]:     # then a duplicate that stays goes too
    assert gone == c("bitmap_duplicates") + c("arrays_removed"), (n_in, n_out, j["bitmap_duplicates"])
PY
        done
    done
}

TESTS="$TESTS jvm_counts_are_the_inputs_in_both_shrinks"
t_jvm_counts_are_the_inputs_in_both_shrinks() {
    # --jvm counts what it converted of the input: the HEAP_DUMP_INFO
    # records dropped are the input's (hprof-verify counts them), not the
    # heap switches the one pass makes for records it writes late
    d=$T/jc; rm -rf "$d"; mkdir -p "$d"
    gzip -dc fixtures/android-synth.hprof.gz > "$d/an.hprof"
    "$B/hprof-synth" --dumps 3 -f "$d/three.hprof" > /dev/null
    for f in "$d/an.hprof" "$d/three.hprof"; do
        want=$("$B/hprof-verify" "$f" | sed -nE 's/.* ([0-9]+) heap infos.*/\1/p' | awk '{n += $1} END {print n}')
        [ -n "$want" ] && [ "$want" -gt 0 ] || die "$f: no heap infos counted by hprof-verify"
        for m in --multi-pass --one-pass; do
            "$B/hprof-shrink" -q -f --jvm --json $m "$f" "$d/o.hprof" > "$d/r.json" || die "$m $f"
            got=$(sed -nE 's/.*"jvm_heap_infos_dropped":([0-9]+).*/\1/p' "$d/r.json")
            [ "$got" = "$want" ] || die "$m $f: jvm_heap_infos_dropped $got, the input has $want"
        done
    done
}

TESTS="$TESTS usage"
t_usage() {
    d=$T/us; rm -rf "$d"; mkdir -p "$d"
    gzip -dc fixtures/hotspot-synth.hprof.gz > "$d/x.hprof"
    # gzip's -1 ... -9: the level, and -z implied
    expect 0 "$B/hprof-shrink" -q -9 "$d/x.hprof" "$d/a.gz"
    expect 0 "$B/hprof-shrink" -q -z9 "$d/x.hprof" "$d/b.gz"
    cmp -s "$d/a.gz" "$d/b.gz" || die "-9 differs from -z9"
    expect 0 "$B/hprof-shrink" -q -1 "$d/x.hprof" "$d/c.gz"
    gzip -t "$d/c.gz" || die "-1 is not gzip"
    # "-z 9": the level is attached or nothing; the message says how
    expect 2 "$B/hprof-shrink" -z 9 "$d/x.hprof" "$d/d.gz"
    grep -q "'9' after -z is taken as a file name: attach the level (-z9, --gzip=9 or -9)" "$T/err" ||
        die "-z 9: $(cat "$T/err")"
    # a usage error is one line and a pointer to --help, never the help
    for cmd in "hprof-shrink -z 9 $d/x.hprof $d/d.gz" "hprof-shrink --bogus" "hprof-shrink $d/x.hprof" \
               "hprof-shrink --arrays=x $d/x.hprof $d/e" "hprof-verify" "hprof-verify --bogus" \
               "hprof-info" "hprof-info --top x $d/x.hprof" "hprof-bitmaps" "hprof-bitmaps $d/x.hprof" \
               "hprof-synth" "hprof-synth $d/s1 $d/s2" "hprof-synth --bogus" "hprof-synth --scale x $d/s" \
               "hprof-shrink --one-pass --multi-pass $d/x.hprof $d/p.hprof"; do
        tool=${cmd%% *}
        expect 2 "$B"/$cmd
        [ "$(wc -l < "$T/err")" = 2 ] || die "$cmd: not two lines: $(cat "$T/err")"
        head -n 1 "$T/err" | grep -q "^$tool: ." || die "$cmd: $(cat "$T/err")"
        tail -n 1 "$T/err" | grep -qx "Try '$tool --help' for more information." || die "$cmd: $(cat "$T/err")"
    done
    # --redact-fields and --redact-keep without --redact: refused for one
    # file and for a batch alike (a batch that half-redacted would be
    # taken for a redacted one), and nothing is written
    for opt in --redact-fields --redact-keep=a.b; do
        expect 2 "$B/hprof-shrink" $opt "$d/x.hprof" "$d/r.hprof"
        grep -q "need --redact" "$T/err" || die "$opt: $(cat "$T/err")"
        expect 2 "$B/hprof-shrink" $opt -o "$d/rb" "$d/x.hprof"
        grep -q "need --redact" "$T/err" || die "$opt in batch mode: $(cat "$T/err")"
        [ ! -e "$d/r.hprof" ] && [ ! -e "$d/rb" ] || die "$opt: an output was written"
    done
    # --window and --spill size the one pass's window: on a file read in
    # several passes they do nothing, and a note says so
    for opt in --window=2M --spill=0; do
        expect 0 "$B/hprof-shrink" -f $opt "$d/x.hprof" "$d/w.hprof"
        grep -q "note: ${opt%=*} has no effect: .*x.hprof is read in several passes (add --one-pass)" "$T/err" ||
            die "$opt on a file: $(cat "$T/err")"
        expect 0 "$B/hprof-shrink" -f --one-pass $opt "$d/x.hprof" "$d/w.hprof"
        grep -q "no effect" "$T/err" && die "--one-pass $opt: $(cat "$T/err")"
        cat "$d/x.hprof" | "$B/hprof-shrink" -f $opt - "$d/w.hprof" 2> "$T/err" || die "$opt from a pipe"
        if grep -q "no effect" "$T/err"; then die "$opt from a pipe: $(cat "$T/err")"; fi
    done
    # --salvage takes several passes from a pipe too: no advice it refuses
    cat "$d/x.hprof" | "$B/hprof-shrink" -f --salvage --window=2M - "$d/w.hprof" 2> "$T/err" ||
        die "--salvage --window from a pipe"
    grep -q "note: --window has no effect: --salvage reads the input in several passes$" "$T/err" ||
        die "--salvage --window: $(cat "$T/err")"
    # batch mode reads files: standard input among its INs is a usage error,
    # said before any work (no DIR made, standard input not read); a file
    # named - is ./-
    for ins in "-" "$d/x.hprof -"; do
        # shellcheck disable=SC2086 # the INs
        expect 2 "$B/hprof-shrink" -o "$d/batch" $ins < "$d/x.hprof"
        [ "$(wc -l < "$T/err")" = 2 ] &&
            head -n 1 "$T/err" | grep -qx "hprof-shrink: batch mode (-o DIR) reads files, not standard input: name a file - as ./-, or shrink standard input alone (hprof-shrink - OUT)" ||
            die "-o DIR $ins: $(cat "$T/err")"
        [ ! -e "$d/batch" ] || die "-o DIR $ins: DIR made"
    done
    expect 2 "$B/hprof-shrink" -r -o "$d/batch" - < /dev/null
    grep -q "batch mode (-o DIR) reads files, not standard input" "$T/err" || die "-r -o DIR -: $(cat "$T/err")"
    cp "$d/x.hprof" "$d/-"
    expect 0 "$B/hprof-shrink" -q -o "$d/batch" "$d/-"
    [ -s "$d/batch/-" ] || die "-o DIR DIR/-: $(ls -A "$d/batch")"
}

TESTS="$TESTS standard_input_is_named_in_words"
t_standard_input_is_named_in_words() {
    # "-" is what the user typed for standard input, not its name: every
    # heading, report and message that names the input says "standard
    # input" (and "standard output" for OUT), as the summary line does
    d=$T/stdin-name; rm -rf "$d"; mkdir -p "$d"
    gzip -dc fixtures/android-synth.hprof.gz > "$d/x.hprof"
    expect 0 "$B/hprof-shrink" --stats - "$d/o.hprof" < "$d/x.hprof"
    head -1 "$T/err" | grep -qx "standard input -> $d/o.hprof" || die "--stats from stdin: $(head -1 "$T/err")"
    expect 0 "$B/hprof-shrink" --stats - - < "$d/x.hprof"
    head -1 "$T/err" | grep -qx "standard input -> standard output" || die "--stats, stdin to stdout: $(head -1 "$T/err")"
    expect 0 "$B/hprof-info" - < "$d/x.hprof"
    head -1 "$T/out" | grep -qx "standard input" || die "hprof-info heading: $(head -1 "$T/out")"
    expect 0 "$B/hprof-verify" - < "$d/x.hprof"
    grep -q "^standard input: OK: " "$T/out" || die "hprof-verify heading: $(cat "$T/out")"
    # what --salvage reports of a cut input, by each tool
    head -c $(($(wc -c < "$d/x.hprof") / 2)) "$d/x.hprof" > "$d/cut.hprof"
    for tool in hprof-shrink hprof-verify hprof-info; do
        out=; [ $tool = hprof-shrink ] && out=$d/s.hprof
        expect 0 "$B/$tool" --salvage - $out < "$d/cut.hprof"
        grep -q "^$tool: standard input: input cut at offset 0x" "$T/err" || die "$tool --salvage from stdin: $(cat "$T/err")"
        grep -q '^-\|[ :]-[ :]\|[ :]-$' "$T/out" "$T/err" && die "$tool: a '-' left: $(cat "$T/out" "$T/err")"
    done
    return 0
}

TESTS="$TESTS messages"
t_messages() {
    d=$T/msg; rm -rf "$d"; mkdir -p "$d/dir"
    # the file is named once, whatever the library's message says
    for tool in hprof-verify hprof-info "hprof-bitmaps" hprof-shrink; do
        extra=""
        case $tool in hprof-bitmaps) extra=$d/bm ;; hprof-shrink) extra=$d/out.hprof ;; esac
        expect 3 "$B/$tool" "$d/nosuch" $extra
        grep -qx "$tool: $d/nosuch: No such file or directory" "$T/err" || die "$tool nosuch: $(cat "$T/err")"
        expect 3 "$B/$tool" "$d/dir" $extra
        grep -qx "$tool: $d/dir: is a directory" "$T/err" || die "$tool dir: $(cat "$T/err")"
    done
    printf 'JAVA PROFILE 1.0.2\0\0\0\0\010' | gzip | head -c 20 > "$d/cut.gz"
    expect 1 "$B/hprof-verify" "$d/cut.gz"
    [ "$(grep -o 'cut.gz' "$T/err" | wc -l)" = 1 ] || die "gzip message repeats the name: $(cat "$T/err")"
    # hprof-verify's one line per file stays one line for any name
    gzip -dc fixtures/hotspot-synth.hprof.gz > "$d/new
line.hprof"
    expect 0 "$B/hprof-verify" "$d/new
line.hprof"
    [ "$(wc -l < "$T/out")" = 1 ] && grep -qF 'new\nline.hprof": OK: ' "$T/out" || die "verify of a newline name: $(cat "$T/out")"
    # a file cut inside a record header: "record header", not "unknown"
    gzip -dc fixtures/hotspot-synth.hprof.gz | head -c 35 > "$d/cut.hprof"
    expect 1 "$B/hprof-verify" "$d/cut.hprof"
    grep -q 'offset 0x1f: record header: truncated: 9 bytes needed, 4 left' "$T/err" || die "header cut: $(cat "$T/err")"
    # a record cut in its body, read from a pipe: its offset, as from the
    # file, and the hint; a sub-record (a pipe cannot know its segment's
    # end before it comes): the sub-record's
    gzip -dc fixtures/hotspot-synth.hprof.gz > "$d/full.hprof"
    head -c 45 "$d/full.hprof" > "$d/cutn.hprof"
    expect 1 "$B/hprof-shrink" "$d/cutn.hprof" "$d/o.hprof"
    at=$(grep -o 'offset 0x[0-9a-f]*: [A-Z_]*' "$T/err")
    cat "$d/cutn.hprof" | "$B/hprof-shrink" - "$d/o.hprof" 2> "$T/err" && die "a cut pipe succeeded"
    grep -qF "$at: " "$T/err" && grep -q -- '--salvage keeps what is complete$' "$T/err" ||
        die "a record cut, from a pipe: '$(cat "$T/err")', the file says '$at'"
    head -c 60000 "$d/full.hprof" | "$B/hprof-shrink" - "$d/o.hprof" 2> "$T/err" && die "a cut pipe succeeded"
    grep -q "offset 0x[0-9a-f]*: HEAP_DUMP_SEGMENT/[A-Z_]*: the input ends .*; --salvage keeps what is complete$" "$T/err" ||
        die "a sub-record cut, from a pipe: $(cat "$T/err")"
    expect 1 "$B/hprof-verify" - < "$d/cut.gz"
    grep -q '^hprof-verify: standard input: .*gzip input is truncated' "$T/err" || die "stdin gzip: $(cat "$T/err")"
    # hprof-bitmaps has no --salvage: its message names the cut, not the option
    for cut in "$d/cutn.hprof" "$d/cut.gz"; do
        expect 1 "$B/hprof-bitmaps" "$cut" "$d/bm"
        grep -q 'offset 0x[0-9a-f]*' "$T/err" && ! grep -q -- '--salvage' "$T/err" ||
            die "hprof-bitmaps on a cut dump: $(cat "$T/err")"
    done
}

TESTS="$TESTS formats"
t_formats() {
    d=$T/fmt; rm -rf "$d"; mkdir -p "$d"
    gzip -dc fixtures/hotspot-synth.hprof.gz > "$d/x.hprof"
    # a suffix that contradicts the format: a warning, the file as asked
    expect 0 "$B/hprof-shrink" -z "$d/x.hprof" "$d/a.hprof"
    grep -q "warning: .*a.hprof: the output is gzip-compressed but its name does not end in .gz" "$T/err" ||
        die "-z to .hprof: $(cat "$T/err")"
    expect 0 "$B/hprof-shrink" "$d/x.hprof" "$d/b.hprof.GZ"
    grep -q "warning: .*b.hprof.GZ: the name ends in .gz but the output is not compressed" "$T/err" ||
        die "plain to .gz: $(cat "$T/err")"
    expect 0 "$B/hprof-shrink" -z "$d/x.hprof" "$d/c.hprof.gz"
    grep -q warning "$T/err" && die "-z to .gz warns: $(cat "$T/err")"
    # other compressors are named, from a file, standard input or a pipe
    # (whose first read may give four bytes), and not taken for a second
    # layer, as gzip or zstd found under the input's would be
    for c in "xz fd377a585a00" "bzip2 425a6839" "lz4 04224d18"; do
        name=${c%% *}
        python3 -c "import sys; open(sys.argv[1], 'wb').write(bytes.fromhex(sys.argv[2]) + bytes(10))" \
            "$d/y.$name" "${c#* }"
        said="offset 0x0: header: not a heap dump but $name-compressed data (only gzip and zstd are read: decompress it first: $name -d)"
        for tool in hprof-verify hprof-info; do
            expect 1 "$B/$tool" "$d/y.$name"
            grep -qF "y.$name: $said" "$T/err" || die "$tool $name: $(cat "$T/err")"
        done
        expect 1 "$B/hprof-shrink" - "$d/z.hprof" < "$d/y.$name"
        grep -qF "standard input: $said" "$T/err" || die "stdin $name: $(cat "$T/err")"
        for passes in --one-pass --multi-pass; do
            set +e; cat "$d/y.$name" | "$B/hprof-shrink" $passes - "$d/z.hprof" 2> "$T/err"; got=$?; set -e
            [ "$got" = 1 ] && grep -qF "standard input: $said" "$T/err" ||
                die "a pipe of $name, $passes: exit $got: $(cat "$T/err")"
        done
    done
    # a terminal on standard input is refused at once, as gzip -d does
    for cmd in "hprof-verify -" "hprof-info -" "hprof-shrink - $d/t.hprof"; do
        set +e
        timeout 10 script -qec "$B/$cmd" /dev/null < /dev/null > "$T/out" 2>&1
        got=$?
        set -e
        [ "$got" = 2 ] || die "$cmd on a terminal: exit $got: $(cat "$T/out")"
        grep -q "standard input: is a terminal; refusing to read a heap dump from it" "$T/out" ||
            die "$cmd on a terminal: $(cat "$T/out")"
    done
    [ ! -e "$d/t.hprof" ] || die "terminal input left an output"
}

TESTS="$TESTS progress"
t_progress() {
    d=$T/pg; rm -rf "$d"; mkdir -p "$d"
    gzip -dc fixtures/android-synth.hprof.gz > "$d/x.hprof"
    # not a terminal: no progress, one summary line on stderr (none with -q)
    expect 0 "$B/hprof-shrink" "$d/x.hprof" "$d/a.hprof"
    grep -Eqx "$d/x.hprof -> $d/a.hprof: [0-9.]+ [kM]B -> [0-9.]+ [kM]B \([0-9.]+%\), [0-9.]+ s" "$T/err" ||
        die "summary line: $(cat "$T/err")"
    [ "$(wc -l < "$T/err")" = 1 ] || die "more than a summary: $(cat "$T/err")"
    expect 0 "$B/hprof-shrink" -q -f "$d/x.hprof" "$d/a.hprof"
    [ ! -s "$T/err" ] || die "-q printed: $(cat "$T/err")"
    expect 0 "$B/hprof-shrink" -z - - < "$d/x.hprof"
    grep -Eqx "standard input -> standard output: [0-9.]+ [kM]B -> [0-9.]+ [kM]B \([0-9.]+%\), [0-9.]+ s" "$T/err" ||
        die "stdin summary: $(cat "$T/err")"
    # the bytes that went to standard output, after gzip or zstd
    for z in -z --zstd; do
        expect 0 "$B/hprof-shrink" $z --json - - < "$d/x.hprof"
        grep -q "\"bytes_written\":$(wc -c < "$T/out")," "$T/err" ||
            die "$z --json into standard output: bytes_written is not $(wc -c < "$T/out"): $(cat "$T/err")"
    done
    # a terminal: one line redrawn in place, bytes and a rate, no pass
    # counter, a percentage that never goes back; the summary stays
    for cmd in "hprof-shrink -f $d/x.hprof $d/a.hprof" "hprof-shrink -f -z fixtures/android-synth.hprof.gz $d/b.gz" \
               "hprof-verify $d/x.hprof" "hprof-info $d/x.hprof"; do
        timeout 60 script -qec "$B/$cmd" /dev/null < /dev/null > "$T/tty" 2>&1 || die "$cmd on a terminal failed"
        tr '\r' '\n' < "$T/tty" | grep -a "^${cmd%% *}: [^ ]*: .* read, .*/s" > "$T/lines" ||
            die "$cmd: no progress line: $(tr '\r' '\n' < "$T/tty" | head -5)"
        grep -aq 'pass' "$T/lines" && die "$cmd: a pass counter: $(cat "$T/lines")"
        grep -ao ' [0-9]*%' "$T/lines" | tr -d ' %' | sort -n -c 2> /dev/null || die "$cmd: percentage went back"
        case $cmd in # they know bytes, not how much of the work is done
        hprof-verify*|hprof-info*)
            grep -aq '%' "$T/lines" && die "$cmd: a percentage: $(cat "$T/lines")" ;;
        esac
    done
    # -q: none, on a terminal too
    for cmd in "hprof-shrink -q -f $d/x.hprof $d/a.hprof" "hprof-verify -q $d/x.hprof" \
               "hprof-info -q $d/x.hprof"; do
        timeout 60 script -qec "$B/$cmd" /dev/null < /dev/null > "$T/tty" 2>&1 || die "$cmd on a terminal failed"
        if tr '\r' '\n' < "$T/tty" | grep -aq " read, .*/s"; then die "$cmd: a progress line"; fi
    done
    timeout 60 script -qec "$B/hprof-shrink -f $d/x.hprof $d/a.hprof" /dev/null < /dev/null > "$T/tty" 2>&1
    tr '\r' '\n' < "$T/tty" | tr -d '\033' | grep -aq "^\[K$d/x.hprof -> $d/a.hprof: " || die "no summary on a terminal: $(cat -v "$T/tty")"
}

TESTS="$TESTS info_output"
t_info_output() {
    d=$T/io; rm -rf "$d"; mkdir -p "$d"
    # names in modified UTF-8 and bytes that are not UTF-8 (unknown tags,
    # which the fuzz corpus also has, are errors)
    expect 0 "$B/hprof-info" --json tests/fuzz/corpus/info/weird-names.hprof
    python3 - "$T/out" <<'PY' || die "hprof-info --json of odd names: $(cat "$T/out")"
import json, sys
def no_twice(pairs):
    keys = [k for k, _ in pairs]
    assert len(keys) == len(set(keys)), keys
    return dict(pairs)
d = json.loads(open(sys.argv[1], "rb").read().decode("utf-8"), object_pairs_hook=no_twice)
name = d["top_by_count"][0]["name"]
assert name == "com.ex.Caf\u0000\U00010000\u00ff\u0001\"\\", repr(name)
assert d["top_by_count"][0]["id"] == "0x100", d["top_by_count"][0]
PY
    # one class-name form (Java source form) for HotSpot and Android, ids
    # in hexadecimal everywhere, aligned columns
    for f in fixtures/hotspot-fixture.hprof.gz fixtures/android-synth.hprof.gz; do
        "$B/hprof-info" --top 1000 "$f" > "$T/report" || die "info $f"
        sed -n '/^Top .* by count/,/^$/p' "$T/report" > "$T/top"
        grep -q 'java\.lang\.String  ' "$T/top" || die "$f: no java.lang.String: $(head "$T/top")"
        grep -q 'java/\|\[L\|^  \[' "$T/top" && die "$f: descriptor names: $(grep 'java/\|\[L\|^  \[' "$T/top" | head -3)"
        [ "$(grep -v '^$' "$T/top" | awk '{ print length($0) }' | sort -u | wc -l)" = 1 ] ||
            die "$f: columns not aligned: $(head -20 "$T/top")"
        "$B/hprof-info" --json "$f" > "$T/json"
        python3 - "$T/json" <<'PY' || die "$f: ids: $(head -c 600 "$T/json")"
import json, re, sys
d = json.load(open(sys.argv[1]))
for c in d["top_by_count"]:
    assert "/" not in c["name"] and not c["name"].startswith("["), c
    assert c["id"] is None or re.fullmatch(r"0x[0-9a-f]+", c["id"]), c
for b in d["bitmaps"]["list"]:
    assert re.fullmatch(r"0x[0-9a-f]+", b["id"]) and (b["buffer"] is None or re.fullmatch(r"0x[0-9a-f]+", b["buffer"])), b
PY
    done
    "$B/hprof-info" fixtures/android-synth.hprof.gz | grep -q '^  0x[0-9a-f]* .* buffer 0x' || die "report ids not hex"
    # --estimate: -z sizes, exactly what -z writes
    "$B/hprof-info" --json --estimate fixtures/hotspot-fixture.hprof.gz > "$T/json"
    empty=$("$B/hprof-shrink" -q -z fixtures/hotspot-fixture.hprof.gz - | wc -c)
    zero=$("$B/hprof-shrink" -q -z --arrays=zero fixtures/hotspot-fixture.hprof.gz - | wc -c)
    python3 -c "import json,sys; e=json.load(open(sys.argv[1]))['estimate']; assert (e['empty_gzip'], e['zero_gzip']) == ($empty, $zero), e" "$T/json" ||
        die "estimate of -z: $(cat "$T/json" | head -c 300) vs $empty $zero"
    # the man page names the keys the JSON has
    for k in empty zero remove empty_gzip zero_gzip; do
        grep -q "$k" man/hprof-info.1 || die "man page lacks estimate key $k"
    done
    python3 -c "import json,sys; assert 'bytes' not in json.load(open(sys.argv[1]))['estimate']" "$T/json"
    LC_ALL=C.UTF-8 MANWIDTH=200 man -l man/hprof-info.1 2>/dev/null | grep -q 'remove, bytes)' && die "man page lists estimate key bytes"
    # many files, as hprof-verify takes
    expect 0 "$B/hprof-info" --json fixtures/hotspot-synth.hprof.gz fixtures/android-synth.hprof.gz
    [ "$(wc -l < "$T/out")" = 2 ] || die "hprof-info of two files: $(wc -l < "$T/out") lines"
}

# Memory per class (under 128 MiB on 1M chained classes): what
# each tool's peak RSS gains from a 100k-class chain to a 400k one, read
# with pread (HPROF_MMAP=0) so that no page of the file is counted.  The
# difference leaves out what every run costs: class_info and the class
# index, packed, and class ids kept once by verify.  RSS is not time: it
# does not vary with the machine's load.  Not under the sanitizers, whose
# shadow memory and quarantine are in the RSS.
TESTS="$TESTS class_memory"
t_class_memory() {
    if [ "${SANITIZE:-}" = 1 ]; then
        echo "(skipped under the sanitizers: ASan's shadow and quarantine count in the RSS)"
        return
    fi
    d=$T/cm; rm -rf "$d"; mkdir -p "$d"
    max_per_class=100
    for order in --root-first --leaf-first; do
        flag=; [ $order = --leaf-first ] && flag=--leaf-first
        for n in 100000 400000; do
            "$B/hprof-synth" -f --class-chain $n $flag "$d/c$n.hprof" || die "synth $n $order"
        done
        for tool in hprof-shrink hprof-verify hprof-info; do
            rss=""
            for n in 100000 400000; do
                set -- "$B/$tool" "$d/c$n.hprof"
                [ $tool = hprof-shrink ] && set -- "$@" -q -f "$d/out.hprof"
                # bench-time prints "SECONDS RSS_KIB"
                got=$(HPROF_MMAP=0 "$B/bench-time" -- "$@") || die "$tool $n classes $order"
                rss="$rss ${got#* }"
            done
            set -- $rss
            per_class=$(( ($2 - $1) * 1024 / 300000 ))
            echo "$tool $order: $1 -> $2 KiB: $per_class bytes a class"
            [ "$per_class" -le $max_per_class ] ||
                die "$tool $order: $per_class bytes a class, over $max_per_class ($1 -> $2 KiB)"
        done
    done
}

TESTS="$TESTS small_ones"
t_small_ones() {
    d=$T/sm; rm -rf "$d"; mkdir -p "$d"
    # hprof-bitmaps: a missing input leaves no OUTDIR; no id twice in a line
    expect 3 "$B/hprof-bitmaps" "$d/nosuch.hprof" "$d/bm"
    [ ! -e "$d/bm" ] || die "hprof-bitmaps left an empty OUTDIR"
    expect 0 "$B/hprof-bitmaps" fixtures/android-synth.hprof.gz "$d/bm"
    awk -F '\t' 'NR > 1 { n = split($2, a, ","); for (i = 1; i <= n; i++) if (seen[NR, a[i]]++) print }' \
        "$d/bm/index.tsv" | grep -q . && die "index.tsv repeats an id: $(cat "$d/bm/index.tsv")"
    # every option of the man page is in --help
    "$B/hprof-shrink" --help > "$d/help"
    for opt in $(sed 's/\\-/-/g' man/hprof-shrink.1 | grep -o '^\.BI\? *--[a-z-]*' | sed 's/.*--//' | sort -u); do
        grep -q -- "--$opt" "$d/help" || die "--$opt is in the man page, not in --help"
    done
    grep -q -- '--segment-size' "$d/help" || die "--segment-size not in --help"
    # every --json key is in the man page: one dump, several, a salvage
    "$B/hprof-synth" --dumps 2 -f "$d/two.hprof"
    gzip -dc fixtures/hotspot-synth.hprof.gz | head -c 5000 > "$d/cut.hprof"
    for run in "fixtures/android-synth.hprof.gz" "$d/two.hprof" "--salvage $d/cut.hprof"; do
        "$B/hprof-shrink" -q -f --json $run "$d/j.hprof" > "$d/j.json" || die "--json $run"
        python3 - "$d/j.json" man/hprof-shrink.1 <<'PY' || die "--json $run: a key the man page lacks"
import json, re, sys
man = set(re.findall(r"[a-z][a-z0-9_]+", open(sys.argv[2]).read().replace("\\-", "-")))
def keys(o):
    for k, v in (o.items() if isinstance(o, dict) else ()):
        yield k
        yield from keys(v)
missing = sorted(set(keys(json.load(open(sys.argv[1])))) - man)
assert not missing, missing
PY
    done
    # the demo writes to a fresh directory and says which
    TMPDIR=$d sh tools/demo.sh "$B" > "$d/demo" 2>&1 || die "demo: $(cat "$d/demo")"
    dir=$(sed -n 's/^outputs in //p' "$d/demo")
    case $dir in "$d"/hprof-shrink-demo.*) ;; *) die "demo wrote to '$dir'" ;; esac
    [ -s "$dir/android-synth.shrunk.hprof" ] || die "demo output missing in $dir"
}

TESTS="$TESTS small_ones_2"
t_small_ones_2() {
    d=$T/sm2; rm -rf "$d"; mkdir -p "$d/in"
    gzip -dc fixtures/hotspot-synth.hprof.gz > "$d/x.hprof"
    # -q silences the salvage line too
    head -c 60000 "$d/x.hprof" > "$d/cut.hprof"
    expect 0 "$B/hprof-shrink" -q --salvage "$d/cut.hprof" "$d/cut-out.hprof"
    [ ! -s "$T/err" ] || die "-q --salvage: $(cat "$T/err")"
    expect 0 "$B/hprof-shrink" --salvage -f "$d/cut.hprof" "$d/cut-out.hprof"
    grep -q 'input cut at offset 0xea60' "$T/err" || die "--salvage without -q: $(cat "$T/err")"
    # one of a kind is singular ("1 dangling reference", not "1 ... references")
    for f in fixtures/*.hprof.gz; do
        "$B/hprof-verify" "$f" > "$d/v" || die "verify $f"
        grep -Eq '[ (]1 [a-z ]+s([,;) ]|$)' "$d/v" && die "a plural for one: $(cat "$d/v")"
    done
    "$B/hprof-verify" fixtures/*.hprof.gz | grep -q ' 1 dangling reference (root 1)$' ||
        die "no fixture with one dangling reference to check the singular with"
    # an empty name is a usage error, before any work
    expect 2 "$B/hprof-shrink" -o '' "$d/x.hprof"
    expect 2 "$B/hprof-shrink" "$d/x.hprof" ''
    # a second gzip member whose last bytes are corrupt inflates to garbage
    # past the dump's end before zlib can tell: the gzip error is reported
    head -c 40000 "$d/x.hprof" | gzip > "$d/m1.gz"
    tail -c +40001 "$d/x.hprof" | gzip > "$d/m2.gz"
    python3 - "$d/m1.gz" "$d/m2.gz" "$d/bad.gz" <<'PY'
import sys
a = open(sys.argv[1], "rb").read(); b = bytearray(open(sys.argv[2], "rb").read())
b[-10] ^= 0xff   # in the last deflate block, before CRC and ISIZE
open(sys.argv[3], "wb").write(a + bytes(b))
PY
    for j in -j1 -j2; do
        expect 1 "$B/hprof-shrink" $j "$d/bad.gz" "$d/bad.hprof"
        grep -q 'bad.gz: offset 0x[0-9a-f]* (compressed): gzip input is' "$T/err" || die "corrupt member $j: $(cat "$T/err")"
    done
    expect 1 "$B/hprof-verify" - < "$d/bad.gz"
    grep -q 'standard input: offset 0x[0-9a-f]* (compressed): gzip input is' "$T/err" || die "corrupt member, pipe: $(cat "$T/err")"
    # batch text output: what a terminal acts on is escaped (C1 controls,
    # bidi overrides, bytes that are not UTF-8), plain UTF-8 is not
    name=$(printf 'a\302\233b\342\200\256c\233d-\303\251')
    cp "$d/x.hprof" "$d/in/$name.hprof"
    expect 0 "$B/hprof-shrink" -o "$d/out" "$d/in/$name.hprof"
    expect 0 "$B/hprof-shrink" -o "$d/out" "$d/in/$name.hprof"
    for bad in '\302\233' '\342\200\256' '\233'; do
        LC_ALL=C grep -q "$(printf "$bad")" "$T/out" && die "batch printed $bad raw: $(cat -v "$T/out")"
    done
    grep -qF 'a\u009bb\u202ec\x9bd-'"$(printf '\303\251')"'.hprof" -> ' "$T/out" || die "batch names: $(cat -v "$T/out")"
}

TESTS="$TESTS bitmaps_stopped_by_a_signal"
# hprof-bitmaps stopped by SIGINT, SIGTERM or SIGHUP half way (its writes
# slowed down by the fault shim; an image placed already) leaves what a
# failed run leaves: no image, no index, no temporary file, and neither
# the directory it made nor anything in one that was there; a run after it
# needs no -f. A signal that was ignored when it started (nohup) stays
# ignored: the run completes. (A background job of sh starts with SIGINT
# ignored: env gives it back its default.)
t_bitmaps_stopped_by_a_signal() {
    d=$T/bmsig; rm -rf "$d"; mkdir -p "$d"
    gzip -dc fixtures/android-synth.hprof.gz > "$d/in.hprof"
    # (run in the background, it becomes the job itself: $! is its pid)
    slow_bitmaps() {
        exec env --default-signal=INT HPROF_FAULT=slow LD_PRELOAD="$(pwd)/$B/tests/fault_write.so" \
            "$B/hprof-bitmaps" "$d/in.hprof" "$d/out" > /dev/null 2>&1
    }
    # wait until an image is in place (temporary files end in .tmp)
    wait_for_an_image() {
        i=0
        until ls "$d/out" 2> /dev/null | grep -q '\.png$'; do
            i=$((i + 1)); [ $i -lt 200 ] || break; sleep 0.05
        done
        ls "$d/out" 2> /dev/null | grep -q '\.png$' || die "$1: no image placed while running"
    }
    for sig in INT:2 TERM:15 HUP:1; do
        for outdir in made existing; do
            rm -rf "$d/out"
            [ $outdir = made ] || mkdir "$d/out"
            slow_bitmaps &
            pid=$!
            wait_for_an_image "SIG${sig%:*}"
            kill -"${sig%:*}" $pid
            set +e; wait $pid; got=$?; set -e
            [ "$got" = $((128 + ${sig#*:})) ] || die "SIG${sig%:*}, OUTDIR $outdir: exit status $got"
            if [ $outdir = made ]; then
                [ ! -e "$d/out" ] || die "SIG${sig%:*} left OUTDIR with $(ls -A "$d/out")"
            else
                [ -z "$(ls -A "$d/out")" ] || die "SIG${sig%:*} left $(ls -A "$d/out") in OUTDIR"
            fi
        done
    done
    expect 0 "$B/hprof-bitmaps" "$d/in.hprof" "$d/out"
    [ -s "$d/out/index.tsv" ] || die "no index.tsv after a run that followed a stopped one"
    rm -rf "$d/out"
    (trap '' HUP; slow_bitmaps) &
    pid=$!
    wait_for_an_image "nohup"
    kill -HUP $pid
    set +e; wait $pid; got=$?; set -e
    [ "$got" = 0 ] && [ -s "$d/out/index.tsv" ] || die "SIGHUP ignored at the start: exit status $got, $(ls -A "$d/out")"
}

if [ $# -gt 0 ]; then
    for t; do banner "$t"; "t_$t"; done
    finish
fi

HPROF_CONV=/usr/lib/android-sdk/platform-tools/hprof-conv
VISUALVM_JAR=/usr/share/visualvm/visualvm/modules/org-graalvm-visualvm-lib-jfluid-heap.jar
[ -x "$HPROF_CONV" ] || { echo "FAIL: $HPROF_CONV missing (apt-get install hprof-conv)" >&2; exit 1; }
[ -f "$VISUALVM_JAR" ] || { echo "FAIL: $VISUALVM_JAR missing (apt-get install visualvm)" >&2; exit 1; }
command -v javac >/dev/null || { echo "FAIL: javac missing (apt-get install default-jdk-headless)" >&2; exit 1; }
command -v strace >/dev/null || { echo "FAIL: strace missing (apt-get install strace)" >&2; exit 1; }

mkdir -p "$T/java"
javac -d "$T/java" -cp "$VISUALVM_JAR" tests/java/HeapCount.java tests/java/RetainedSizes.java \
    tests/java/HeapView.java
heapcount() { java -cp "$VISUALVM_JAR:$T/java" HeapCount "$@"; }
retained() { java -cp "$VISUALVM_JAR:$T/java" RetainedSizes "$@"; }
heapview() { java -cp "$VISUALVM_JAR:$T/java" HeapView "$@"; }
# compare_views [--contents] A B: exit 0 when an analyst sees one heap in both
compare_views() {
    HPROF_BUILD=$B HEAPVIEW_CLASSES="$T/java" HPROF_CONV=$HPROF_CONV VISUALVM_JAR=$VISUALVM_JAR \
        tests/compare-views.sh "$@"
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
grep -q '^standard input: OK: JAVA PROFILE 1.0.2, 8-byte ids' "$T/out" || die "verify stdin: $(cat "$T/out")"
# counts agree with the generator's own bookkeeping
for k in instances class_dumps object_arrays primitive_arrays roots strings; do
    want=$(awk -v k=$k '$1 == k { print $2 }' fixtures/android-synth.manifest)
    label=$(echo $k | sed 's/_/ /; s/class dumps/class dumps/')
    "$B/hprof-verify" fixtures/android-synth.hprof.gz | grep -q " $want $label" ||
        die "verify does not count $want $label"
done

banner "several heap dumps in one file: each its own ids, in every tool"
# what hprof-verify counts of each dump: "DUMP: CLASS_DUMPS INSTANCES OBJ_ARRAYS PRIM_ARRAYS ROOTS"
dump_counts() {
    "$B/hprof-verify" "$1" | sed -n 's/.*: \(dump [0-9]* of [0-9]*\): OK: .* \([0-9]*\) class dumps\?, \([0-9]*\) instances\?, \([0-9]*\) object arrays\?, \([0-9]*\) primitive arrays\? .* \([0-9]*\) roots\?,.*/\1: \2 \3 \4 \5 \6/p'
}
for shape in "" --whole-dumps; do
    for mode in --hotspot --android; do
        m="$T/multi$shape$mode.hprof"
        "$B/hprof-synth" -f $mode --dumps 3 $shape "$m"
        expect 0 "$B/hprof-verify" "$m"
        [ "$(grep -c ': dump [123] of 3: OK: ' "$T/out")" = 3 ] || die "verify $shape $mode: $(cat "$T/out")"
        dump_counts "$m" > "$T/multi.in"
        [ "$(wc -l < "$T/multi.in")" = 3 ] || die "counts $shape $mode: $(cat "$T/multi.in")"
        [ "$(sed -n 1p "$T/multi.in" | cut -d: -f2)" != "$(sed -n 3p "$T/multi.in" | cut -d: -f2)" ] ||
            die "the generator's dumps $shape $mode do not differ"
        # Android's zygote and image objects and merged bitmap copies would go: kept, to compare counts
        keep=""
        [ $mode = --hotspot ] || keep="--keep-system-heaps --keep-duplicates"
        for j in -j1 -j2; do
            expect 0 "$B/hprof-shrink" -f $keep $j "$m" "$T/multi-out$j.hprof"
        done
        cmp -s "$T/multi-out-j1.hprof" "$T/multi-out-j2.hprof" || die "shrink $shape $mode: -j1 and -j2 differ"
        # every dump keeps its class dumps, instances, arrays and roots
        dump_counts "$T/multi-out-j1.hprof" > "$T/multi.out"
        cmp -s "$T/multi.in" "$T/multi.out" ||
            die "shrink $shape $mode changed a dump: $(diff "$T/multi.in" "$T/multi.out")"
        "$B/hprof-info" --json "$m" > "$T/out" || die "info $shape $mode"
        [ "$(grep -c '"dump":[123],"dumps":3' "$T/out")" = 3 ] || die "info --json $shape $mode: one object per dump"
        # --dump=N keeps that dump alone
        expect 0 "$B/hprof-shrink" -f $keep --dump=2 "$m" "$T/multi-2.hprof"
        expect 0 "$B/hprof-verify" "$T/multi-2.hprof"
        grep -q ': OK: ' "$T/out" && ! grep -q 'dump 1 of' "$T/out" || die "--dump=2 $shape $mode: $(cat "$T/out")"
        want=$(sed -n 2p "$T/multi.in" | cut -d: -f2 | awk '{ print $2 + $3 + $4 }')
        got=$("$B/hprof-verify" "$T/multi-2.hprof" | sed 's/.* \([0-9]*\) instances\?, \([0-9]*\) object arrays\?, \([0-9]*\) primitive arrays\?.*/\1 \2 \3/' | awk '{ print $1 + $2 + $3 }')
        [ "$want" = "$got" ] || die "--dump=2 $shape $mode: $got objects, dump 2 has $want"
        expect 2 "$B/hprof-shrink" -f --dump=4 "$m" "$T/multi-4.hprof"
        grep -q 'no heap dump 4: the file holds 3' "$T/err" || die "--dump=4: $(cat "$T/err")"
        [ ! -e "$T/multi-4.hprof" ] || die "--dump=4 left an output"
    done
done
expect 2 "$B/hprof-shrink" --dump=0 "$m" "$T/x.hprof"
# VisualVM reads the first heap dump of a file: of the shrunk file, as
# many objects as dump 1 holds; of --dump=2's output, dump 2's
m="$T/multi--hotspot.hprof"
"$B/hprof-shrink" -q -f "$m" "$T/multi-out.hprof"
"$B/hprof-shrink" -q -f --dump=2 "$m" "$T/multi-2.hprof"
dump_counts "$m" > "$T/multi.in"
for n in 1 2; do
    out="$T/multi-out.hprof"
    [ $n = 1 ] || out="$T/multi-2.hprof"
    want=$(sed -n ${n}p "$T/multi.in" | cut -d: -f2 | awk '{ print $2 + $3 + $4 }')
    heapcount "$out" > "$T/hc" || die "VisualVM cannot load $out: $(cat "$T/hc")"
    grep -qx "instances $want" "$T/hc" || die "VisualVM on dump $n: $(head -2 "$T/hc"), want $want"
done
# a run per dump is bounded: 300 empty HEAP_DUMP records are refused
{ printf 'JAVA PROFILE 1.0.2\0\0\0\0\004\0\0\0\0\0\0\0\0'
  i=0; while [ $i -lt 300 ]; do printf '\014\0\0\0\0\0\0\0\0'; i=$((i + 1)); done; } > "$T/many.hprof"
expect 1 "$B/hprof-shrink" -f "$T/many.hprof" "$T/many-out.hprof"
grep -q '300 heap dumps in one file: at most 256' "$T/err" || die "300 dumps: $(cat "$T/err")"
expect 0 "$B/hprof-shrink" -f --dump=300 "$T/many.hprof" "$T/many-out.hprof"
# the hprof agent's text format is named, not parsed
printf 'JAVA PROFILE 1.0.1, created Wed Nov 26 10:00:00 2025\n\nHeader for -agentlib:hprof (or -Xrunhprof) ASCII Output\n' > "$T/text.hprof"
for tool in hprof-verify hprof-info hprof-shrink; do
    args="$T/text.hprof"
    [ $tool != hprof-shrink ] || args="-f $T/text.hprof $T/text-out.hprof"
    # shellcheck disable=SC2086 # the arguments are words
    expect 1 "$B/$tool" $args
    grep -q 'offset 0x0: header: a text-format hprof (format=a), not a binary heap dump' "$T/err" ||
        die "$tool on the text format: $(cat "$T/err")"
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
    total=$(echo "$v" | sed -E 's/.* ([0-9]+) instances?, ([0-9]+) object arrays?, ([0-9]+) primitive arrays?.*/\1 \2 \3/' |
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
gzip -dc fixtures/android-synth.hprof.gz | "$B/hprof-shrink" --multi-pass - - > "$T/pipe.hprof" ||
    die "stdin to stdout"
"$B/hprof-shrink" fixtures/android-synth.hprof.gz "$T/file.hprof" || die "gzip input"
cmp -s "$T/pipe.hprof" "$T/file.hprof" || die "pipe and file outputs differ"
# a pipe takes the one pass by default, which gives the same bytes from a
# file, plain or compressed
gzip -dc fixtures/android-synth.hprof.gz | "$B/hprof-shrink" - - > "$T/pipe1.hprof" ||
    die "stdin to stdout, one pass"
"$B/hprof-shrink" --one-pass fixtures/android-synth.hprof.gz "$T/file1.hprof" || die "--one-pass of gzip"
cmp -s "$T/pipe1.hprof" "$T/file1.hprof" || die "one pass: pipe and file outputs differ"
"$B/hprof-shrink" -f fixtures/android-synth.hprof.gz "$T/file2.hprof"
cmp -s "$T/file.hprof" "$T/file2.hprof" || die "output is not deterministic"
"$B/hprof-shrink" -z fixtures/android-synth.hprof.gz "$T/file.hprof.gz" || die "--gzip"
gzip -t "$T/file.hprof.gz" || die "gzip output does not test"
gzip -dc "$T/file.hprof.gz" | cmp -s - "$T/file.hprof" || die "gunzip does not restore the plain output"
head -c 64 "$T/file.hprof.gz" | grep -aq 'HPROF BLOCKSIZE=1048576' || die "no BLOCKSIZE comment"
"$B/hprof-shrink" -z1 fixtures/android-synth.hprof.gz "$T/l1.hprof.gz" && gzip -dc "$T/l1.hprof.gz" | cmp -s - "$T/file.hprof" ||
    die "--gzip=1 differs after gunzip"
"$B/hprof-verify" "$T/file.hprof.gz" > /dev/null || die "gzip output does not verify"

banner "hprof-shrink: every gzip level gives the same bytes run after run, under competing load"
# Two CPU-burning loops compete with -j2's workers, so members finish in
# every order; the last member of android-synth is a short one.
"$B/hprof-synth" -f "$T/det.hprof"
( while :; do :; done ) & burn1=$!
( while :; do :; done ) & burn2=$!
differs=
for level in 1 6 9; do
    "$B/hprof-shrink" -q -j2 -f -$level "$T/det.hprof" "$T/det-ref.hprof.gz" || differs="-$level failed"
    for run in 1 2 3 4 5 6; do
        "$B/hprof-shrink" -q -j2 -f -$level "$T/det.hprof" "$T/det-run.hprof.gz" || differs="-$level failed"
        cmp -s "$T/det-ref.hprof.gz" "$T/det-run.hprof.gz" ||
            differs="$differs -$level run $run: $(stat -c %s "$T/det-run.hprof.gz") bytes, not $(stat -c %s "$T/det-ref.hprof.gz")"
    done
done
kill "$burn1" "$burn2"
wait "$burn1" "$burn2" 2> /dev/null || true
[ -z "$differs" ] || die "the same input, other bytes:$differs"
rm -f "$T/det.hprof" "$T/det-ref.hprof.gz" "$T/det-run.hprof.gz" "$T/det-l1.hprof.gz"

banner "hprof-shrink: --zstd output, .zst inputs in every tool, batch names"
# $T/file.hprof: the plain output of android-synth (above)
"$B/hprof-shrink" -q --zstd fixtures/android-synth.hprof.gz "$T/file.hprof.zst" || die "--zstd"
zstd -q -t "$T/file.hprof.zst" || die "--zstd output does not test"
zstd -q -dc "$T/file.hprof.zst" | cmp -s - "$T/file.hprof" || die "zstd -d does not restore the plain output"
"$B/hprof-shrink" -q --zstd=19 - - < "$T/file.hprof.zst" > "$T/z19.hprof.zst" || die "--zstd=19 through pipes"
zstd -q -dc "$T/z19.hprof.zst" | cmp -s - "$T/file.hprof" || die "--zstd=19 differs after zstd -d"
# the same bytes at every thread count, over several of libzstd's jobs
"$B/hprof-synth" --scale 40 --pixels 30000000 -f "$T/zj.hprof"
for j in 1 2 4; do
    "$B/hprof-shrink" -q -j$j --zstd --arrays=zero --keep-duplicates --keep-names "$T/zj.hprof" \
        "$T/zj$j.hprof.zst" || die "--zstd -j$j"
done
[ "$(zstd -q -dc "$T/zj1.hprof.zst" | wc -c)" -gt 32000000 ] || die "the -j output is too small to make several jobs"
cmp -s "$T/zj1.hprof.zst" "$T/zj2.hprof.zst" && cmp -s "$T/zj1.hprof.zst" "$T/zj4.hprof.zst" ||
    die "--zstd: other bytes at -j1, -j2, -j4"
rm -f "$T/zj.hprof" "$T"/zj?.hprof.zst
# .zst inputs: from a file and a pipe, to every tool
gzip -dc fixtures/android-synth.hprof.gz | zstd -q -c > "$T/in.hprof.zst"
"$B/hprof-shrink" -q "$T/in.hprof.zst" "$T/from-zst.hprof" && cmp -s "$T/from-zst.hprof" "$T/file.hprof" ||
    die ".zst input: not the output of the plain input"
"$B/hprof-shrink" -q - - < "$T/in.hprof.zst" | cmp -s - "$T/file.hprof" || die ".zst through a pipe"
expect 0 "$B/hprof-verify" "$T/in.hprof.zst"
expect 0 "$B/hprof-info" "$T/in.hprof.zst"
expect 0 "$B/hprof-bitmaps" "$T/in.hprof.zst" "$T/zst-bitmaps"
# cut short, corrupt: one line with the offset, exit 1
head -c 5000 "$T/in.hprof.zst" > "$T/cut.hprof.zst"
expect 1 "$B/hprof-shrink" "$T/cut.hprof.zst" "$T/cut.hprof"
[ "$(wc -l < "$T/err")" = 1 ] && grep -q 'offset 0x1388 (compressed): zstd input is truncated; --salvage keeps what is complete$' "$T/err" ||
    die "cut .zst: $(cat "$T/err")"
{ cat "$T/in.hprof.zst"; echo garbage; } > "$T/bad.hprof.zst"
expect 1 "$B/hprof-verify" "$T/bad.hprof.zst"
[ "$(wc -l < "$T/err")" = 1 ] && grep -q 'offset 0x[0-9a-f]* (compressed): zstd input is corrupt: ' "$T/err" ||
    die "corrupt .zst: $(cat "$T/err")"
[ ! -e "$T/cut.hprof" ] || die "a failed shrink left its output"
# a bomb behind a valid header stops at its first record
{ gzip -dc fixtures/android-synth.hprof.gz | head -c 31; head -c 1000000000 /dev/zero; } | zstd -q -1 -c > "$T/bomb.hprof.zst"
expect 1 "$B/hprof-shrink" "$T/bomb.hprof.zst" "$T/bomb.hprof"
grep -q 'offset 0x1f: zero bytes where a record should start' "$T/err" || die "zstd bomb: $(cat "$T/err")"
# one compression; a level out of range
expect 2 "$B/hprof-shrink" -z --zstd "$T/in.hprof.zst" "$T/both"
grep -q -- '-z (--gzip) and --zstd' "$T/err" || die "-z --zstd: $(cat "$T/err")"
expect 2 "$B/hprof-shrink" -6 --zstd=3 "$T/in.hprof.zst" "$T/both"
expect 2 "$B/hprof-shrink" --zstd=20 "$T/in.hprof.zst" "$T/both"
# batch: outputs named .hprof.zst; -r finds *.hprof.zst and drops .zst
mkdir -p "$T/zb"; cp "$T/in.hprof.zst" "$T/zb/a.hprof.zst"; cp "$T/file.hprof" "$T/zb/b.hprof"
expect 0 "$B/hprof-shrink" -q --zstd -r -o "$T/zbo" "$T/zb"
[ "$(cd "$T/zbo" && ls | tr '\n' ' ')" = "a.hprof.zst b.hprof.zst " ] || die "batch --zstd names: $(ls "$T/zbo")"
expect 0 "$B/hprof-shrink" -q -r -o "$T/zbp" "$T/zb"
[ "$(cd "$T/zbp" && ls | tr '\n' ' ')" = "a.hprof b.hprof " ] || die "batch .zst input names: $(ls "$T/zbp")"
cmp -s "$T/zbp/a.hprof" "$T/file.hprof" || die "batch .zst input: other bytes"
rm -rf "$T/zb" "$T/zbo" "$T/zbp" "$T/zst-bitmaps" "$T"/*.zst

banner "hprof-shrink: .gz inputs of many members inflate on every core as through a pipe"
# members by our -z (1 MiB each, the first commented as jcmd writes it), by
# gzip(1) concatenated (cat a.gz b.gz ...), and gzip(1)'s single member;
# a jcmd -gz=1 dump of FixtureApp (below) has the JDK's own members
"$B/hprof-synth" --scale 60 --pixels 3000000 -f "$T/gzm.hprof"
"$B/hprof-shrink" -q -z --arrays=zero --keep-system-heaps --keep-duplicates --keep-names \
    "$T/gzm.hprof" "$T/gzm-z.hprof.gz" || die "-z of the members input"
split -b 700000 "$T/gzm.hprof" "$T/gzm-part."
for p in "$T"/gzm-part.*; do gzip -c "$p"; done > "$T/gzm-cat.hprof.gz"
gzip -c "$T/gzm.hprof" > "$T/gzm-one.hprof.gz"
rm -f "$T"/gzm-part.*
mkdir -p "$T/java"
javac -d "$T/java" tools/java/FixtureApp.java
dump_app "$T/gzm-jcmd.hprof.gz" -gz=1 -Xmx24m -XX:+UseSerialGC -Xshare:off -cp "$T/java" FixtureApp
head -c 64 "$T/gzm-jcmd.hprof.gz" | grep -aq 'HPROF BLOCKSIZE=1048576' || die "jcmd -gz=1: no BLOCKSIZE comment"
for gz in gzm-z gzm-cat gzm-one gzm-jcmd; do
    gzip -dc "$T/$gz.hprof.gz" | "$B/hprof-shrink" -q --multi-pass - - > "$T/$gz.pipe" ||
        die "$gz through a pipe"
    gzip -dc "$T/$gz.hprof.gz" | "$B/hprof-shrink" -q - - > "$T/$gz.pipe1" ||
        die "$gz through a pipe, one pass"
    for j in 1 2 3 0; do
        "$B/hprof-shrink" -q -f -j$j "$T/$gz.hprof.gz" "$T/$gz.out" || die "$gz -j$j"
        cmp -s "$T/$gz.pipe" "$T/$gz.out" || die "$gz -j$j: not what the pipe gives"
        # inflated as it is read, a member per thread
        "$B/hprof-shrink" -q -f --one-pass -j$j "$T/$gz.hprof.gz" "$T/$gz.out" || die "$gz -j$j"
        cmp -s "$T/$gz.pipe1" "$T/$gz.out" || die "$gz --one-pass -j$j: not what the pipe gives"
    done
    expect 0 "$B/hprof-verify" "$T/$gz.hprof.gz"
done
# -j1 is one thread, inflating included (-j2 shows that clones are seen)
traced_asan="${ASAN_OPTIONS:-}:detect_leaks=0"
for j in 1 2; do
    ASAN_OPTIONS=$traced_asan strace -f -qq -e trace=clone,clone3 -o "$T/gzm.strace" \
        "$B/hprof-shrink" -q -f -j$j "$T/gzm-z.hprof.gz" "$T/gzm-z.out" || die "-j$j under strace"
    n=$(grep -c 'clone' "$T/gzm.strace" || true)
    if [ $j = 1 ]; then
        [ "$n" = 0 ] || die "-j1 on a .gz input started $n threads"
    else
        [ "$n" -ge 2 ] || die "-j2 on a .gz input started $n threads"
    fi
done
# a cut: the same message, at the same offset, from a file as from a pipe
head -c $(( $(wc -c < "$T/gzm-z.hprof.gz") * 2 / 3 )) "$T/gzm-z.hprof.gz" > "$T/gzm-cut.hprof.gz"
expect 1 "$B/hprof-verify" "$T/gzm-cut.hprof.gz"
sed 's/^[^:]*: [^:]*: //' "$T/err" > "$T/gzm-cut.file"
set +e
cat "$T/gzm-cut.hprof.gz" | "$B/hprof-verify" - > /dev/null 2> "$T/err"
[ $? = 1 ] || die "a cut .gz through a pipe: not exit 1"
set -e
sed 's/^[^:]*: [^:]*: //' "$T/err" > "$T/gzm-cut.pipe"
grep -q 'gzip input is truncated' "$T/gzm-cut.file" && cmp -s "$T/gzm-cut.file" "$T/gzm-cut.pipe" ||
    die "cut .gz: file says '$(cat "$T/gzm-cut.file")', pipe '$(cat "$T/gzm-cut.pipe")'"
rm -f "$T"/gzm*

banner "hprof-shrink: a .gz file with no room for its copy in TMPDIR shrinks in one pass"
# the copy the passes need cannot be made (a missing TMPDIR, a full one):
# the one pass inflates as it reads instead, with a note, and gives the
# bytes --one-pass gives; asked for the passes, the run fails and leaves
# nothing; a plain file needs no copy, and no note
gz=fixtures/android-synth.hprof.gz
"$B/hprof-shrink" -q -f --one-pass "$gz" "$T/room1.hprof" || die "--one-pass of $gz"
expect 0 env TMPDIR=/nonexistent "$B/hprof-shrink" -f "$gz" "$T/room.hprof"
grep -q "note: .*cannot create a temporary copy.*; shrinking in one pass" "$T/err" ||
    die "no room: no note: $(cat "$T/err")"
cmp -s "$T/room1.hprof" "$T/room.hprof" || die "no room: not the --one-pass output"
expect 0 env TMPDIR=/nonexistent "$B/hprof-shrink" -q -f "$gz" "$T/room.hprof"
[ ! -s "$T/err" ] || die "no room, -q: said $(cat "$T/err")"
# standard input that is the file (read by offset, from its start)
set +e
TMPDIR=/nonexistent "$B/hprof-shrink" -f - "$T/room.hprof" < "$gz" 2> "$T/err"
[ $? = 0 ] || die "no room, stdin a file: failed: $(cat "$T/err")"
set -e
grep -q "note: standard input: .*; shrinking in one pass" "$T/err" ||
    die "no room, stdin a file: no note: $(cat "$T/err")"
cmp -s "$T/room1.hprof" "$T/room.hprof" || die "no room, stdin a file: not the --one-pass output"
rm -f "$T/room.hprof"
expect 3 env TMPDIR=/nonexistent "$B/hprof-shrink" -f --multi-pass "$gz" "$T/room.hprof"
grep -q "cannot create a temporary copy" "$T/err" || die "--multi-pass, no room: $(cat "$T/err")"
[ ! -e "$T/room.hprof" ] || die "--multi-pass, no room: left an output"
gzip -dc "$gz" > "$T/room-plain.hprof"
expect 0 env TMPDIR=/nonexistent "$B/hprof-shrink" -f "$T/room-plain.hprof" "$T/room.hprof"
! grep -q "note:" "$T/err" || die "a plain file: $(cat "$T/err")"
# --json into stderr (OUT is standard output) stays JSON: no note before it
TMPDIR=/nonexistent "$B/hprof-shrink" --json "$gz" - 2> "$T/room.json" > /dev/null ||
    die "no room, --json: failed: $(cat "$T/room.json")"
python3 -c "import json,sys; d=json.load(open(sys.argv[1])); assert len(d['pass_seconds'])==1, d" "$T/room.json" ||
    die "no room, --json to stderr: not JSON of one pass: $(cat "$T/room.json")"
# a copy that fails midway (past a limit on file size, EFBIG): the one
# pass takes over, into standard output, which the limit does not bound
set +e
(trap '' XFSZ; ulimit -f 2048; TMPDIR="$T" "$B/hprof-shrink" -f "$gz" - 2> "$T/err"
    echo $? > "$T/room.rc") | cat > "$T/room.hprof"
set -e
[ "$(cat "$T/room.rc")" = 0 ] || die "a copy cut by EFBIG: failed: $(cat "$T/err")"
grep -q "note: .*the decompressed copy of the input in $T.*; shrinking in one pass" "$T/err" ||
    die "a copy cut by EFBIG: no note: $(cat "$T/err")"
cmp -s "$T/room1.hprof" "$T/room.hprof" || die "a copy cut by EFBIG: not the --one-pass output"
# a TMPDIR with room for a part of the copy only: nothing stays in it
if [ "$(id -u)" != 0 ] || ! mkdir -p "$T/small" || ! mount -t tmpfs -o size=64k tmpfs "$T/small"; then
    echo "(a full TMPDIR: not tried, cannot mount a 64 KiB tmpfs; the EFBIG case above stands for it)"
else
    expect 0 env TMPDIR="$T/small" "$B/hprof-shrink" -f "$gz" "$T/room.hprof"
    grep -q "note: .*would exceed the .* bytes free in $T/small" "$T/err" ||
        die "a full TMPDIR: no note: $(cat "$T/err")"
    cmp -s "$T/room1.hprof" "$T/room.hprof" || die "a full TMPDIR: not the --one-pass output"
    [ -z "$(ls -A "$T/small")" ] || die "a full TMPDIR: left $(ls -A "$T/small")"
    # standard input, read in part for the copy: the one pass starts over
    set +e
    TMPDIR="$T/small" "$B/hprof-shrink" -f - "$T/room.hprof" < "$gz" 2> "$T/err"
    [ $? = 0 ] || die "a full TMPDIR, stdin a file: failed: $(cat "$T/err")"
    set -e
    cmp -s "$T/room1.hprof" "$T/room.hprof" || die "a full TMPDIR, stdin a file: not the --one-pass output"
    umount "$T/small"
fi
rm -rf "$T"/room* "$T/small"

banner "hprof-shrink: --stats and --json"
"$B/hprof-shrink" --json fixtures/android-synth.hprof.gz "$T/j.hprof" > "$T/json"
python3 -c "import json,sys; d=json.load(open(sys.argv[1])); assert d['bitmap_groups']==3, d; assert d['bytes_out']==$(wc -c < "$T/j.hprof"), d" "$T/json" ||
    die "--json is not valid or wrong: $(cat "$T/json")"
"$B/hprof-shrink" --json fixtures/android-synth.hprof.gz - 2> "$T/json2" > /dev/null
python3 -c "import json,sys; json.load(open(sys.argv[1]))" "$T/json2" || die "--json with stdout output goes to stderr"
# names first and zygote/image objects before the app's let the first pass
# resolve (the synth's dropped system objects add the pass over their
# references)
"$B/hprof-shrink" -f --json fixtures/hotspot-fixture.hprof.gz "$T/j2.hprof" > "$T/json3"
python3 -c "import json,sys; d=json.load(open(sys.argv[1])); e=json.load(open(sys.argv[2]))
assert d['resolved_in_pass_1'] is True and len(d['pass_seconds']) == 2, d
assert e['resolved_in_pass_1'] is True and len(e['pass_seconds']) == 3, e" "$T/json3" "$T/json" ||
    die "--json passes: $(cat "$T/json3" "$T/json")"
"$B/hprof-shrink" --stats -f fixtures/android-synth.hprof.gz "$T/j.hprof" 2> "$T/stats"
grep -q 'bitmap copies merged  *3 ' "$T/stats" || die "--stats: $(cat "$T/stats")"

banner "hprof-shrink: every counter of the stats table is in --json and --stats, in its order"
# the table (HPROF_SHRINK_COUNTERS) as the preprocessor expands it, against
# what both reports print with every part of --stats shown
printf '#include "hprof.h"\n#define ROW(kind, field, key, text, label, unit) [key, #text, #label],\n[HPROF_SHRINK_COUNTERS(ROW)]\n' > "$T/table.c"
${CC:-cc} -E -P -Iinclude "$T/table.c" > "$T/table.txt" || die "the stats table does not expand"
printf 'com.example.Kept -> a:\n' > "$T/tiny.map"
"$B/hprof-shrink" -f --json --stats --redact --jvm --mapping="$T/tiny.map" fixtures/android-synth.hprof.gz \
    "$T/jt.hprof" > "$T/jt.json" 2> "$T/jt.stats"
python3 - "$T/table.txt" "$T/jt.json" "$T/jt.stats" <<'PY' || die "the stats table and the reports differ"
import ast, json, sys
text = open(sys.argv[1]).read()
table = ast.literal_eval(text[text.index("[["):text.rindex("]") + 1])
shown = [(key, part, ast.literal_eval(label) if label != "NULL" else None)
         for key, part, label in table if part != "HIDDEN"]
report = json.load(open(sys.argv[2]))
fixed = {"input", "output", "status", "arrays", "keep_system_heaps", "gzip_level", "zstd_level", "bytes_in",
         "bytes_out", "bytes_written", "dumps", "jvm", "resolved_in_pass_1", "pass_seconds"}
keys = [k for k in report if k not in fixed]
assert keys == [key for key, _, _ in shown], (keys, shown)
parts = ["ROWS", "NAMES", "JVM", "MAPPING", "REDACT", "BITMAPS"]
labels = [label for p in parts for key, part, label in shown if part == p and label]
lines = open(sys.argv[3]).read().split("\n")
at = 0
for label in labels:  # each on a line of its own, in order
    at = next((i for i in range(at, len(lines)) if lines[i][2:30] == label.ljust(28)), None)
    assert at is not None, (label, lines)
    at += 1
print(len(table), "counters,", len(keys), "in --json,", len(labels), "lines of --stats")
PY

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

# Dropping the system heaps must not change what an app object retains:
# the stand-ins keep the paths from the roots through the zygote heap and
# the references behind the app's objects.  VisualVM computes the retained
# size of every object before and after (--arrays=zero keeps sizes,
# --keep-duplicates every array); the app's objects are those hprof-conv -z
# keeps.  The generator's --system-links dump has each case (a zygote
# chain to an app object a leak also holds, a zygote object behind an app
# one, android.os.Build's Strings in the zygote heap).
banner "hprof-shrink: every app object retains in VisualVM what it retained before"
"$B/hprof-synth" -f --system-links "$T/links.hprof" || die "hprof-synth --system-links"
for f in "$T/links.hprof" $(echo "$android" | tr ' ' '\n' | grep art-ahat); do
    n=rs-$(basename "$f")
    "$B/tests/hprof-roundtrip" "$f" "$T/$n.in" || die "round trip of $f" # ART's empty segments
    "$HPROF_CONV" "$T/$n.in" "$T/$n.in.conv" || die "hprof-conv on $f"
    "$HPROF_CONV" -z "$T/$n.in" "$T/$n.app.conv" || die "hprof-conv -z on $f"
    "$B/hprof-shrink" -q --arrays=zero --keep-duplicates "$f" "$T/$n.out" || die "shrink $f"
    "$HPROF_CONV" "$T/$n.out" "$T/$n.out.conv" || die "hprof-conv on shrunk $f"
    for x in in app out; do
        retained "$T/$n.$x.conv" > "$T/$n.$x.sizes" || die "VisualVM: no retained sizes for $n.$x"
    done
    python3 - "$T/$n.in.sizes" "$T/$n.out.sizes" "$T/$n.app.sizes" <<'PY' ||
import sys
load = lambda p: dict(line.split() for line in open(p))
before, after, app = (load(p) for p in sys.argv[1:])
differ = [i for i in app if before.get(i) != after.get(i)]
print("    %d app objects, %d retained sizes differ%s" % (len(app), len(differ),
      "".join(" %s: %s -> %s" % (i, before.get(i), after.get(i)) for i in differ[:5])))
sys.exit(1 if differ or not app else 0)
PY
        die "VisualVM's retained sizes of $f's app objects change in the shrink"
done
echo "    Build.MANUFACTURER: $(grep -c samsung "$T/rs-links.hprof.out") matching records kept"
grep -q "samsung/o1sxeea" "$T/rs-links.hprof.out" || die "Build.FINGERPRINT's text lost"
rm -rf "$T"/rs-* # VisualVM's caches (*.hwcache) are by file name

# Two dumps of one heap may hold their records in another order, so their
# bytes cannot be compared; what an analyst sees of them can.
# tests/compare-views.sh compares VisualVM's view (tests/java/HeapView.java:
# classes, roots, every object with its fields and references, String
# texts, arrays' types and lengths) and hprof-info's classes.
analyst_views() {
    banner "analyst's views: a plain conversion shows the input's heap, and the views tell dumps apart"
    "$B/hprof-synth" -f --hotspot "$T/av-hotspot.hprof"
    "$B/hprof-synth" -f --hotspot --dumps 2 "$T/av-hotspot-dumps2.hprof"
    "$B/hprof-synth" -f --dumps 2 "$T/av-dumps2.hprof"
    "$B/hprof-synth" -f --system-links "$T/av-links.hprof"
    "$B/hprof-synth" -f --secrets "$T/av-secrets.list" "$T/av-secrets.hprof"
    files="fixtures/android-synth.hprof.gz fixtures/hotspot-fixture.hprof.gz fixtures/hotspot-synth.hprof.gz"
    [ -d ../shared/fixtures ] && files="$files $(ls ../shared/fixtures/*.hprof | tr '\n' ' ')"
    for f in $files "$T"/av-*.hprof; do
        "$B/hprof-shrink" -q -f --arrays=zero --keep-system-heaps --keep-duplicates --jvm "$f" "$T/av-out" ||
            { die "plain conversion of $f"; continue; }
        compare_views "$f" "$T/av-out" > "$T/av.diff" 2>&1 ||
            die "a plain conversion of $f shows another heap: $(cat "$T/av.diff")"
    done
    # The view is sorted: the same records in another order (segments
    # reversed, the names after the heap) give the same view, other bytes.
    gzip -dc fixtures/hotspot-fixture.hprof.gz > "$T/av-in.hprof"
    "$B/tests/hprof-roundtrip" "$T/av-in.hprof" "$T/av-split.hprof" 4096 || die "round trip of the fixture"
    tests/reorder-dump.py "$T/av-split.hprof" "$T/av-reordered.hprof" > /dev/null || die "reorder-dump.py"
    cmp -s "$T/av-in.hprof" "$T/av-reordered.hprof" && die "reorder-dump.py changed no byte"
    "$B/hprof-verify" "$T/av-reordered.hprof" > /dev/null || die "the reordered dump does not verify"
    compare_views "$T/av-in.hprof" "$T/av-reordered.hprof" > "$T/av.diff" 2>&1 ||
        die "the order of the records changes the view: $(cat "$T/av.diff")"
    # It sees what a shrink takes away: the primitive arrays of --arrays=remove.
    "$B/hprof-shrink" -q -f --arrays=remove "$T/av-in.hprof" "$T/av-out" || die "--arrays=remove"
    expect 1 compare_views "$T/av-in.hprof" "$T/av-out"
    grep -q '^- obj @[0-9a-f]* [a-z]*\[\] ' "$T/out" || die "--arrays=remove: no array named: $(cat "$T/out")"
    [ "$(grep -c '^[-+] ' "$T/out")" -le 20 ] || die "more than 20 differing lines printed"
    # ... and one reference changed, the counts all the same: element K+1
    # of an object array made to point where element K does
    heapview "$T/av-in.hprof" > "$T/av-in.view" || die "HeapView on the fixture"
    python3 - "$T/av-in.view" "$T/av-in.hprof" "$T/av-patched.hprof" > "$T/av-patched" <<'PY' ||
import re, sys
view, src, dst = sys.argv[1:]
refs = {}
for line in open(view):
    m = re.match(r"\.  @(\w+) \[(\d+)\] -> @(\w+)$", line)
    if m:
        refs[(m[1], int(m[2]))] = int(m[3], 16)
data = open(src, "rb").read()
for (array, k), x in sorted(refs.items()):
    y = refs.get((array, k + 1))
    pair = x.to_bytes(8, "big") + (y or 0).to_bytes(8, "big")
    if y and y != x and data.count(pair) == 1:
        open(dst, "wb").write(data.replace(pair, x.to_bytes(8, "big") * 2))
        print("@%s [%d] -> @%x" % (array, k + 1, y))
        sys.exit(0)
sys.exit("no object array with two distinct neighbours found once in the file")
PY
        die "could not patch a reference: $(cat "$T/av-patched")"
    "$B/hprof-verify" "$T/av-patched.hprof" > /dev/null || die "the patched dump does not verify"
    expect 1 compare_views "$T/av-in.hprof" "$T/av-patched.hprof"
    grep -qFx -- "- .  $(cat "$T/av-patched")" "$T/out" || die "the changed reference is not named: $(cat "$T/out")"
    [ "$(grep -c '^[-+] ' "$T/out")" = 2 ] || die "one changed reference, other lines: $(cat "$T/out")"
    # ... and one String's text, its length the same (the byte[] of 18
    # Latin-1 bytes, not the STRING record of the same literal)
    python3 -c "import sys; d = open(sys.argv[1], 'rb').read(); t = b'\x12\x08plain latin-1 '
assert d.count(t + b'text') == 1
open(sys.argv[2], 'wb').write(d.replace(t + b'text', t + b'TEXT'))" \
        "$T/av-in.hprof" "$T/av-patched.hprof" || die "could not patch a String"
    expect 1 compare_views "$T/av-in.hprof" "$T/av-patched.hprof"
    grep -q '^+ .* text "plain latin-1 TEXT"$' "$T/out" || die "the changed text is not named: $(cat "$T/out")"
    # The shrink on one and two threads: the same view, array bytes included
    for f in fixtures/android-synth.hprof.gz "$T/av-in.hprof" "$T/av-links.hprof"; do
        for j in 1 2; do
            "$B/hprof-shrink" -q -f -j$j "$f" "$T/av-j$j" || die "shrink -j$j of $f"
        done
        compare_views --contents "$T/av-j1" "$T/av-j2" > "$T/av.diff" 2>&1 ||
            die "-j1 and -j2 show other heaps for $f: $(cat "$T/av.diff")"
    done
    rm -f "$T"/av-*
}
analyst_views

# The one-pass shrink (hprof-shrink --one-pass: the input read once, from a
# pipe, nothing written to TMPDIR) promises that wherever its report says
# nothing waited past the window (window_late 0), every analyzer sees in its
# output what it sees in the multi-pass one. Record order may differ, so the
# views are compared, not the bytes.
one_pass_views() {
    banner "one pass: from a pipe, nothing in TMPDIR, the multi-pass output's view in every mode"
    "$B/hprof-synth" -f "$T/op-android.hprof"
    "$B/hprof-synth" -f --hotspot "$T/op-hotspot.hprof"
    "$B/hprof-synth" -f --dumps 2 "$T/op-dumps2.hprof"
    "$B/hprof-synth" -f --system-links "$T/op-links.hprof"
    "$B/hprof-synth" -f --secrets "$T/op-secrets.list" "$T/op-secrets.hprof"
    # every String value array and Bitmap buffer before the app heap's other
    # records, the last over 100,000 records (56,000 instances, 61,000
    # arrays) before its referrer
    "$B/hprof-synth" -f --scale 700 --big-bitmap 4096 "$T/op-far.in"
    tests/reorder-dump.py --arrays-first "$T/op-far.in" "$T/op-far.hprof" || die "reorder-dump.py --arrays-first"
    rm -f "$T/op-far.in"
    # Strings and Bitmaps 3000 records after their arrays: within the window
    "$B/hprof-synth" -f --scale 200 --late-referrers 3000 --pixels 3000000 "$T/op-late.hprof"
    files="fixtures/*.hprof.gz"
    [ -d ../shared/fixtures ] && files="$files ../shared/fixtures/*.hprof"
    # Android dumps as hprof-conv leaves them (what Android Studio exports):
    # JAVA PROFILE 1.0.2 in ART's order, class dumps among the objects
    "$HPROF_CONV" "$T/op-android.hprof" "$T/op-android-conv.hprof" || die "hprof-conv of op-android"
    if [ -f ../shared/fixtures/art-ahat-test-dump.hprof ]; then
        "$HPROF_CONV" ../shared/fixtures/art-ahat-test-dump.hprof "$T/op-art-conv.hprof" ||
            die "hprof-conv of the ART dump"
    fi
    mkdir -p "$T/op-out"
    for f in $files "$T"/op-*.hprof; do
        n=$(basename "$f")
        for mode in "" --arrays=zero --redact --keep-system-heaps --jvm; do
            # the only file created is the output's temporary, made in its
            # directory (by name, or relative to the directory's descriptor)
            # shellcheck disable=SC2086 # no mode is no word
            gzip -dcf "$f" | TMPDIR=/nonexistent ASAN_OPTIONS=$traced_asan strace -f -qq -e trace=open,openat,creat,mkdir \
                -o "$T/op.strace" "$B/hprof-shrink" -q -f --json $mode - "$T/op-out/one.hprof" \
                > "$T/op.json" 2> "$T/op.err" || { die "--one-pass $mode of $n: $(cat "$T/op.err")"; continue; }
            grep -q '"window_late":0,' "$T/op.json" ||
                die "--one-pass $mode of $n: something came too late: $(cat "$T/op.json")"
            grep -E 'O_CREAT|creat\(|mkdir\(' "$T/op.strace" | grep -v "\"$T/op-out/" |
                grep -v 'openat([0-9]*, "hprof-shrink\.[^"/]*\.tmp"' > "$T/op.created" &&
                die "--one-pass $mode of $n created files elsewhere: $(head -3 "$T/op.created")"
            [ ! -e /nonexistent ] || die "--one-pass $mode of $n made /nonexistent"
            # shellcheck disable=SC2086
            "$B/hprof-shrink" -q -f --multi-pass $mode "$f" "$T/op-out/multi.hprof" ||
                { die "--multi-pass $mode of $n"; continue; }
            compare_views --contents "$T/op-out/one.hprof" "$T/op-out/multi.hprof" > "$T/op.diff" 2>&1 ||
                die "--one-pass $mode of $n shows another heap than --multi-pass: $(cat "$T/op.diff")"
        done
    done
    rm -rf "$T"/op-* "$T/op.strace" "$T/op.err" "$T/op.created" "$T/op.diff" "$T/op.json"
}
one_pass_views

banner "one pass: the window's rule, counted, where referrers come after the window"
"$B/hprof-synth" -f --scale 200 --late-referrers 3000 --pixels 3000000 "$T/late.hprof"
"$B/hprof-shrink" -q -f --multi-pass "$T/late.hprof" "$T/late-multi.hprof" || die "multi-pass of late"
cat "$T/late.hprof" | "$B/hprof-shrink" -q -f --json --window=1M - "$T/late-1m.hprof" \
    > "$T/late.json" 2> "$T/late.qerr" || die "--window=1M"
[ ! -s "$T/late.qerr" ] || die "--window=1M -q wrote to stderr: $(cat "$T/late.qerr")"
# without -q, a warning says that the output is not the multi-pass one
cat "$T/late.hprof" | "$B/hprof-shrink" -f --window=1M - "$T/late-w.hprof" > /dev/null \
    2> "$T/late.err" || die "--window=1M without -q"
grep -q "^hprof-shrink: warning: standard input: [0-9]* records decided otherwise than by the multi-pass shrink (window_late)" \
    "$T/late.err" || die "--window=1M: no warning of what came late: $(cat "$T/late.err")"
"$B/hprof-verify" "$T/late-1m.hprof" > /dev/null || die "--window=1M output does not verify"
python3 - "$T/late.json" <<'PY' || die "--window=1M report: $(cat "$T/late.json")"
import json, sys
j = json.load(open(sys.argv[1]))
# 2,000 Strings and Bitmaps came 3000 records after arrays the 1 MiB window
# could not keep: each is counted, and what left the window undecided too
assert j["window_late"] > 1000, j["window_late"]
assert j["window_by_rule"]["count"] > 1000, j["window_by_rule"]
assert j["window_peak_bytes"] <= 2 * 1048576 + 65536, j["window_peak_bytes"]
PY
# what the report says is true: those Strings lost their texts
compare_views "$T/late-1m.hprof" "$T/late-multi.hprof" > "$T/late.diff" 2>&1 &&
    die "--window=1M: the report counts late referrers, but the views are the same"
grep -q '^[-+] .*text "' "$T/late.diff" || die "--window=1M differs elsewhere: $(head -5 "$T/late.diff")"
rm -f "$T"/late*

banner "one pass: pixel buffers past the window wait in the output file"
# a 4 MiB buffer (and the app's others) 3000 records before its Bitmap: past
# a window of 1 MiB, set aside in OUT's file (none elsewhere) and sent once
# claimed, so that nothing comes late; into standard output, or with
# --spill=0, the rule decides and the report says so
"$B/hprof-synth" -f --scale 200 --late-bitmaps 3000 --big-bitmap 4194304 "$T/far.hprof"
"$B/hprof-shrink" -q -f --multi-pass "$T/far.hprof" "$T/far-multi.hprof" || die "multi-pass of far"
cat "$T/far.hprof" | TMPDIR=/nonexistent ASAN_OPTIONS=$traced_asan strace -f -qq \
    -e trace=open,openat,creat,mkdir -o "$T/far.strace" \
    "$B/hprof-shrink" -q -f --json --window=1M - "$T/far-1m.hprof" > "$T/far.json" ||
    die "--window=1M of far"
grep -E 'O_CREAT|creat\(|mkdir\(' "$T/far.strace" | grep -v "\"$T/" |
    grep -v 'openat([0-9]*, "hprof-shrink\.[^"/]*\.tmp"' > "$T/far.created" &&
    die "--window=1M of far created files elsewhere: $(head -3 "$T/far.created")"
python3 - "$T/far.json" "$T/far-1m.hprof" <<'PY' || die "far: $(cat "$T/far.json")"
import json, os, sys
j = json.load(open(sys.argv[1]))
assert j["window_late"] == 0, j["window_late"]
assert j["window_spilled"]["count"] >= 1 and j["window_spilled"]["bytes"] >= 4194304, j["window_spilled"]
assert j["window_peak_bytes"] <= 1048576, j["window_peak_bytes"]
assert os.path.getsize(sys.argv[2]) == j["bytes_out"], (os.path.getsize(sys.argv[2]), j["bytes_out"])
PY
compare_views --contents "$T/far-1m.hprof" "$T/far-multi.hprof" > "$T/far.diff" 2>&1 ||
    die "--window=1M of far shows another heap than --multi-pass: $(cat "$T/far.diff")"
for how in stdout spill0; do
    if [ $how = stdout ]; then
        cat "$T/far.hprof" | "$B/hprof-shrink" -q -f --json --window=1M - - > "$T/far-$how.hprof" \
            2> "$T/far.err" || die "--window=1M of far to standard output: $(cat "$T/far.err")"
        cat "$T/far.hprof" | "$B/hprof-shrink" -f --stats --window=1M - - 2> "$T/far.json" > /dev/null ||
            die "--stats of far to standard output"
        grep -q "referrers too late *[1-9]" "$T/far.json" || die "to standard output, far: $(cat "$T/far.json")"
    else
        cat "$T/far.hprof" | "$B/hprof-shrink" -q -f --json --window=1M --spill=0 - "$T/far-$how.hprof" \
            > "$T/far.json" || die "--spill=0 of far"
        grep -q '"window_late":[1-9]' "$T/far.json" || die "--spill=0 of far: $(cat "$T/far.json")"
        grep -q '"window_spilled":{"count":0,' "$T/far.json" || die "--spill=0 of far: $(cat "$T/far.json")"
    fi
    compare_views --contents "$T/far-$how.hprof" "$T/far-multi.hprof" > /dev/null 2>&1 &&
        die "far ($how): the report counts late referrers, but the views are the same"
done
# a small disk: with under 256 MiB free nothing is set aside, and a disk
# that refuses the scratch area's first write leaves the rule to decide
# (check_one_pass: one that refuses a later write lets the arrays waiting
# go); the run succeeds and says what came late
for fault in free:100000000 scratch-full:0; do
    cat "$T/far.hprof" | HPROF_FAULT=$fault LD_PRELOAD="$(pwd)/$B/tests/fault_write.so" \
        ASAN_OPTIONS="${ASAN_OPTIONS:-}:verify_asan_link_order=0" \
        "$B/hprof-shrink" -q -f --json --window=1M - "$T/far-small.hprof" > "$T/far.json" ||
        die "far on a small disk ($fault): $(cat "$T/far.json")"
    grep -q '"window_late":[1-9]' "$T/far.json" || die "far on a small disk ($fault): $(cat "$T/far.json")"
    grep -q '"window_spilled":{"count":0,' "$T/far.json" || die "far on a small disk ($fault): $(cat "$T/far.json")"
    "$B/hprof-verify" "$T/far-small.hprof" > /dev/null || die "far on a small disk ($fault): does not verify"
done
"$B/hprof-shrink" -q -f --spill=1M --multi-pass "$T/far.hprof" "$T/far-x.hprof" 2> "$T/far.err" &&
    die "--spill with --multi-pass was accepted"
grep -q "^hprof-shrink: --spill is the one-pass shrink's" "$T/far.err" || die "--spill --multi-pass: $(cat "$T/far.err")"
rm -f "$T"/far*

banner "one pass: a JVM writes its heap dump into a FIFO that hprof-shrink reads"
# JDK 17 writes into a FIFO with jcmd's -overwrite only (without it: "File
# exists", and jcmd exits 0); the JVM waits for the reader, so it must keep up
for opt in "" -gz=1; do
    FIFO_READER=fifo_shrink jvm_dump_into_fifo "$T/jf.hprof" "$opt" \
        -Xmx24m -XX:+UseSerialGC -Xshare:off -cp "$T/java" FixtureApp
    "$B/hprof-verify" "$T/jf.hprof" > /dev/null || die "jcmd $opt into a FIFO: the output does not verify"
    grep -q '"window_late":0,' "$T/jf.hprof.json" || die "jcmd $opt into a FIFO: $(cat "$T/jf.hprof.json")"
    "$B/hprof-shrink" -q -f --multi-pass "$T/jf.hprof.raw" "$T/jf-multi.hprof" || die "multi-pass of the FIFO's dump"
    compare_views --contents "$T/jf.hprof" "$T/jf-multi.hprof" > "$T/jf.diff" 2>&1 ||
        die "jcmd $opt into a FIFO: another heap than --multi-pass: $(cat "$T/jf.diff")"
    rm -f "$T"/jf*
done

banner "one pass: usage"
expect 2 "$B/hprof-shrink" --one-pass --salvage fixtures/hotspot-synth.hprof.gz "$T/u.hprof"
grep -q -- '--one-pass and --salvage' "$T/err" || die "--one-pass --salvage: $(cat "$T/err")"
expect 2 "$B/hprof-shrink" --multi-pass --window=8M fixtures/hotspot-synth.hprof.gz "$T/u.hprof"
expect 2 "$B/hprof-shrink" --window=1000 fixtures/hotspot-synth.hprof.gz "$T/u.hprof"
expect 2 "$B/hprof-shrink" --window=2X fixtures/hotspot-synth.hprof.gz "$T/u.hprof"
expect 0 "$B/hprof-shrink" -f --one-pass --window=2M fixtures/hotspot-synth.hprof.gz "$T/u.hprof"
# a pipe cut short: the offset and record, exit 1, no output left
gzip -dc fixtures/android-synth.hprof.gz | head -c 100000 > "$T/cut.hprof"
set +e; cat "$T/cut.hprof" | "$B/hprof-shrink" -q - "$T/u-cut.hprof" 2> "$T/err"; got=$?; set -e
[ "$got" = 1 ] || die "a cut pipe exited $got: $(cat "$T/err")"
grep -q 'offset 0x[0-9a-f]*: HEAP_DUMP_SEGMENT' "$T/err" || die "a cut pipe: $(cat "$T/err")"
[ ! -e "$T/u-cut.hprof" ] || die "a cut pipe left an output"
rm -f "$T"/u*.hprof "$T/cut.hprof"

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
    env --default-signal=INT "$B/hprof-shrink" -q "$T/fifo" "$T/sig.hprof" 2> /dev/null &
    pid=$!
    exec 7> "$T/fifo"               # the shrinker now waits for input
    gzip -dc fixtures/android-synth.hprof.gz | head -c 100000 >&7
    i=0
    until ls "$T" | grep -q '^hprof-shrink\..*\.tmp$'; do
        i=$((i + 1)); [ $i -lt 100 ] || break; sleep 0.05
    done
    ls "$T" | grep -q '^hprof-shrink\..*\.tmp$' || die "no temporary output while running"
    signal_and_wait $sig $pid
    exec 7>&-
    [ "$got" -gt 128 ] || die "SIG$sig: exit status $got"
    ls "$T" | grep -q '^sig.hprof\|^hprof-shrink\..*\.tmp$' && die "SIG$sig left $(ls "$T" | grep '^sig.hprof\|\.tmp$')"
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
        "$B/hprof-shrink" -q -z --multi-pass - "$T/f-$fault.hprof.gz" ||
        die "spool + gzip with $fault writes failed"
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
        ls "$T" | grep -q '^hprof-shrink\..*\.tmp$' && die "$fault $z left a temporary file"
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
# (a .gz input of 1 MiB members adds the members being inflated: a few per
# thread, whatever the size of the file)
"$B/hprof-synth" --scale 1300 --big-bitmap 16777216 -f "$T/big.hprof"
"$B/hprof-shrink" -q -z1 --arrays=zero --keep-system-heaps --keep-duplicates --keep-names \
    "$T/big.hprof" "$T/big.hprof.gz"
workers=-j2
[ "${SANITIZE:-}" = 1 ] && workers=-j1
for tool in "hprof-shrink -j1 -f $T/big.hprof $T/big-out.hprof" \
            "hprof-shrink $workers -f $T/big.hprof $T/big-out.hprof" "hprof-verify $T/big.hprof" \
            "hprof-info $T/big.hprof" "hprof-shrink $workers -f $T/big.hprof.gz $T/big-out.hprof"; do
    for map in 1 0; do
        HPROF_MMAP=$map /usr/bin/time -f %M -o "$T/rss" "$B"/$tool > /dev/null ||
            die "$tool (HPROF_MMAP=$map) failed"
        [ "$(tail -n 1 "$T/rss")" -lt 65536 ] ||
            die "$tool (HPROF_MMAP=$map): peak RSS $(tail -n 1 "$T/rss") KB"
    done
done
rm -f "$T/big.hprof" "$T/big.hprof.gz" "$T/big-out.hprof"

banner "durable outputs: --sync writes back as it goes, fsyncs, renames, fsyncs the directory; one file by default does not; batch does"
# a 64th of this 2.7 MB input is under 1 MiB, so the step is 1 MiB; the
# output keeps a 2.5 MB bitmap (a step of 8 MiB would never be reached).
# LeakSanitizer cannot run under ptrace: no leak check in these runs.
"$B/hprof-synth" -f "$T/wb.hprof"
traced_asan="${ASAN_OPTIONS:-}:detect_leaks=0"
syncs() { # the calls that make a file durable, and the rename, in order: $got
    ASAN_OPTIONS=$traced_asan strace -f -qq -e trace=fsync,fdatasync,sync_file_range,rename,renameat,renameat2 \
        -o "$T/wb.strace" "$B/hprof-shrink" -q -j1 "$@" || die "hprof-shrink $* under strace failed"
    got=$(sed -n 's/^[0-9]* *\([a-z_0-9]*\)(.*/\1/p' "$T/wb.strace" | sed 's/^renameat2*$/rename/' |
          uniq | tr '\n' ' ')
}
syncs --sync -f "$T/wb.hprof" "$T/wb-out.hprof"
[ "$got" = "sync_file_range fsync rename fsync " ] || die "--sync: calls in order: $got"
[ "$(grep -c 'sync_file_range(' "$T/wb.strace")" -ge 1 ] || die "--sync: no writeback request"
# the second fsync is of the output's directory, opened before the work
ASAN_OPTIONS=$traced_asan strace -f -qq -e trace=openat,fsync,rename -o "$T/wb.strace" \
    "$B/hprof-shrink" -q -j1 --sync -f "$T/wb.hprof" "$T/wb-out.hprof" || die "--sync under strace"
# (what each descriptor was last opened as, when the last call fsyncs it)
synced=$(awk '/openat\(/ { split($0, q, "\""); fd = $NF; name[fd] = q[2] }
              { last = $0 }
              END { if (match(last, /fsync\([0-9]+\)/)) print name[substr(last, RSTART + 6, RLENGTH - 7)] }' \
         "$T/wb.strace")
[ "$synced" = "$T" ] ||
    die "--sync: the last call fsyncs '$synced', not the output's directory: $(tail -n 3 "$T/wb.strace" | tr '\n' ' ')"
dir_at=$(grep -n "openat(AT_FDCWD, \"$T\"," "$T/wb.strace" | tail -n 1 | cut -d: -f1)
input_at=$(grep -n "openat(AT_FDCWD, \"$T/wb.hprof\"," "$T/wb.strace" | head -n 1 | cut -d: -f1)
[ "${dir_at:-0}" -gt 0 ] && [ "${input_at:-0}" -gt "${dir_at:-0}" ] ||
    die "--sync: the directory is opened after the input (lines $dir_at, $input_at), not before the work"
# a failed fsync of the file leaves nothing; of the directory, the output
# (renamed, its bytes on disk) and exit 3
for when in 1 2; do
    rm -f "$T/wb-out.hprof"
    set +e
    ASAN_OPTIONS=$traced_asan strace -f -qq -o /dev/null -e trace=fsync -e inject=fsync:error=EIO:when=$when \
        "$B/hprof-shrink" -q -j1 --sync "$T/wb.hprof" "$T/wb-out.hprof" 2> "$T/err"
    got=$?
    set -e
    [ $got = 3 ] || die "fsync number $when failing: exit $got"
    ls "$T" | grep -q '^hprof-shrink.*\.tmp$' && die "fsync number $when failing: a temporary file is left"
    grep -qi "input/output error" "$T/err" || die "fsync number $when failing: $(cat "$T/err")"
    if [ $when = 1 ]; then
        [ -e "$T/wb-out.hprof" ] && die "the file's fsync failing: an output is left"
    else
        grep -q "written, but its directory could not be synced" "$T/err" ||
            die "the directory's fsync failing: $(cat "$T/err")"
        "$B/hprof-verify" -q "$T/wb-out.hprof" || die "the directory's fsync failing: output invalid"
    fi
done
# a directory we may write in but not read (0300) cannot be synced: said
# before any work, nothing written; --no-sync writes there
ud=$(mktemp -d)
chmod 755 "$ud"
cp "$B/hprof-shrink" "$T/wb.hprof" "$ud/"
chmod 644 "$ud/wb.hprof"
mkdir "$ud/wo"
chmod 0300 "$ud/wo"
as_user=
if [ "$(id -u)" = 0 ]; then
    chown nobody "$ud/wo"
    as_user="setpriv --reuid=nobody --regid=nogroup --clear-groups"
fi
set +e
ASAN_OPTIONS=$traced_asan $as_user "$ud/hprof-shrink" -q --sync "$ud/wb.hprof" "$ud/wo/out.hprof" 2> "$T/err"
got=$?
set -e
[ $got = 3 ] || die "--sync into an unreadable directory: exit $got"
grep -q "cannot open its directory to sync it: Permission denied (use --no-sync)" "$T/err" ||
    die "--sync into an unreadable directory: $(cat "$T/err")"
[ -z "$(ls -A "$ud/wo")" ] || die "--sync into an unreadable directory left $(ls -A "$ud/wo")"
ASAN_OPTIONS=$traced_asan $as_user "$ud/hprof-shrink" -q --no-sync "$ud/wb.hprof" "$ud/wo/out.hprof" ||
    die "--no-sync into an unreadable directory failed"
[ -s "$ud/wo/out.hprof" ] || die "--no-sync into an unreadable directory: no output"
rm -rf "$ud"
syncs -f "$T/wb.hprof" "$T/wb-out.hprof"
[ "$got" = "rename " ] || die "one file, default: calls: $got"
syncs --sync --no-sync -f "$T/wb.hprof" "$T/wb-out.hprof"
[ "$got" = "rename " ] || die "--sync --no-sync: calls: $got"
# standard output is not a file we fsync, even when asked
syncs --sync "$T/wb.hprof" - > "$T/wb-out.hprof"
[ -z "$got" ] || die "--sync to standard output: calls: $got"
"$B/hprof-verify" -q "$T/wb-out.hprof" || die "--sync to standard output: output invalid"
mkdir -p "$T/wb-dir"
syncs -o "$T/wb-dir" "$T/wb.hprof" > /dev/null
[ "$got" = "sync_file_range fsync rename fsync " ] || die "batch, default: calls in order: $got"
syncs --no-sync -f -o "$T/wb-dir" "$T/wb.hprof" > /dev/null
[ "$got" = "rename " ] || die "batch --no-sync: calls: $got"
cmp -s "$T/wb-dir/wb.hprof" "$T/wb-out.hprof" || die "batch --no-sync: output differs"
# a directory batch mode makes for outputs is synced into its parent (a
# crash could lose it, and the outputs synced into it, otherwise): the
# fsync after each mkdir is of a descriptor opened on the directory above
mkdir -p "$T/wb-tree/a/b"
cp "$T/wb.hprof" "$T/wb-tree/a/b/"
ASAN_OPTIONS=$traced_asan strace -f -qq -e trace=mkdir,mkdirat,openat,fsync -o "$T/wb.strace" \
    "$B/hprof-shrink" -q -r -j1 -o "$T/wb-made" "$T/wb-tree" > /dev/null || die "batch -r under strace"
# (per process: what each descriptor was last opened as; the parent each
# mkdir that made a directory wants synced next)
made=$(awk '/mkdir(at)?\(/ && / = 0$/ { split($0, q, "\""); p = q[2]; sub(/\/[^\/]*$/, "", p); want[$1] = p; next }
            /openat\(/ { split($0, q, "\""); name[$1, $NF] = q[2] }
            want[$1] != "" && /fsync\(/ { match($0, /fsync\([0-9]+\)/); fd = substr($0, RSTART + 6, RLENGTH - 7)
                                         printf "%s ", (name[$1, fd] == want[$1] ? "synced" : "other:" name[$1, fd]); want[$1] = "" }
            END { for (pid in want) if (want[pid] != "") printf "unsynced:%s", want[pid] }' "$T/wb.strace")
[ "$made" = "synced synced synced " ] || die "batch -r: the directories made (wb-made, a, b) are not each synced into their parent: $made"
cmp -s "$T/wb-made/a/b/wb.hprof" "$T/wb-out.hprof" || die "batch -r: output differs"
rm -rf "$T/wb-made"
syncs --no-sync -r -o "$T/wb-made" "$T/wb-tree" > /dev/null
[ "$got" = "rename " ] || die "batch -r --no-sync: calls: $got"
rm -rf "$T/wb-tree" "$T/wb-made"
# a directory made in one we may write in but not read (a drop box, 0333)
# cannot be synced into it: the batch goes on, as before such syncs
ud=$(mktemp -d)
chmod 755 "$ud"
cp "$B/hprof-shrink" "$T/wb.hprof" "$ud/"
chmod 644 "$ud/wb.hprof"
mkdir "$ud/drop"
chmod 0333 "$ud/drop"
as_user=
if [ "$(id -u)" = 0 ]; then
    chown nobody "$ud/drop"
    as_user="setpriv --reuid=nobody --regid=nogroup --clear-groups"
fi
ASAN_OPTIONS=$traced_asan $as_user "$ud/hprof-shrink" -q -o "$ud/drop/out" "$ud/wb.hprof" > /dev/null ||
    die "batch into a new directory of a write-only one failed"
chmod 755 "$ud/drop"
cmp -s "$ud/drop/out/wb.hprof" "$T/wb-out.hprof" || die "batch into a write-only directory: output differs"
rm -rf "$ud"
rm -rf "$T/wb.hprof" "$T/wb-out.hprof" "$T/wb-dir"
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
    grep -Eq "cut.hprof: (read error: the file was truncated or could not be read while mapped|the input changed size while reading|the file shrank during the run: it ends at offset 0x[0-9a-f]* now)" \
        "$T/err" || die "$tool cut: $(cat "$T/err")"
    [ "$(wc -l < "$T/err")" = 1 ] || die "$tool cut: not one line: $(cat "$T/err")"
    [ ! -e "$T/cut-out.hprof" ] || die "$tool cut: left an output"
    ls "$T" | grep -q '^hprof-shrink\..*\.tmp$' && die "$tool cut: left a temporary file"
done

# the input cut to half while the output is written (the first write):
# whatever touches its bytes first (a write of mapped bytes fails with
# EFAULT, a read gets SIGBUS), the message names the input, every time
"$B/hprof-synth" --scale 50 --big-bitmap 16777216 -f "$T/tw.hprof" > /dev/null
for run in $(seq 20); do
    cp "$T/tw.hprof" "$T/tw-cut.hprof"
    set -- "" -j1 -j2 --arrays=zero "-z1 --arrays=zero"
    shift $((run % 5))
    opts=$1
    set +e
    HPROF_FAULT=truncate-at-write LD_PRELOAD="$SHIM" "$B/hprof-shrink" -q $opts "$T/tw-cut.hprof" \
        "$T/tw-out.hprof" > /dev/null 2> "$T/err"
    got=$?
    set -e
    [ "$got" = 3 ] || die "input cut while writing ($opts), run $run: exit $got"
    grep -Eqx "hprof-shrink: $T/tw-cut.hprof: (the file shrank during the run: it ends at offset 0x[0-9a-f]* now, not 0x[0-9a-f]* \(cut by another process\?\)|read error: the file was truncated or could not be read while mapped \(SIGBUS\))" \
        "$T/err" || die "input cut while writing ($opts), run $run: $(cat "$T/err")"
    [ ! -e "$T/tw-out.hprof" ] || die "input cut while writing ($opts): left an output"
done
rm -f "$T/tw.hprof" "$T/tw-cut.hprof"

# the calling thread's share of the bitmap hashing fails while another
# thread still hashes: every thread is waited for (a run once went on
# without the other and crashed in its freed jobs), one line, exit 3
"$B/hprof-synth" --scale 20 --pixels 20000000 -f "$T/px.hprof" > /dev/null
for run in 1 2 3 4 5; do
    set +e
    HPROF_FAULT=pread-main:8192 LD_PRELOAD="$SHIM" "$B/hprof-shrink" -j2 "$T/px.hprof" \
        "$T/px-out.hprof" > /dev/null 2> "$T/err"
    got=$?
    set -e
    [ "$got" = 3 ] || die "hashing read error, run $run: exit $got: $(cat "$T/err")"
    grep -q 'px.hprof: offset 0x[0-9a-f]*: read: Input/output error$' "$T/err" ||
        die "hashing read error: $(cat "$T/err")"
    [ "$(wc -l < "$T/err")" = 1 ] || die "hashing read error: not one line: $(cat "$T/err")"
    [ ! -e "$T/px-out.hprof" ] || die "hashing read error: left an output"
done
rm -f "$T/px.hprof"

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
    return int(re.search(r"(\d+) " + label[:-1] + r"s?\b", verify).group(1)) # "1 root"
sub = info["sub_records"]
def n(tag):
    return sub.get(tag, {"count": 0})["count"]
assert n("INSTANCE_DUMP") == v("instances") == shrink["instances_in"]["count"]
assert n("CLASS_DUMP") == v("class dumps")
assert n("OBJECT_ARRAY_DUMP") == v("object arrays") == shrink["object_arrays_in"]["count"]
assert n("PRIMITIVE_ARRAY_DUMP") + n("PRIMITIVE_ARRAY_NODATA") == v("primitive arrays")
assert sum(info["primitive_arrays"][t]["bytes"] for t in info["primitive_arrays"]) == shrink["primitive_arrays_in"]["bytes"]
assert sum(info["roots"].values()) == v("roots")
# the shrink writes the names in use and drops the rest
assert info["records"]["STRING"]["count"] == v("strings") == shrink["strings"]["count"] + shrink["names_dropped"]["count"]
assert kept["names_dropped"]["count"] == shrink["names_dropped"]["count"]
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
[ "$(wc -l < "$T/batch.out")" = 4 ] || die "batch summary lines: $(cat "$T/batch.out")"
grep -qx "3 shrunk, 1 failed, 0 skipped" "$T/batch.out" || die "batch tally: $(cat "$T/batch.out")"
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
[ "$(grep -c 'skipped, up to date' "$T/batch.out")" = 3 ] || die "up-to-date outputs not skipped: $(cat "$T/batch.out")"
set +e
"$B/hprof-shrink" -f --json -z -r -o "$T/out1" "$T/fleet" > "$T/batch.json" 2> /dev/null
set -e
python3 -c "
import json, sys
rows = [json.loads(l) for l in open(sys.argv[1])]
done = [r for r in rows if r.get('status') == 'shrunk']
assert len(done) == 3 and all(r['bytes_written'] > 0 for r in done), rows
assert rows[-1] == {'shrunk': 3, 'failed': 1, 'skipped': 0, 'exit': 1}, rows
" "$T/batch.json" || die "batch --json: $(cat "$T/batch.json")"
# SIGINT: the finished output stays, the unfinished one leaves nothing
rm -rf "$T/out3" "$T/fifo.hprof"; mkdir -p "$T/out3"
mkfifo "$T/fifo.hprof"
env --default-signal=INT "$B/hprof-shrink" -j1 -o "$T/out3" fixtures/hotspot-synth.hprof.gz "$T/fifo.hprof" > /dev/null 2>&1 &
pid=$!
exec 7> "$T/fifo.hprof"
i=0
until ls "$T/out3" | grep -q '^hprof-shrink\..*\.tmp$'; do
    i=$((i + 1)); [ $i -lt 100 ] || break; sleep 0.05
done
signal_and_wait INT $pid
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
        SANITIZE="${SANITIZE:-}" DEFLATE="${DEFLATE:-libdeflate}" > "$T/install.log" 2>&1 ||
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
case ${DEFLATE:-libdeflate} in
libdeflate) private="-ldeflate -lzstd -lcrypto -lz -pthread" ;;
*) private="-lzstd -lcrypto -lz -pthread" ;;
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
# beside it, hence -l:libhprof.a; -static is not needed to prove it.
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
distinct = {(b["md5"], b["buffer_bytes"]) for b in info["bitmaps"]["list"] if b["buffer"] is not None}
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
assert index[0].split("\t") == ["file", "bitmaps", "width", "height", "bytes", "note", "buffers"], index[0]
for l in index[1:]:             # each id once per line
    for col in (1, 6):
        ids = l.split("\t")[col].split(",")
        assert len(ids) == len(set(ids)), l
shared = [l for l in index[1:] if l.split("\t")[6].count(",") >= 1]
assert len(shared) >= 3, index   # A (three bitmaps), C/D, the two equal DumpData buffers
PY
cmp -s "$T/bm/index.tsv" "$T/bm2/index.tsv" || true
[ "$(ls "$T/bm" | sort)" = "$(ls "$T/bm2" | sort)" ] || die "hprof-bitmaps differs on the shrunk dump"
for f in "$T"/bm/*.png; do cmp -s "$f" "$T/bm2/$(basename "$f")" || die "pixels differ after shrinking: $f"; done

# a file of several heap dumps: one is chosen, or nothing is written
"$B/hprof-synth" -f --android --dumps 2 "$T/bm-multi.hprof" > /dev/null
expect 2 "$B/hprof-bitmaps" "$T/bm-multi.hprof" "$T/bm-multi"
grep -q 'several heap dumps.*--dump=N' "$T/err" && [ ! -e "$T/bm-multi" ] ||
    die "hprof-bitmaps on two dumps: $(cat "$T/err")"
expect 2 "$B/hprof-bitmaps" --dump=3 "$T/bm-multi.hprof" "$T/bm-multi"
[ ! -e "$T/bm-multi" ] || die "hprof-bitmaps --dump=3 of two made OUTDIR"
expect 0 "$B/hprof-bitmaps" --dump=2 "$T/bm-multi.hprof" "$T/bm-multi"
"$B/hprof-shrink" -q -f --dump=2 --keep-system-heaps "$T/bm-multi.hprof" "$T/bm-multi-2.hprof"
expect 0 "$B/hprof-bitmaps" "$T/bm-multi-2.hprof" "$T/bm-multi-2"
[ "$(ls "$T/bm-multi" | sort)" = "$(ls "$T/bm-multi-2" | sort)" ] ||
    die "hprof-bitmaps --dump=2: not the images of dump 2 alone"

banner "hprof-bitmaps and hprof-info: one content per equal bytes, not per MD5; the shrink's counts"
# b a a b c a c: a and b share an MD5 (a published collision), c is other
python3 tests/make-colliding-dump.py "$T/coll.hprof" baabcac
rm -rf "$T/coll"
"$B/hprof-bitmaps" "$T/coll.hprof" "$T/coll" || die "hprof-bitmaps on MD5-colliding buffers"
"$B/hprof-info" --json "$T/coll.hprof" > "$T/coll.info" || die "hprof-info on MD5-colliding buffers"
"$B/hprof-shrink" -q --json "$T/coll.hprof" "$T/coll-shrunk.hprof" > "$T/coll.shrink" ||
    die "hprof-shrink on MD5-colliding buffers"
python3 - "$T/coll" "$T/coll.info" "$T/coll.shrink" <<'PY' || die "MD5-colliding buffers: one image, or counts apart"
import json, os, struct, sys, zlib
sys.path.insert(0, "tests")
from importlib import import_module
contents = import_module("make-colliding-dump").CONTENTS
order = "baabcac"
out, info, shrink = sys.argv[1], json.load(open(sys.argv[2]))["bitmaps"], json.load(open(sys.argv[3]))
def pixels(path):
    data, at, idat = open(path, "rb").read(), 8, b""
    while at < len(data):
        n, kind = struct.unpack(">I4s", data[at:at + 8])
        if kind == b"IHDR":
            w, h = struct.unpack(">II", data[at + 8:at + 16])
        if kind == b"IDAT":
            idat += data[at + 8:at + 8 + n]
        at += 12 + n
    raw = zlib.decompress(idat)
    return b"".join(raw[y * (4 * w + 1) + 1:(y + 1) * (4 * w + 1)] for y in range(h))
index = [l.split("\t") for l in open(os.path.join(out, "index.tsv")).read().splitlines()[1:]]
files = sorted(f for f in os.listdir(out) if f != "index.tsv")
assert len(files) == len(index) == 3, (files, index)
assert sorted(l[0] for l in index) == files, index
seen = set()
for name, bitmaps, *_ in index:
    data = pixels(os.path.join(out, name))
    for b in bitmaps.split(","):
        i = (int(b, 16) - 0x2000) // 0x10
        assert contents[order[i]] == data, (name, b)
        seen.add(i)
assert seen == set(range(len(order))), seen
assert len({f[:32] for f in files}) == 2, files     # a and b: one MD5, two files
assert info["duplicate_groups"] == shrink["bitmap_groups"] == 3, (info, shrink)
assert info["wasted_bytes"] == shrink["bitmap_duplicates"]["bytes"] == 4 * 128, (info, shrink)
PY

banner "hprof-bitmaps: files as private as the input, never through a symlink, nothing partial on failure"
cp "$T/coll.hprof" "$T/priv.hprof"
chmod 600 "$T/priv.hprof"
rm -rf "$T/priv"
(umask 022; "$B/hprof-bitmaps" "$T/priv.hprof" "$T/priv") || die "hprof-bitmaps of a 0600 input"
[ "$(mode "$T/priv")" = 700 ] || die "a 0600 input gave a $(mode "$T/priv") directory"
for f in "$T"/priv/*; do [ "$(mode "$f")" = 600 ] || die "a 0600 input gave a $(mode "$f") file: $f"; done
chmod 640 "$T/priv.hprof"
rm -rf "$T/priv"
(umask 022; "$B/hprof-bitmaps" "$T/priv.hprof" "$T/priv") || die "hprof-bitmaps of a 0640 input"
[ "$(mode "$T/priv")" = 750 ] || die "a 0640 input gave a $(mode "$T/priv") directory"
for f in "$T"/priv/*; do [ "$(mode "$f")" = 640 ] || die "a 0640 input gave a $(mode "$f") file: $f"; done
# a symlink planted under an image's name: refused and left alone, or with
# -f replaced by the image; its target never written
name=$(ls "$T/priv" | grep -v index.tsv | head -n 1)
rm -rf "$T/planted"; mkdir "$T/planted"
echo "not yours" > "$T/victim"
ln -s "$T/victim" "$T/planted/$name"
expect 2 "$B/hprof-bitmaps" "$T/coll.hprof" "$T/planted"
grep -q "already exists" "$T/err" || die "planted symlink: $(cat "$T/err")"
[ "$(cat "$T/victim")" = "not yours" ] || die "hprof-bitmaps wrote through a planted symlink"
[ -L "$T/planted/$name" ] || die "the planted symlink is gone without -f"
[ "$(ls "$T/planted")" = "$name" ] || die "a refused run left files: $(ls "$T/planted")"
expect 0 "$B/hprof-bitmaps" -f "$T/coll.hprof" "$T/planted"
[ "$(cat "$T/victim")" = "not yours" ] || die "hprof-bitmaps -f wrote through a planted symlink"
[ -f "$T/planted/$name" ] && [ ! -L "$T/planted/$name" ] || die "-f did not replace the symlink"
cmp -s "$T/planted/$name" "$T/priv/$name" || die "-f: the image differs"
# OUTDIR given as a symlink is refused
ln -s "$T/planted" "$T/planted-link"
expect 2 "$B/hprof-bitmaps" -f "$T/coll.hprof" "$T/planted-link"
grep -q "is a symbolic link" "$T/err" || die "OUTDIR a symlink: $(cat "$T/err")"
# a full disk: no truncated image under its name, no temporary, nothing
# the run wrote (the 2.6 MB picture of the fixture fails half way)
gzip -dc fixtures/android-synth.hprof.gz > "$T/bmfull.hprof"
for fault in enospc:100000 enospc:1000 eio:5000; do
    rm -rf "$T/full"
    HPROF_FAULT=$fault LD_PRELOAD="$(pwd)/$B/tests/fault_write.so" "$B/hprof-bitmaps" "$T/bmfull.hprof" "$T/full" \
        > /dev/null 2> "$T/err" && die "hprof-bitmaps with $fault succeeded"
    [ ! -e "$T/full" ] || die "$fault left $(ls -A "$T/full")"
    rm -rf "$T/full"; mkdir "$T/full"
    set +e
    HPROF_FAULT=$fault LD_PRELOAD="$(pwd)/$B/tests/fault_write.so" "$B/hprof-bitmaps" "$T/bmfull.hprof" "$T/full" \
        > /dev/null 2> "$T/err"
    got=$?
    set -e
    [ "$got" = 3 ] || die "hprof-bitmaps with $fault: exit $got, not 3: $(cat "$T/err")"
    [ -z "$(ls -A "$T/full")" ] || die "$fault left $(ls -A "$T/full") in an existing OUTDIR"
done

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
grep -q "received onDestroy" "$T/ra.hprof" && die "the KeyedWeakReference description survived --redact"
"$B/hprof-shrink" -q --redact --redact-keep=android.app.Activity.mTitle fixtures/android-synth.hprof.gz "$T/rb.hprof"
grep -q "Secret account overview" "$T/rb.hprof" || die "--redact-keep=android.app.Activity.mTitle did not keep it"

# What LeakCanary's Shark concludes from a dump (tests/java/LeakAnalysis.java:
# its rules on VisualVM's heap library) stays the same after a shrink: the
# dump is a HotSpot one of tests/java/leakapp, which holds KeyedWeakReferences
# of LeakCanary 1.x and 2, android.os.Build, and parts of a leaked Activity in
# the locals of the threads whose locals Shark ignores by their names.
leak_analysis_survives_shrink() {
    banner "leak analysis: the same leaks, traces, metadata and retained sizes after --redact --redact-fields"
    d=$T/leaks; rm -rf "$d"; mkdir -p "$d/app"
    javac -d "$T/java" -cp "$VISUALVM_JAR" tests/java/LeakAnalysis.java
    javac -d "$d/app" $(find tests/java/leakapp -name '*.java')
    dump_app "$d/leak.hprof" "" -Xmx32m -XX:+UseSerialGC -Xshare:off -cp "$d/app" LeakApp
    leaks() { java -cp "$VISUALVM_JAR:$T/java" LeakAnalysis "$@"; }
    leaks "$d/leak.hprof" > "$d/in" || die "LeakAnalysis fails on LeakApp's dump"
    # the dump holds what the comparison is about: two leaks (1.x and 2), a
    # reference not yet retained and a cleared one that are none, Build
    [ "$(grep -c '^leak [0-9]* trace ' "$d/in")" = 2 ] || die "LeakApp's dump: not two leaks: $(cat "$d/in")"
    [ "$(grep -c '^watched .* leaking$' "$d/in")" = 2 ] || die "LeakApp's dump: not two leaking references"
    grep -q '^watched .*retainedDurationMillis -1 referent [0-9]*$' "$d/in" || die "LeakApp's dump: no watched, unretained object"
    grep -q '^watched .* referent null$' "$d/in" || die "LeakApp's dump: no cleared reference"
    grep -q '^metadata Build.MANUFACTURER Fairphone-LeakApp$' "$d/in" || die "LeakApp's dump: no Build.MANUFACTURER"
    # and the ignored locals count: followed, the Activity retains less
    leaks --follow-every-local "$d/leak.hprof" > "$d/every-local" || die "LeakAnalysis --follow-every-local"
    cmp -s "$d/in" "$d/every-local" && die "LeakApp's dump: the locals Shark ignores change nothing"
    # Strings, fields and names: all that a LeakCanary analysis needs stays;
    # --arrays=zero keeps the arrays' sizes, so retained bytes stay too
    # (each output has a name of its own: VisualVM keeps an index beside a
    # dump, FILE.hwcache, and would take a rewritten file's for its own)
    n=0
    for opts in "--redact --redact-fields --arrays=zero" "--redact --arrays=zero" "--arrays=zero"; do
        n=$((n + 1))
        "$B/hprof-shrink" -q $opts "$d/leak.hprof" "$d/out$n.hprof" || { die "shrink $opts"; continue; }
        leaks "$d/leak.hprof" "$d/out$n.hprof" > "$d/cmp" ||
            die "Shark's conclusions differ after $opts: $(grep '^DIFFERS' "$d/cmp" | tr '\n' ' ')"
    done
    # by default the arrays are emptied, so retained bytes shrink, as the
    # man page says; everything else stays
    for opts in "--redact --redact-fields" ""; do
        n=$((n + 1))
        "$B/hprof-shrink" -q $opts "$d/leak.hprof" "$d/out$n.hprof" || { die "shrink $opts"; continue; }
        leaks --objects-only "$d/leak.hprof" "$d/out$n.hprof" > "$d/cmp" ||
            die "Shark's conclusions differ after ${opts:-a default shrink}: $(grep '^DIFFERS' "$d/cmp" | tr '\n' ' ')"
    done
    # a real ART dump (no KeyedWeakReference): the same metadata and the same
    # objects reachable past the locals Shark ignores (FinalizerWatchdogDaemon, main)
    if [ -d ../shared/fixtures ]; then
        f=../shared/fixtures/art-ahat-test-dump.hprof
        "$B/tests/hprof-roundtrip" "$f" "$d/art.rt" 4096
        "$HPROF_CONV" "$d/art.rt" "$d/art-in.conv" || die "hprof-conv of the ART dump"
        "$B/hprof-shrink" -q --redact --redact-fields --arrays=zero --keep-system-heaps "$f" "$d/art.hprof" &&
            "$HPROF_CONV" "$d/art.hprof" "$d/art-out.conv" || die "shrink and hprof-conv of the ART dump"
        leaks "$d/art-in.conv" "$d/art-out.conv" > "$d/cmp" ||
            die "Shark's view of the ART dump differs after --redact --redact-fields: $(grep '^DIFFERS' "$d/cmp" | tr '\n' ' ')"
    fi
    rm -rf "$d"
}
leak_analysis_survives_shrink

# planted_secrets: a HotSpot heap (tests/java/SecretPlanter.java) and an
# ART-shaped one (hprof-synth --secrets) with a unique secret in each kind
# of place a heap holds data, searched for in every output mode by
# tests/hprof-secrets (texts as Latin-1, UTF-8 and UTF-16 both ways;
# numbers as big-endian 4 and 8 bytes; short values in their instances).
# Every secret is in the input; without --redact the String texts stay
# (that is the product); --redact --redact-fields leaves none of the
# "gone" kinds and every "stays" kind (what leak analysis reads), and its
# output verifies and shows VisualVM the same classes, instances, roots
# and references.
planted_secrets() {
    banner "--redact --redact-fields: no planted secret is left, and the heap is whole"
    d=$T/ps; rm -rf "$d"; mkdir -p "$d/java"
    javac -d "$d/java" tests/java/SecretPlanter.java tests/java/leakcanary/KeyedWeakReference.java \
        tests/java/android/location/Location.java || { die "javac SecretPlanter"; return; }
    java -Xmx32m -XX:+UseSerialGC -Xshare:off -cp "$d/java" SecretPlanter "$d/hotspot.hprof" \
        "$d/hotspot.secrets" || { die "SecretPlanter did not dump its heap"; return; }
    "$B/hprof-synth" --secrets "$d/android.secrets" "$d/android.hprof" || { die "hprof-synth --secrets"; return; }
    for corpus in hotspot android; do
        in=$d/$corpus.hprof
        secrets() { "$B/tests/hprof-secrets" "$d/$corpus.secrets" "$1" > "$d/found" || die "hprof-secrets $1"; }
        secrets "$in"
        grep ' absent$' "$d/found" && die "$corpus: the input lacks planted secrets"
        # "pipe": one pass from a pipe (names past the window wait in the
        # output's file, gzip's too); "stdout": and into a pipe, where
        # nothing waits in the output's file
        modes="default|--arrays=zero|--arrays=remove|--redact|--redact=strings|--redact --redact-fields|-z"
        modes="$modes|pipe --redact --redact-fields|pipe --window=1M --redact --redact-fields"
        modes="$modes|stdout --window=1M --redact --redact-fields|pipe -z --redact --redact-fields"
        [ $corpus = android ] && modes="$modes|--jvm|--jvm --redact --redact-fields"
        echo "$modes" | tr '|' '\n' > "$d/modes"
        while read -r mode; do
            args=$mode; [ "$mode" = default ] && args=""
            out=$d/out.hprof
            case $mode in *-z*) out=$d/out.hprof.gz ;; esac
            rm -f "$d/out.hprof" "$d/out.hprof.gz"
            case $mode in
            pipe*) cat "$in" | TMPDIR=$d/none "$B/hprof-shrink" -q ${args#pipe } - "$out" ;;
            stdout*) cat "$in" | TMPDIR=$d/none "$B/hprof-shrink" -q ${args#stdout } - - | cat > "$out" ;;
            *) "$B/hprof-shrink" -q $args "$in" "$out" ;;
            esac || { die "$corpus: shrink $mode"; continue; }
            secrets "$out"
            echo "    $corpus $mode: $(grep -c ' found ' "$d/found") of $(wc -l < "$d/found") kinds left:" \
                "$(grep '^gone .* found ' "$d/found" | cut -d' ' -f2 | tr '\n' ' ')"
            case $mode in
            *"--redact --redact-fields")
                if grep -q '^gone .* found ' "$d/found"; then
                    grep '^gone .* found ' "$d/found" | sed "s/^/    left: /" >&2
                    die "$corpus $mode: secrets left (above)"
                fi
                if grep -q '^stays .* absent$' "$d/found"; then
                    grep '^stays .* absent$' "$d/found" | sed "s/^/    lost: /" >&2
                    die "$corpus $mode: what leak analysis needs was removed (above)"
                fi
                "$B/hprof-verify" "$out" > /dev/null || die "$corpus $mode: the output does not verify"
                ;;
            *--redact*) ;;
            *)
                grep -Eq '^gone string-(field|latin1) found ' "$d/found" && grep -q '^gone string-utf16 found ' "$d/found" ||
                    die "$corpus $mode: a String's text was lost without --redact"
                ;;
            esac
        done < "$d/modes"
        # Whatever the order of the records (the dump's, or segments
        # reversed and names after the heap, as a writer that names things
        # once done writes them), the one pass, into a file or a pipe,
        # leaves no kind that the multi-pass shrink removes
        "$B/tests/hprof-roundtrip" "$in" "$d/split.hprof" 4096 || die "$corpus: round trip"
        tests/reorder-dump.py "$d/split.hprof" "$d/$corpus-last.hprof" > /dev/null ||
            die "$corpus: reorder-dump.py"
        for order in "$in" "$d/$corpus-last.hprof"; do
            for flags in "--redact" "--redact --keep-names" "--redact --redact-fields"; do
                # shellcheck disable=SC2086 # the flags are words
                "$B/hprof-shrink" -q -f --multi-pass $flags "$order" "$d/multi.hprof" ||
                    { die "$corpus: --multi-pass $flags"; continue; }
                secrets "$d/multi.hprof"
                grep '^gone .* found ' "$d/found" | cut -d' ' -f2 | sort > "$d/multi.left"
                for to in file pipe; do
                    # shellcheck disable=SC2086
                    case $to in
                    file) cat "$order" | TMPDIR=$d/none "$B/hprof-shrink" -q -f $flags - "$d/one.hprof" ;;
                    pipe) cat "$order" | TMPDIR=$d/none "$B/hprof-shrink" -q $flags - - | cat > "$d/one.hprof" ;;
                    esac || { die "$corpus: one pass $flags into a $to"; continue; }
                    secrets "$d/one.hprof"
                    grep '^gone .* found ' "$d/found" | cut -d' ' -f2 | sort > "$d/one.left"
                    comm -23 "$d/one.left" "$d/multi.left" > "$d/one.more"
                    [ ! -s "$d/one.more" ] ||
                        die "$corpus $(basename "$order") $flags: the one pass into a $to leaves what" \
                            "the multi-pass shrink removes: $(tr '\n' ' ' < "$d/one.more")"
                done
            done
        done
    done
    # VisualVM: the same classes, instances, roots and references (HotSpot:
    # against the input; Android: against the same conversion unredacted)
    "$B/hprof-shrink" -q --redact --redact-fields "$d/hotspot.hprof" "$d/hotspot-r.hprof" || die "redact hotspot"
    heapcount --detail "$d/hotspot.hprof" > "$d/hotspot.count" || die "VisualVM cannot load SecretPlanter's dump"
    heapcount --detail "$d/hotspot-r.hprof" > "$d/hotspot-r.count" || die "VisualVM cannot load its redacted dump"
    cmp -s "$d/hotspot.count" "$d/hotspot-r.count" ||
        die "VisualVM sees another heap after --redact --redact-fields: $(diff "$d/hotspot.count" "$d/hotspot-r.count" | head -5)"
    "$B/hprof-shrink" -q --jvm "$d/android.hprof" "$d/android-j.hprof" || die "--jvm android"
    "$B/hprof-shrink" -q --jvm --redact --redact-fields "$d/android.hprof" "$d/android-r.hprof" || die "--jvm --redact android"
    heapcount --detail "$d/android-j.hprof" > "$d/android-j.count" || die "VisualVM cannot load the converted corpus"
    heapcount --detail "$d/android-r.hprof" > "$d/android-r.count" || die "VisualVM cannot load the redacted corpus"
    cmp -s "$d/android-j.count" "$d/android-r.count" ||
        die "VisualVM sees another Android heap after --redact --redact-fields: $(diff "$d/android-j.count" "$d/android-r.count" | head -5)"
    rm -rf "$d"
}
planted_secrets

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

banner "bench-time -p: the command reads the file through a pipe and must read all of it"
"$B/bench-time" -p "$T/bt.in" -o "$T/bt.out" -- sh -c '[ -p /dev/stdin ] && tr a-c x-z' > "$T/bt.time" ||
    die "bench-time -p: the command's standard input is not a pipe, or tr failed"
[ "$(cat "$T/bt.out")" = xyz ] || die "bench-time -p: stdin not piped: $(cat "$T/bt.out")"
grep -Eqx '[0-9]+\.[0-9]{6} [1-9][0-9]*' "$T/bt.time" || die "bench-time -p printed: $(cat "$T/bt.time")"
# more than a pipe holds, so that cat is still writing when `true` ends
head -c 4194304 /dev/zero > "$T/bt.big"
expect 127 "$B/bench-time" -p "$T/bt.big" -- true
grep -q 'did not read all' "$T/err" || die "bench-time -p: no message for a command that stopped reading: $(cat "$T/err")"
expect 127 "$B/bench-time" -p "$T/no-such-file" -- cat
expect 5 "$B/bench-time" -p "$T/bt.big" -- sh -c 'cat > /dev/null; exit 5'
rm -f "$T/bt.big"

# never_grows: on every fixture and every mode, the output is never larger
# than the (uncompressed) input.  Stand-ins for dropped system-heap objects
# are those objects' own records emptied, so they add nothing either; a
# 1.0.1 dump keeps its one HEAP_DUMP (a HEAP_DUMP_END would add 9 bytes),
# also when written to a pipe.
never_grows() {
    banner "the output is never larger than the input, in every mode"
    files="fixtures/*.hprof.gz"
    [ -d ../shared/fixtures ] && files="$files ../shared/fixtures/*.hprof"
    for f in $files; do
        n=$(basename "$f")
        in=$(gzip -dcf "$f" | wc -c)
        for arrays in empty zero remove; do
            for keep in "" --keep-system-heaps; do
                "$B/hprof-shrink" -q -f --arrays=$arrays $keep "$f" "$T/ng.hprof" ||
                    { die "shrink $n --arrays=$arrays $keep"; continue; }
                out=$(wc -c < "$T/ng.hprof")
                [ "$out" -le "$in" ] ||
                    die "$n --arrays=$arrays $keep: output $out bytes, input $in"
            done
        done
        gzip -dcf "$f" | "$B/hprof-shrink" -q --arrays=zero --keep-system-heaps - - > "$T/ng-pipe.hprof" ||
            die "shrink $n to a pipe"
        out=$(wc -c < "$T/ng-pipe.hprof")
        [ "$out" -le "$in" ] || die "$n --arrays=zero to a pipe: output $out bytes, input $in"
    done
}
never_grows

# HotSpot writes its whole symbol table as STRING records, the program's
# string literals among them ("leaf-", "node-", "key-" are literals of
# tools/java/FixtureApp.java, the program behind the HotSpot fixture; the
# Strings built from them are live objects, which --redact fills).
names_in_use_only() {
    banner "names: only the names in use stay, so --redact leaves no literal behind"
    gzip -dc fixtures/hotspot-fixture.hprof.gz > "$T/names-in.hprof"
    for lit in "leaf-" "node-" "key-" "plain latin-1 text"; do
        grep -qaF "$lit" "$T/names-in.hprof" || die "the fixture lacks the literal '$lit'"
    done
    "$B/hprof-shrink" -q --redact --json "$T/names-in.hprof" "$T/names-r.hprof" > "$T/names.json" ||
        die "shrink --redact"
    for lit in "leaf-" "node-" "key-" "plain latin-1 text"; do
        grep -qaF "$lit" "$T/names-r.hprof" && die "--redact output holds the literal '$lit'"
    done
    "$B/hprof-verify" "$T/names-r.hprof" > /dev/null || die "verify of the output without unused names"
    python3 - "$T/names.json" <<'PY' || die "names_dropped in --json"
import json, sys
s = json.load(open(sys.argv[1]))
assert s["names_dropped"]["count"] > s["strings"]["count"], s  # about 9 in 10 on HotSpot
PY
    "$B/hprof-shrink" -q --redact --keep-names "$T/names-in.hprof" "$T/names-k.hprof" ||
        die "shrink --redact --keep-names"
    grep -qaF "key-" "$T/names-k.hprof" || die "--keep-names dropped a name"
    [ "$(wc -c < "$T/names-r.hprof")" -lt "$(( $(wc -c < "$T/names-k.hprof") * 2 / 3 ))" ] ||
        die "dropping the unused names did not shrink the HotSpot fixture by a third"
    rm -f "$T"/names-*
}
names_in_use_only

# The names in use are code; --keep-names keeps the rest of HotSpot's
# symbol table, the program's literals, which --redact cannot fill.
keep_names_warns_under_redact() {
    banner "--redact --keep-names warns that the names keep the literals, unless -q"
    f=fixtures/hotspot-synth.hprof.gz
    "$B/hprof-shrink" -f --redact --keep-names "$f" "$T/kn.hprof" > /dev/null 2> "$T/kn.err" ||
        die "shrink --redact --keep-names"
    grep -q "warning: --keep-names keeps every STRING record, the program's string literals" \
        "$T/kn.err" || die "no warning for --redact --keep-names: $(cat "$T/kn.err")"
    "$B/hprof-shrink" -q -f --redact --keep-names "$f" "$T/kn.hprof" 2> "$T/kn.err" ||
        die "shrink -q --redact --keep-names"
    [ -s "$T/kn.err" ] && die "-q printed: $(cat "$T/kn.err")"
    "$B/hprof-shrink" -f --keep-names "$f" "$T/kn.hprof" > /dev/null 2> "$T/kn.err" ||
        die "shrink --keep-names"
    grep -q warning "$T/kn.err" && die "--keep-names without --redact warned: $(cat "$T/kn.err")"
    rm -f "$T"/kn.*
}
keep_names_warns_under_redact

# --jvm converts as hprof-conv does, in the same run as the shrink; the
# graphs are compared by VisualVM's heap library (HeapCount --detail:
# classes, instances per class, roots per kind, every reference).
# hprof-conv copies the zero-length segments modern ART writes, which
# VisualVM refuses, so it is given the input as our writer rewrites it
# (hprof-roundtrip: the same records, no empty segment).
jvm_matches_hprof_conv() {
    banner "--jvm: the graph hprof-conv makes, in one run, opening in VisualVM"
    files="fixtures/android-synth.hprof.gz"
    [ -d ../shared/fixtures ] && files="$files ../shared/fixtures/art-ahat-test-dump.hprof"
    for f in $files; do
        n=$(basename "$f" .gz)
        gzip -dcf "$f" > "$T/jvm-in.hprof"
        "$B/hprof-shrink" -q -f --jvm --arrays=zero --keep-system-heaps --keep-duplicates \
            "$T/jvm-in.hprof" "$T/jvm-a.hprof" ||
            { die "--jvm as a converter on $n"; continue; }
        head -c 18 "$T/jvm-a.hprof" | grep -q "JAVA PROFILE 1.0.2" || die "--jvm header on $n"
        "$B/hprof-verify" "$T/jvm-a.hprof" > "$T/jvm-a.verify" || die "--jvm output of $n invalid"
        grep -q " 0 heap infos" "$T/jvm-a.verify" || die "--jvm left HEAP_DUMP_INFO in $n"
        "$B/hprof-info" --json "$T/jvm-a.hprof" > "$T/jvm-a.info" || die "hprof-info on --jvm $n"
        python3 - "$T/jvm-a.info" <<'PY' || die "--jvm left Android root kinds in $n"
import json, sys
roots = json.load(open(sys.argv[1]))["roots"]
android = {"ROOT_INTERNED_STRING", "ROOT_FINALIZING", "ROOT_DEBUGGER", "ROOT_REFERENCE_CLEANUP",
           "ROOT_VM_INTERNAL", "ROOT_JNI_MONITOR", "UNREACHABLE"}
assert not android & {k for k, v in roots.items() if v}, roots
PY
        "$B/tests/hprof-roundtrip" "$T/jvm-in.hprof" "$T/jvm-rt.hprof" || die "round trip of $n"
        "$HPROF_CONV" "$T/jvm-rt.hprof" "$T/jvm-b.hprof" || die "hprof-conv on $n"
        heapcount --detail "$T/jvm-a.hprof" > "$T/jvm-a.count" || die "VisualVM cannot load --jvm $n"
        heapcount --detail "$T/jvm-b.hprof" > "$T/jvm-b.count" || die "VisualVM cannot load hprof-conv's $n"
        cmp -s "$T/jvm-a.count" "$T/jvm-b.count" ||
            die "--jvm and hprof-conv disagree on $n: $(diff "$T/jvm-a.count" "$T/jvm-b.count" | head -5)"
        # The default shrink with --jvm against hprof-conv -z of the default
        # shrink: the same but for the system-heap objects we keep as
        # stand-ins (with their references to kept objects), where
        # hprof-conv -z drops them and leaves the references dangling.
        "$B/hprof-shrink" -q -f --jvm --json "$T/jvm-in.hprof" "$T/jvm-c.hprof" > "$T/jvm-c.json" ||
            die "--jvm shrink of $n"
        "$B/hprof-shrink" -q -f "$T/jvm-in.hprof" "$T/jvm-d.hprof" || die "shrink of $n"
        "$HPROF_CONV" -z "$T/jvm-d.hprof" "$T/jvm-e.hprof" || die "hprof-conv -z on the shrunk $n"
        heapcount --detail "$T/jvm-c.hprof" > "$T/jvm-c.count" || die "VisualVM cannot load --jvm shrunk $n"
        heapcount --detail "$T/jvm-e.hprof" > "$T/jvm-e.count" || die "VisualVM cannot load hprof-conv -z's $n"
        python3 - "$T/jvm-c.count" "$T/jvm-e.count" "$T/jvm-c.json" <<'PY' ||
import json, sys
def load(path):
    d = {}
    for line in open(path):
        k, _, v = line.rstrip("\n").rpartition(" ")
        d[k] = v
    return d
ours, conv, stats = load(sys.argv[1]), load(sys.argv[2]), json.load(open(sys.argv[3]))
roots = lambda d: {k: v for k, v in d.items() if k.startswith("root ")}
assert roots(ours) == roots(conv), (roots(ours), roots(conv))
assert ours["classes"] == conv["classes"]
standins = stats["system_standins"]["count"]
assert int(ours["instances"]) == int(conv["instances"]) + standins, (ours["instances"], conv["instances"], standins)
for k in ours:
    if k.startswith("class "):
        assert 0 <= int(ours[k]) - int(conv.get(k, "0")) <= standins, k
refs = lambda d: next(int(k.split()[1]) for k in d if k.startswith("references "))
kept = stats["system_standin_refs"]
assert refs(conv) + kept <= refs(ours) <= refs(conv) + kept + standins, (refs(ours), refs(conv), kept)
PY
            die "--jvm and hprof-conv -z disagree on shrunk $n beyond the stand-ins"
        rm -rf "$T"/jvm-* # VisualVM's caches (*.hwcache) are by file name
    done
    # a HotSpot dump is standard already: --jvm changes nothing
    "$B/hprof-shrink" -q -f fixtures/hotspot-fixture.hprof.gz "$T/jvm-h1.hprof" || die "shrink hotspot"
    "$B/hprof-shrink" -q -f --jvm fixtures/hotspot-fixture.hprof.gz "$T/jvm-h2.hprof" || die "--jvm hotspot"
    cmp -s "$T/jvm-h1.hprof" "$T/jvm-h2.hprof" || die "--jvm changed a HotSpot dump"
    rm -rf "$T"/jvm-*
}
jvm_matches_hprof_conv

# --mapping: a malformed mapping is named by file and line; with the ART
# fixture's map, every tool finds its obfuscated Bitmap and DumpData, and
# VisualVM shows the original class names.
mapping_restores_names() {
    banner "--mapping: original names in every tool and in VisualVM"
    printf 'com.example.Foo -> a.b:\n    int count -> a\nthis is not a mapping line\n' > "$T/map-bad.map"
    expect 1 "$B/hprof-shrink" --mapping="$T/map-bad.map" fixtures/android-synth.hprof.gz "$T/map-out.hprof"
    grep -q "map-bad.map:3: " "$T/err" || die "malformed mapping message: $(cat "$T/err")"
    [ ! -e "$T/map-out.hprof" ] || die "a malformed mapping left an output"
    expect 1 "$B/hprof-info" --mapping="$T/map-bad.map" fixtures/android-synth.hprof.gz
    expect 3 "$B/hprof-bitmaps" --mapping="$T/nosuch.map" fixtures/android-synth.hprof.gz "$T/map-bitmaps"
    [ -d ../shared/fixtures ] || { echo "(../shared/fixtures absent: the ART map is not tried)"; return; }
    art=../shared/fixtures/art-ahat-test-dump
    "$B/hprof-shrink" -q --json --mapping=$art.map $art.hprof "$T/map-out.hprof" > "$T/map-out.json" ||
        die "shrink --mapping"
    "$B/hprof-verify" "$T/map-out.hprof" > /dev/null || die "verify of the deobfuscated dump"
    python3 - "$T/map-out.json" <<'PY' || die "--mapping stats"
import json, sys
s = json.load(open(sys.argv[1]))
assert s["bitmap_buffers_kept"]["count"] >= 1 and s["natives_kept"]["count"] == 1, s
assert s["mapping_classes"] > 0 and s["mapping_fields"] > 0 and s["mapping_strings_added"] > 0, s
PY
    heapcount "$T/map-out.hprof" > "$T/map-out.count" || die "VisualVM cannot load the deobfuscated dump"
    grep -q "^class android.graphics.Bitmap " "$T/map-out.count" || die "VisualVM does not see Bitmap"
    grep -q "^class android.graphics.b " "$T/map-out.count" && die "VisualVM still sees android.graphics.b"
    "$B/hprof-info" --json --mapping=$art.map $art.hprof > "$T/map-info.json" || die "hprof-info --mapping"
    "$B/hprof-info" --json $art.hprof > "$T/map-info0.json" || die "hprof-info"
    python3 - "$T/map-info.json" "$T/map-info0.json" <<'PY' || die "hprof-info --mapping finds no bitmap"
import json, sys
with_map, without = json.load(open(sys.argv[1])), json.load(open(sys.argv[2]))
assert with_map["bitmaps"]["count"] > 0 and without["bitmaps"]["count"] == 0, (with_map["bitmaps"], without["bitmaps"])
PY
    rm -rf "$T/map-bitmaps"
    "$B/hprof-bitmaps" --mapping=$art.map $art.hprof "$T/map-bitmaps" || die "hprof-bitmaps --mapping"
    [ "$(ls "$T/map-bitmaps" | grep -vc index.tsv)" -ge 1 ] || die "hprof-bitmaps --mapping exported nothing"
    rm -rf "$T"/map-*
}
mapping_restores_names

for t in $TESTS; do banner "$t"; "t_$t"; done
finish
