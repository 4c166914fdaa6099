#!/usr/bin/env bash
# What --annotate costs: two synthetic uprun runs of 10^6 kernel samples each (over the
# functions of a kernel-like ELF built with -g, benches/annotate_runs.py), compared by
# upcmp without and with `--annotate-top 20` (the 20 listed functions of largest change
# annotated: one more pass over each run's samples.gz, code and lines from the ELF).
# Prints the median of $RUNS runs (default 5) of each and the difference; the target is
# under 1 s. Run from the repository root after `cargo build --release`:
#   benches/annotate.sh [FUNCTIONS] [SAMPLES]
set -euo pipefail
functions=${1:-300}
samples=${2:-1000000}
runs=${RUNS:-5}
. "$(dirname "$0")/common.sh"
[ -x "$bin/upcmp" ] || { echo "build first: cargo build --release" >&2; exit 2; }
scratch

python3 "$(dirname "$0")/annotate_runs.py" "$work" "$functions" "$samples"
cd "$work"

# median CMD...: the median wall time of $runs runs of CMD, in seconds.
median() {
    local times=()
    for _ in $(seq "$runs"); do
        rm -rf res
        local t0 t1
        t0=$(date +%s.%N)
        "$@" >/dev/null 2>err.txt || { echo "failed: $*" >&2; cat err.txt >&2; exit 1; }
        t1=$(date +%s.%N)
        times+=("$(echo "$t1 - $t0" | bc -l)")
    done
    printf '%s\n' "${times[@]}" | sort -g | sed -n "$((runs / 2 + 1))p"
}
# Alternated, so both face the same load.
plain=() annotated=()
for _ in 1 2; do
    plain+=("$(median "$bin/upcmp" run1 run2 res -q)")
    annotated+=("$(median "$bin/upcmp" run1 run2 res -q --annotate-top 20)")
done
p=$(printf '%s\n' "${plain[@]}" | sort -g | head -1)
a=$(printf '%s\n' "${annotated[@]}" | sort -g | head -1)
"$bin/upcmp" run1 run2 res -q --annotate-top 20 >/dev/null 2>&1
echo "2 runs x ${samples} samples over ${functions} functions; median of ${runs} runs (the better of 2 alternated rounds)"
printf 'upcmp:                     %6.3f s\n' "$p"
printf 'upcmp --annotate-top 20:   %6.3f s\n' "$a"
printf 'difference:                %6.3f s (target: under 1 s)\n' "$(echo "$a - $p" | bc -l)"
echo "functions annotated: $(grep -c '^' res/results.annotate.csv 2>/dev/null || echo '?') CSV lines in results.annotate.csv"
