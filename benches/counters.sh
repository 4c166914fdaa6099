#!/usr/bin/env bash
# What recording the kernel's counters costs uprun: one fixed workload under uprun with
# its counters (the /proc snapshots around the test and the counting perf events on every
# CPU) and with --no-counters, interleaved ROUNDS times. Prints the medians of the
# benchmark's rate and of uprun's wall time, their ratios (with / without), and the
# run-to-run noise of the rate without counters (its coefficient of variation), which
# the cost should stay below. Run as root from the repository root after
# `cargo build --release --workspace`:
#   benches/counters.sh [ROUNDS] [UNIXPERF-ARGS...]
set -euo pipefail
rounds=${1:-7}
shift || true
args=("$@")
[ ${#args[@]} -gt 0 ] || args=(-getpid -loop 3000000 -repeat 1)
. "$(dirname "$0")/common.sh"
scratch
cd "$work"

printf 'work: %s %s\n' "$bin/unixperf" "${args[*]}" > test_list

with=() without=() twith=() twithout=()
for ((r = 1; r <= rounds; r++)); do
  t0=$(date +%s.%N)
  "$bin/uprun" auto on > /dev/null
  t1=$(date +%s.%N)
  "$bin/uprun" auto off --no-counters > /dev/null
  t2=$(date +%s.%N)
  with+=("$(rate on/work/upout)") without+=("$(rate off/work/upout)")
  twith+=("$(echo "$t1 - $t0" | bc)") twithout+=("$(echo "$t2 - $t1" | bc)")
done
bytes=$(stat -c %s on/work/counters)

median() { printf '%s\n' "$@" | sort -g | awk '{a[NR]=$1} END {print (NR % 2) ? a[(NR+1)/2] : (a[NR/2] + a[NR/2+1]) / 2}'; }
cv() { printf '%s\n' "$@" | awk '{s+=$1; q+=$1*$1; n++} END {m=s/n; v=(q-n*m*m)/(n-1); if (v<0) v=0; printf "%.4f", sqrt(v)/m}'; }
w=$(median "${with[@]}") o=$(median "${without[@]}") tw=$(median "${twith[@]}") to=$(median "${twithout[@]}")
noise=$(cv "${without[@]}")
echo "workload: unixperf ${args[*]}  ($rounds rounds, medians)"
awk -v w="$w" -v o="$o" -v tw="$tw" -v to="$to" -v n="$noise" -v b="$bytes" 'BEGIN {
  printf "rate without counters   %12.1f ops/s\n", o
  printf "rate with counters      %12.1f ops/s  ratio %.4f\n", w, w / o
  printf "run-to-run noise (CV of the rate without counters)  %.4f\n", n
  printf "uprun wall time without %8.3f s\n", to
  printf "uprun wall time with    %8.3f s      ratio %.4f\n", tw, tw / to
  printf "counters file: %d bytes\n", b
}'
