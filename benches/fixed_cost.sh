#!/usr/bin/env bash
# uprun's fixed cost: a run of one test that does nothing (`nothing: true`, `uprun auto
# out`) against `perf record -a -- true`, interleaved ROUNDS times; prints the median wall
# time (and its range), CPU time and peak memory of each and the ratio of the wall times.
# BASELINE=PATH adds another uprun binary (an earlier build) to the same rounds. Run as
# root from the repository root after `cargo build --release --workspace`:
#   benches/fixed_cost.sh [ROUNDS]
set -euo pipefail
rounds=${1:-10}
. "$(dirname "$0")/common.sh"
[ -x "$bin/uprun" ] || { echo "fixed_cost.sh: no $bin/uprun (build it, or set CARGO_TARGET_DIR)" >&2; exit 2; }
scratch
cd "$work"
echo "nothing: true" > test_list

# One timed command: appends "wall_s cpu_s peak_kib" to the file named first.
timed() {
  local into=$1
  shift
  local t0 t1
  t0=$(date +%s%N)
  /usr/bin/time -f '%U %S %M' -o usage "$@" > /dev/null 2>&1
  t1=$(date +%s%N)
  awk -v w="$(((t1 - t0) / 1000))" '{printf "%.4f %.3f %d\n", w / 1e6, $1 + $2, $3}' usage >> "$into"
}

: > uprun.txt
: > perf.txt
: > base.txt
for ((r = 1; r <= rounds; r++)); do
  timed uprun.txt "$bin/uprun" auto out
  rm -rf out out.old*
  timed perf.txt perf record -q -a -o perf.data -- true
  rm -f perf.data perf.data.old
  if [ -n "${BASELINE:-}" ]; then
    timed base.txt "$BASELINE" auto out
    rm -rf out out.old*
  fi
done

median() { sort -g | awk '{a[NR]=$1} END {print (NR % 2) ? a[(NR+1)/2] : (a[NR/2] + a[NR/2+1]) / 2}'; }
col() { cut -d' ' -f"$2" "$1" | median; }
echo "a run of one test that does nothing ($rounds rounds, medians; load $(cut -d' ' -f1 /proc/loadavg))"
printf '%-26s %8s %15s %8s %10s\n' "" "wall s" "(range)" "CPU s" "peak KiB"
range() { cut -d' ' -f1 "$1" | sort -g | awk 'NR == 1 {lo = $1} {hi = $1} END {printf "%.3f-%.3f", lo, hi}'; }
row() {
  printf '%-26s %8.3f %15s %8.3f %10d\n' "$1" "$(col "$2" 1)" "($(range "$2"))" "$(col "$2" 2)" "$(col "$2" 3)"
}
row "uprun auto out" uprun.txt
[ -s base.txt ] && row "baseline uprun" base.txt
row "perf record -a -- true" perf.txt
awk -v u="$(col uprun.txt 1)" -v p="$(col perf.txt 1)" 'BEGIN {printf "uprun / perf record (wall)  %.3f\n", u / p}'
if [ -s base.txt ]; then
  awk -v u="$(col uprun.txt 1)" -v b="$(col base.txt 1)" 'BEGIN {printf "uprun / baseline (wall)     %.3f\n", u / b}'
fi
