#!/bin/bash
# cluster-tests.sh - hprof-shrink --shard on a real Slurm cluster started on
# this machine (tests/cluster/slurm-local.sh): an array job whose task K
# runs `hprof-shrink --shard=K/N -r -o OUT IN` over a generated tree of
# 1,000 dumps.  Every input gets exactly one output and one JSON line; a
# rerun does nothing; a new file lands in exactly one shard; tasks
# cancelled mid-run leave no partial output and a rerun completes the tree;
# the shards' reports fold into one summary with the jq line that
# docs/cluster.md gives.  Needs root (Slurm's daemons); fails loudly
# without it.
#
#   HPROF_BUILD=build tests/cluster-tests.sh
set -euo pipefail

B=${HPROF_BUILD:-build}
B=$(cd "$B" && pwd)
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/.." && pwd)
SHARDS=4
DUMPS=${CLUSTER_DUMPS:-1000}

W=$(mktemp -d "${TMPDIR:-/tmp}/hprof-cluster.XXXXXX")
chmod 755 "$W"
cleanup() {
    "$here/cluster/slurm-local.sh" stop "$W/slurm" || true
    rm -rf "$W"
}
trap cleanup EXIT

fail() {
    echo "FAIL: $*" >&2
    exit 1
}

step() {
    echo "===> cluster: $*"
}

now() {
    date +%s.%N
}

mkdir -p "$W/slurm"
"$here/cluster/slurm-local.sh" start "$W/slurm"
export SLURM_CONF="$W/slurm/slurm.conf"

# The tree: 25 directories of dumps of five shapes (HotSpot and Android,
# plain and gzip-compressed), a name with a space, and two inputs that are
# cut short, whose failures the summary must carry.
make_tree() {
    local in=$1 n=$2 seeds=$W/seeds i d
    mkdir -p "$seeds" "$in"
    "$B/hprof-synth" --hotspot -f "$seeds/h1.hprof" >/dev/null
    "$B/hprof-synth" --hotspot --scale 3 -f "$seeds/h3.hprof" >/dev/null
    "$B/hprof-synth" --android --big-bitmap 65536 -f "$seeds/a1.hprof" >/dev/null
    "$B/hprof-synth" --android --big-bitmap 4096 --scale 2 -f "$seeds/a2.hprof" >/dev/null
    gzip -c "$seeds/h3.hprof" > "$seeds/h3.hprof.gz"
    head -c 5000 "$seeds/h1.hprof" > "$seeds/cut.hprof"
    for ((i = 0; i < n; i++)); do
        d=$in/g$((i % 25))
        mkdir -p "$d"
        case $((i % 5)) in
        0) cp "$seeds/h1.hprof" "$d/d$i.hprof" ;;
        1) cp "$seeds/h3.hprof" "$d/d$i.hprof" ;;
        2) cp "$seeds/a1.hprof" "$d/d$i.hprof" ;;
        3) cp "$seeds/a2.hprof" "$d/d$i.hprof" ;;
        4) cp "$seeds/h3.hprof.gz" "$d/d$i.hprof.gz" ;;
        esac
    done
    mv "$in/g0/d0.hprof" "$in/g0/with space.hprof"
    cp "$seeds/cut.hprof" "$in/g1/d1.hprof"
    cp "$seeds/cut.hprof" "$in/g2/d2.hprof"
}

# The output an input of the tree is written to.
output_of() {
    local rel=${1#"$W/in/"}
    echo "$2/${rel%.gz}"
}

# Submit an array of SHARDS tasks over IN into OUT, each task's JSON lines
# in JSON/shard-K.json; extra words go before hprof-shrink (an environment).
# exec, as docs/cluster.md says: the task's main process must be the one
# that cleans up on SIGTERM.  Prints the job id.
submit() {
    local out=$1 json=$2 env=${3:-}
    mkdir -p "$json"
    sbatch --parsable --array=0-$((SHARDS - 1)) --cpus-per-task=1 -o "$json/task-%a.log" \
        --wrap "exec env $env '$B/hprof-shrink' --shard=\$SLURM_ARRAY_TASK_ID/$SHARDS -j1 -r \
                --json -o '$out' '$W/in' > '$json/shard-'\$SLURM_ARRAY_TASK_ID.json"
}

# Until no task of job $1 is pending or running.
wait_job() {
    local i=0
    while [ -n "$(squeue -h -j "$1" 2>/dev/null)" ]; do
        i=$((i + 1))
        [ $i -lt 6000 ] || fail "job $1 still in the queue after 10 minutes"
        sleep 0.1
    done
}

run_array() {
    local job
    job=$(submit "$@")
    wait_job "$job"
}

# Every input of the tree has its output, nothing else is there, and every
# output but the two cut inputs' verifies.
check_tree_complete() {
    local out=$1 f o n_in n_out
    n_in=0
    while IFS= read -r -d '' f; do
        n_in=$((n_in + 1))
        o=$(output_of "$f" "$out")
        case $f in
        */g1/d1.hprof | */g2/d2.hprof)
            [ ! -e "$o" ] || fail "$o written for an input that is cut short" ;;
        *) [ -f "$o" ] || fail "no output for $f" ;;
        esac
    done < <(find "$W/in" -type f -print0)
    n_out=$(find "$out" -type f ! -name '*.json' | wc -l)
    [ "$n_out" -eq $((n_in - 2)) ] || fail "$n_out outputs for $n_in inputs (2 of them cut)"
    [ -z "$(find "$out" -name 'hprof-shrink.*.tmp')" ] || fail "temporary files left in $out"
    find "$out" -type f -print0 | xargs -0 -P "$(nproc)" -n 50 "$B/hprof-verify" -q ||
        fail "an output in $out does not verify"
}

