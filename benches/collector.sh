#!/usr/bin/env bash
# The collector's cost: one fixed workload unprofiled, under uprun's sampling and under
# `perf record -a -F 1000`, interleaved ROUNDS times; prints median throughputs and their
# ratios to the unprofiled one, and each collector's own CPU time (its process's utime +
# stime from /proc/PID/stat, children excluded, last seen while it ran: drain, decoding,
# writing; not the kernel's sampling, which its load pays), a measure that holds on a busy
# machine where the throughputs do not, measured in (ROUNDS+2)/3 rounds of their own. Run as
# root from the repository root after
# `cargo build --release --workspace`:
#   benches/collector.sh [ROUNDS] [UNIXPERF-ARGS...]
set -euo pipefail
rounds=${1:-5}
shift || true
args=("$@")
[ ${#args[@]} -gt 0 ] || args=(-getpid -loop 3000000 -repeat 1)
. "$(dirname "$0")/common.sh"
scratch
cd "$work"

printf 'work: %s %s\n' "$bin/unixperf" "${args[*]}" > test_list

# The CPU seconds of process PID itself, the last value seen while it ran (every 50 ms).
own_cpu() {
  local pid=$1 last=0 s tick
  tick=$(getconf CLK_TCK)
  while kill -0 "$pid" 2>/dev/null; do
    s=$(awk '{print $14 + $15}' "/proc/$pid/stat" 2>/dev/null) && last=$s
    sleep 0.05
  done
  awk -v t="$last" -v k="$tick" 'BEGIN {printf "%.2f", t / k}'
}

# Each runs in place of its (background) shell, so $! is the collector's own pid.
uprun_run() { exec "$bin/uprun" auto out --freq 1000 > /dev/null; }
perf_run() { exec perf record -q -N -a -F 1000 -e cpu-clock -o perf.data -- "$bin/unixperf" "${args[@]}" > perf.out 2>/dev/null; }

# Throughputs come from rounds nobody watches: polling /proc every 50 ms forks two processes
# a tick, which cost a fork-bound load on two CPUs 10-15% of its rate.
plain=() uprun=() perf=() uprun_cpu=() perf_cpu=()
for ((r = 1; r <= rounds; r++)); do
  "$bin/unixperf" "${args[@]}" > plain.out
  plain+=("$(rate plain.out)")
  (uprun_run)
  uprun+=("$(rate out/work/upout)")
  (perf_run)
  perf+=("$(rate perf.out)")
done
# The collectors' own CPU comes from rounds of their own.
for ((r = 1; r <= (rounds + 2) / 3; r++)); do
  uprun_run &
  uprun_cpu+=("$(own_cpu $!)")
  wait $!
  perf_run &
  perf_cpu+=("$(own_cpu $!)")
  wait $!
done

median() { printf '%s\n' "$@" | sort -g | awk '{a[NR]=$1} END {print (NR % 2) ? a[(NR+1)/2] : (a[NR/2] + a[NR/2+1]) / 2}'; }
p=$(median "${plain[@]}") u=$(median "${uprun[@]}") f=$(median "${perf[@]}")
uc=$(median "${uprun_cpu[@]}") fc=$(median "${perf_cpu[@]}")
echo "workload: unixperf ${args[*]}  ($rounds rounds, medians, operations/s)"
awk -v p="$p" -v u="$u" -v f="$f" 'BEGIN {
  printf "unprofiled          %12.1f  1.000\n", p
  printf "uprun --freq 1000   %12.1f  %.3f\n", u, u / p
  printf "perf record -F 1000 %12.1f  %.3f\n", f, f / p
  printf "uprun / perf record              %.3f\n", u / f
}'
echo "own CPU time (s, medians): uprun $uc, perf record $fc"
