#!/bin/sh
# slurm-local.sh start|stop DIR - a real one-node Slurm cluster on this
# machine, for the cluster tests and benchmark: munged, slurmctld and slurmd
# from Debian's slurm-wlm and munge, started as root with a configuration,
# key, state and logs of their own under DIR (tests/cluster/slurm.conf.in),
# on free loopback ports.  `start` prints nothing on success; use
# SLURM_CONF=DIR/slurm.conf with sbatch, squeue and scancel.  `stop`
# shuts all three down.  Slurm needs root here (its daemons switch users);
# without it, or without the packages, this fails and says why.
set -eu
what=${1:?usage: slurm-local.sh start|stop DIR}
dir=${2:?usage: slurm-local.sh start|stop DIR}
here=$(cd "$(dirname "$0")" && pwd)

fail() {
    echo "slurm-local: $*" >&2
    exit 1
}

port_free() {
    ! (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null
}

# Two consecutive free ports from a base that differs per process, so that
# two test runs on one machine do not meet.
free_ports() {
    p=$((20000 + ($$ % 2000) * 2))
    while [ "$p" -lt 65000 ]; do
        if port_free "$p" && port_free $((p + 1)); then
            echo "$p"
            return 0
        fi
        p=$((p + 2))
    done
    fail "no two free ports on 127.0.0.1"
}

stop() {
    export SLURM_CONF="$dir/slurm.conf"
    [ -f "$SLURM_CONF" ] && scontrol shutdown >/dev/null 2>&1 || true
    for f in slurmctld.pid slurmd.pid munge/pid; do
        [ -f "$dir/$f" ] || continue
        pid=$(cat "$dir/$f")
        kill "$pid" 2>/dev/null || true
        i=0
        while kill -0 "$pid" 2>/dev/null && [ $i -lt 50 ]; do
            sleep 0.1
            i=$((i + 1))
        done
        kill -9 "$pid" 2>/dev/null || true
        rm -f "$dir/$f"
    done
}

start() {
    [ "$(id -u)" = 0 ] || fail "the Slurm daemons must be started as root (they run jobs as their users)"
    "$here/../../tools/ensure-deps.sh" cluster
    for c in munged slurmctld slurmd sbatch squeue scancel; do
        command -v "$c" >/dev/null || fail "$c is not on PATH after installing slurm-wlm and munge"
    done
    mkdir -p "$dir/munge" "$dir/state" "$dir/spool" "$dir/log"
    # munged insists that its key is private and its socket's directory
    # reachable by everyone who asks for a credential
    chmod 755 "$dir" "$dir/munge"
    dd if=/dev/urandom of="$dir/munge/key" bs=1024 count=1 2>/dev/null
    chmod 400 "$dir/munge/key"
    munged --force --socket="$dir/munge/socket" --key-file="$dir/munge/key" \
        --log-file="$dir/log/munged.log" --pid-file="$dir/munge/pid" \
        --seed-file="$dir/munge/seed" || fail "munged did not start: $(tail -n 3 "$dir/log/munged.log")"
    host=$(hostname -s)
    ports=$(free_ports)
    sed -e "s|@DIR@|$dir|g" -e "s|@HOST@|$host|g" -e "s|@CPUS@|$(nproc)|g" \
        -e "s|@CTLD_PORT@|$ports|g" -e "s|@SLURMD_PORT@|$((ports + 1))|g" \
        "$here/slurm.conf.in" > "$dir/slurm.conf"
    export SLURM_CONF="$dir/slurm.conf"
    slurmctld -c -i || fail "slurmctld did not start: $(tail -n 5 "$dir/log/slurmctld.log")"
    slurmd || fail "slurmd did not start: $(tail -n 5 "$dir/log/slurmd.log")"
    i=0
    while [ "$(sinfo -h -N -o %t 2>/dev/null)" != idle ]; do
        i=$((i + 1))
        if [ $i -gt 300 ]; then
            echo "slurm-local: the node is not idle after 30 s: $(sinfo -h -N -o %t 2>&1)" >&2
            tail -n 5 "$dir/log/slurmctld.log" "$dir/log/slurmd.log" >&2 || true
            stop
            exit 1
        fi
        sleep 0.1
    done
}

case $what in
start) start ;;
stop) stop ;;
*) fail "usage: slurm-local.sh start|stop DIR" ;;
esac