# The JSON lines of the shards in $1: every input once, in the shard that
# says it, each line naming its shard.
check_lines() {
    local json=$1 inputs k
    inputs=$(find "$W/in" -type f | wc -l)
    for ((k = 0; k < SHARDS; k++)); do
        jq -e --arg s "$k/$SHARDS" 'select(.shard != $s)' "$json/shard-$k.json" >/dev/null &&
            fail "a line of shard $k names another shard"
        jq -e 'select(.input == null and .shrunk == null)' "$json/shard-$k.json" >/dev/null &&
            fail "shard $k printed a line that is neither an input's nor the tally"
    done
    [ "$(cat "$json"/shard-*.json | jq -r 'select(.input) | .input' | sort | uniq -d)" = "" ] ||
        fail "an input is in more than one shard's lines"
    [ "$(cat "$json"/shard-*.json | jq -r 'select(.input) | .input' | wc -l)" -eq "$inputs" ] ||
        fail "the shards' lines do not name each of the $inputs inputs"
}

# The jq line of docs/cluster.md that folds the shards' lines into one
# summary: the one users copy is the one tested.
summary_filter=$(sed -n 's/^ *jq -s \x27\(.*\)\x27 .*shard-\*\.json$/\1/p' "$root/docs/cluster.md")
[ -n "$summary_filter" ] || fail "docs/cluster.md has no 'jq -s ... shard-*.json' line"

step "a tree of $DUMPS dumps"
make_tree "$W/in" "$DUMPS"
inputs=$(find "$W/in" -type f | wc -l)
[ "$inputs" -eq "$DUMPS" ] || fail "the tree has $inputs inputs, not $DUMPS"

step "the one-machine batch, for reference"
t0=$(now)
"$B/hprof-shrink" -j"$(nproc)" -r --json -o "$W/out-batch" "$W/in" > "$W/batch.json" || [ $? -eq 1 ]
t1=$(now)
batch_secs=$(awk -v a="$t0" -v b="$t1" "BEGIN { printf \"%.2f\", b - a }")

step "a $SHARDS-task Slurm array: every input has exactly one output and one line"
t0=$(now)
run_array "$W/out" "$W/run1"
t1=$(now)
array_secs=$(awk -v a="$t0" -v b="$t1" "BEGIN { printf \"%.2f\", b - a }")
check_tree_complete "$W/out"
check_lines "$W/run1"
for ((k = 0; k < SHARDS; k++)); do
    n=$(jq -s 'map(select(.input)) | length' "$W/run1/shard-$k.json")
    [ "$n" -gt 0 ] || fail "shard $k took no input"
done
echo "    batch -j$(nproc): ${batch_secs} s; $SHARDS-task array: ${array_secs} s (submission to the last task's end)"

step "the same outputs as the one-machine batch, byte for byte"
diff -r "$W/out-batch" "$W/out" >/dev/null || fail "the array's outputs differ from the batch's"

step "the shards' lines fold into one summary (the jq line of docs/cluster.md)"
summary=$(jq -s "$summary_filter" "$W/run1"/shard-*.json)
echo "    $(echo "$summary" | jq -c '{inputs, shrunk, skipped, failed, bytes_in, bytes_out}')"
[ "$(echo "$summary" | jq .inputs)" -eq "$inputs" ] || fail "summary: inputs"
[ "$(echo "$summary" | jq .shrunk)" -eq $((inputs - 2)) ] || fail "summary: shrunk"
[ "$(echo "$summary" | jq .failed)" -eq 2 ] || fail "summary: failed"
[ "$(echo "$summary" | jq -r '.failures | map(.input) | sort | join(" ")')" = \
  "$W/in/g1/d1.hprof $W/in/g2/d2.hprof" ] || fail "summary: the failures are not the two cut inputs"
