#!/bin/bash
# bench-cluster.sh BUILD - a 4-task Slurm array of hprof-shrink --shard
# against the one-machine batch (-j one per core) on the same tree of
# 1,000 dumps, taking turns, and a rerun over the up-to-date tree.  The
# cluster is the tests' one-node cluster (tests/cluster/slurm-local.sh), so
# this needs root.  The array's time runs from submission until the queue
# is empty; the tree is in the page cache for both.
#
#   make bench-cluster [CLUSTER_DUMPS=1000] [CLUSTER_ROUNDS=2]
set -euo pipefail

B=$(cd "${1:-build}" && pwd)
root=$(cd "$(dirname "$0")/.." && pwd)
DUMPS=${CLUSTER_DUMPS:-1000}
ROUNDS=${CLUSTER_ROUNDS:-2}
SHARDS=4

W=$(mktemp -d "${TMPDIR:-/tmp}/hprof-bench-cluster.XXXXXX")
chmod 755 "$W"
trap '"$root/tests/cluster/slurm-local.sh" stop "$W/slurm" || true; rm -rf "$W"' EXIT
mkdir -p "$W/slurm"
"$root/tests/cluster/slurm-local.sh" start "$W/slurm"
export SLURM_CONF="$W/slurm/slurm.conf"

secs() {
    awk -v a="$1" -v b="$2" 'BEGIN { printf "%.2f", b - a }'
}

# The tree: Android-style dumps with bitmaps (the generator's default
# population, 2.7 MB) and HotSpot ones scaled up, some gzip-compressed.
mkdir -p "$W/seeds"
"$B/hprof-synth" --android -f "$W/seeds/a.hprof" >/dev/null
"$B/hprof-synth" --android --scale 4 --big-bitmap 65536 -f "$W/seeds/a4.hprof" >/dev/null
"$B/hprof-synth" --hotspot --scale 20 -f "$W/seeds/h.hprof" >/dev/null
gzip -1 -c "$W/seeds/h.hprof" > "$W/seeds/h.hprof.gz"
for ((i = 0; i < DUMPS; i++)); do
    d=$W/in/g$((i % 40))
    mkdir -p "$d"
    case $((i % 4)) in
    0) cp "$W/seeds/a.hprof" "$d/d$i.hprof" ;;
    1) cp "$W/seeds/a4.hprof" "$d/d$i.hprof" ;;
    2) cp "$W/seeds/h.hprof" "$d/d$i.hprof" ;;
    3) cp "$W/seeds/h.hprof.gz" "$d/d$i.hprof.gz" ;;
    esac
done
cat "$W"/in/*/* > /dev/null
echo "tree: $DUMPS dumps, $(du -sh "$W/in" | cut -f1); $(nproc) cores; $SHARDS array tasks of one CPU each"

array() {
    local out=$1 job
    job=$(sbatch --parsable --array=0-$((SHARDS - 1)) --cpus-per-task=1 -o /dev/null \
        --wrap "exec '$B/hprof-shrink' --shard=\$SLURM_ARRAY_TASK_ID/$SHARDS -j1 -r -q -o '$out' '$W/in'")
    while [ -n "$(squeue -h -j "$job" 2>/dev/null)" ]; do
        sleep 0.05
    done
}

printf '%-6s %12s %12s %7s\n' round "batch -j$(nproc)" "array x$SHARDS" ratio
for ((r = 1; r <= ROUNDS; r++)); do
    rm -rf "$W/out-batch" "$W/out-array"
    t0=$(date +%s.%N)
    "$B/hprof-shrink" -j"$(nproc)" -r -q -o "$W/out-batch" "$W/in"
    t1=$(date +%s.%N)
    array "$W/out-array"
    t2=$(date +%s.%N)
    b=$(secs "$t0" "$t1")
    a=$(secs "$t1" "$t2")
    printf '%-6s %10s s %10s s %6.2fx\n' "$r" "$b" "$a" "$(awk -v a="$a" -v b="$b" 'BEGIN { print a / b }')"
done
n=$(find "$W/out-array" -type f | wc -l)
[ "$n" -eq "$DUMPS" ] || { echo "bench-cluster: $n outputs for $DUMPS inputs" >&2; exit 1; }
t0=$(date +%s.%N)
array "$W/out-array"
t1=$(date +%s.%N)
t2=$(date +%s.%N)
"$B/hprof-shrink" --shard=0/$SHARDS -j1 -r -q -o "$W/out-array" "$W/in" > /dev/null
t3=$(date +%s.%N)
echo "rerun over the up-to-date tree: $(secs "$t0" "$t1") s through Slurm (submission to empty queue), $(secs "$t2" "$t3") s for one shard's own run"
