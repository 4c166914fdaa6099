#!/usr/bin/env bash
# How import time and memory grow with the samples (not a test): recordings of 0.25, 0.5,
# 1, 2 and 4 million samples, each read by
#   prfcmp REC.data TINY                  the flat perf.data import
#   upcmp --perf REC.data TINY R          perf.data with call stacks (whole results directory)
#   prfcmp REC.txt TINY                   the flat perf script import
# printing per step the median wall time of $RUNS runs (default 3), the median CPU time
# (user + system, which a busy machine disturbs less), the peak RSS, and the CPU time per
# million samples. Linear growth keeps the CPU time per million samples flat; a streaming
# import keeps the memory flat.
#
#   benches/growth.sh [DIR]     # as root, after cargo build --release
#
# DIR (default /var/tmp/upcmp-growth-bench) keeps the recordings: `perf record -a -g -F
# 20000 -e cpu-clock` of a fork load on every CPU, as long as each step needs (about
# 200 s of recording in all on 2 CPUs), and their perf script text (about 5 GB).
# $BIN (default $CARGO_TARGET_DIR/release, else target/release) holds prfcmp and upcmp;
# RECORD_ONLY=1 makes the recordings and stops.
set -euo pipefail
dir=${1:-/var/tmp/upcmp-growth-bench}
runs=${RUNS:-3}
freq=20000
. "$(dirname "$0")/common.sh"
for t in perf /usr/bin/time bc; do
    command -v "$t" >/dev/null || { echo "needs $t" >&2; exit 2; }
done
[ -x "$bin/prfcmp" ] && [ -x "$bin/upcmp" ] || { echo "build first: cargo build --release" >&2; exit 2; }
mkdir -p "$dir"
cd "$dir"
cpus=$(nproc)
echo "tiny 1" > tiny.folded
echo "tiny;stack 1" > tiny-stack.folded

steps="250000 500000 1000000 2000000 4000000"
for n in $steps; do
    if [ ! -s "r$n.data" ]; then
        ns=$(echo "$n * 1000000000 / ($freq * $cpus)" | bc)
        echo "recording r$n.data: $((ns / 1000000)) ms" >&2
        perf record -q -a -g -F $freq -e cpu-clock -o "r$n.data" -- \
            sh -c "end=\$((\$(date +%s%N) + $ns)); while [ \$(date +%s%N) -lt \$end ]; do /bin/true; done" 2>/dev/null
    fi
    [ -s "r$n.txt" ] || perf script -i "r$n.data" > "r$n.txt" 2>/dev/null
done

[ -z "${RECORD_ONLY:-}" ] || exit 0

# measure CMD...: median wall time (med) and CPU time (cpu) of $runs runs and the largest
# peak RSS (kib).
measure() {
    local times=() cpus=() t u s k
    kib=0
    for _ in $(seq "$runs"); do
        rm -rf res
        /usr/bin/time -f "%e %U %S %M" -o time.txt "$@" >/dev/null 2>err.txt || { cat err.txt >&2; exit 1; }
        read -r t u s k < <(tail -n 1 time.txt)
        times+=("$t")
        cpus+=("$(echo "$u + $s" | bc -l)")
        [ "$k" -gt "$kib" ] && kib=$k
    done
    med=$(printf '%s\n' "${times[@]}" | sort -g | sed -n "$((runs / 2 + 1))p")
    cpu=$(printf '%s\n' "${cpus[@]}" | sort -g | sed -n "$((runs / 2 + 1))p")
}

printf '%-10s %-8s %8s %8s %9s %14s\n' samples import "wall s" "cpu s" "peak MB" "cpu s/M samples"
for n in $steps; do
    samples=$(grep -c ' cpu-clock:' "r$n.txt")
    for kind in flat stacks text; do
        case $kind in
            flat) measure "$bin/prfcmp" "r$n.data" tiny.folded ;;
            stacks) measure "$bin/upcmp" --perf "r$n.data" tiny-stack.folded res -q ;;
            text) measure "$bin/prfcmp" "r$n.txt" tiny.folded ;;
        esac
        mb=$((kib / 1024))
        printf '%-10s %-8s %8.2f %8.2f %9d %14.3f\n' "$samples" "$kind" "$med" "$cpu" "$mb" \
            "$(echo "$cpu * 1000000 / $samples" | bc -l)"
    done
done