echo "$summary" | jq -e '.failures | all(.error | test("offset 0x"))' >/dev/null ||
    fail "summary: a failure without its message"
out_bytes=$(find "$W/out" -type f -printf '%s\n' | awk '{ s += $1 } END { print s }')
[ "$(echo "$summary" | jq .bytes_out)" -eq "$out_bytes" ] ||
    fail "summary: bytes_out $(echo "$summary" | jq .bytes_out), the outputs hold $out_bytes"

step "a rerun over the up-to-date tree does nothing"
find "$W/out" -type f -printf '%P %T@ %s\n' | sort > "$W/before"
t0=$(now)
run_array "$W/out" "$W/run2"
t1=$(now)
echo "    rerun: $(awk -v a="$t0" -v b="$t1" "BEGIN { printf \"%.2f\", b - a }") s"
find "$W/out" -type f -printf '%P %T@ %s\n' | sort > "$W/after"
cmp -s "$W/before" "$W/after" || fail "a rerun changed the outputs"
check_lines "$W/run2"
[ "$(jq -s "$summary_filter" "$W/run2"/shard-*.json | jq .shrunk)" -eq 0 ] ||
    fail "a rerun shrank something"

step "a new file lands in exactly one shard; the partition does not depend on the tree's root"
cp "$W/seeds/h1.hprof" "$W/in/g7/new.hprof"
cp "$W/seeds/a1.hprof" "$W/in/new-top.hprof"
run_array "$W/out" "$W/run3"
check_tree_complete "$W/out"
check_lines "$W/run3"
[ "$(cat "$W/run3"/shard-*.json | jq -r 'select(.status == "shrunk") | .input' | sort | tr '\n' ' ')" = \
  "$W/in/g7/new.hprof $W/in/new-top.hprof " ] || fail "the rerun shrank more or less than the two new files"
mkdir -p "$W/elsewhere/deeper"
mv "$W/in" "$W/elsewhere/deeper/tree"
for ((k = 0; k < SHARDS; k++)); do
    (cd "$W/elsewhere" && "$B/hprof-shrink" --shard=$k/$SHARDS -r --json -f -o "$W/moved" deeper/tree ||
        [ $? -eq 1 ]) | jq -r 'select(.input) | .input | sub("^deeper/tree/"; "")' | sort > "$W/moved-$k"
    jq -r 'select(.input) | .input' "$W/run3/shard-$k.json" | sed "s|^$W/in/||" | sort |
        cmp -s - "$W/moved-$k" || fail "shard $k takes other files when the tree lies elsewhere"
done
mv "$W/elsewhere/deeper/tree" "$W/in"

step "tasks cancelled mid-run (scancel) leave no partial output; a rerun completes the tree"
job=$(submit "$W/out-cancelled" "$W/run4" "HPROF_FAULT=slow LD_PRELOAD='$B/tests/fault_write.so'")
i=0
until [ -n "$(find "$W/out-cancelled" -name 'hprof-shrink.*.tmp' 2>/dev/null)" ]; do
    i=$((i + 1))
    [ $i -lt 3000 ] || fail "no task began writing within 5 minutes"
    sleep 0.1
done
scancel "$job"
wait_job "$job"
# squeue forgets a cancelled task before its processes have ended
i=0
while pgrep -f -- "-o $W/out-cancelled" >/dev/null; do
    i=$((i + 1))
    [ $i -lt 300 ] || fail "cancelled tasks still running after 30 s"
    sleep 0.1
done
left=$(find "$W/out-cancelled" -name 'hprof-shrink.*.tmp')
if [ -n "$left" ]; then
    tail -n 5 "$W/run4"/task-*.log >&2
    fail "cancelled tasks left temporary files: $left"
fi
done_before=$(find "$W/out-cancelled" -type f | wc -l)
[ "$done_before" -lt $((inputs - 2)) ] || fail "the tasks finished before they were cancelled"
find "$W/out-cancelled" -type f -print0 | xargs -0 -r -n 50 "$B/hprof-verify" -q ||
    fail "a cancelled task left an output that does not verify"
run_array "$W/out-cancelled" "$W/run5"
check_tree_complete "$W/out-cancelled"
echo "    $done_before outputs complete when cancelled; the rerun made the other $(( $(find "$W/out-cancelled" -type f | wc -l) - done_before ))"

echo "cluster tests passed"
