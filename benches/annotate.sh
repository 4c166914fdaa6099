#!/usr/bin/env bash
# What annotation costs: two synthetic uprun runs of 10^6 kernel samples each (over the
# functions of a kernel-like ELF built with -g, benches/annotate_runs.py), compared by
# upcmp with nothing annotated (--annotate-page 0), with `--annotate-top 20` (the 20
# listed functions of largest change annotated: one more pass over each run's
# samples.gz, code and lines from the ELF), and as by default (the page holds every
# listed function's lines, up to 100 a test).
# Prints the median wall and CPU (user + system) time of $RUNS runs (default 5) of each,
# the differences and the load; the target is under 1 s. Run from the repository root after `cargo build --release`:
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

# median CMD...: the median wall time and the median CPU time (user + system) of $runs
# runs of CMD, in seconds, "WALL CPU".
median() {
    local walls=() cpus=()
    for _ in $(seq "$runs"); do
        rm -rf res
        /usr/bin/time -f '%e %U %S' -o time.txt "$@" >/dev/null 2>err.txt || { echo "failed: $*" >&2; cat err.txt >&2; exit 1; }
        read -r w u s < time.txt
        walls+=("$w")
        cpus+=("$(echo "$u + $s" | bc -l)")
    done
    local mid=$((runs / 2 + 1))
    echo "$(printf '%s\n' "${walls[@]}" | sort -g | sed -n "${mid}p") $(printf '%s\n' "${cpus[@]}" | sort -g | sed -n "${mid}p")"
}
# Alternated, so both face the same load; the better of 2 rounds of each.
plain=() annotated=() paged=()
for _ in 1 2; do
    plain+=("$(median "$bin/upcmp" run1 run2 res -q --annotate-page 0)")
    annotated+=("$(median "$bin/upcmp" run1 run2 res -q --annotate-page 0 --annotate-top 20)")
    paged+=("$(median "$bin/upcmp" run1 run2 res -q)")
done
best() { printf '%s\n' "$@" | cut -d' ' -f"$col" | sort -g | head -1; }
col=1 pw=$(best "${plain[@]}") aw=$(best "${annotated[@]}") gw=$(best "${paged[@]}")
col=2 pc=$(best "${plain[@]}") ac=$(best "${annotated[@]}") gc=$(best "${paged[@]}")
rm -rf res && "$bin/upcmp" run1 run2 res -q >/dev/null 2>&1
on_page=$(grep -o '<details class="annotate on-demand"' res/results.html | wc -l)
page_kb=$(( $(stat -c %s res/results.html) / 1024 ))
rm -rf res && "$bin/upcmp" run1 run2 res -q --annotate-page 0 >/dev/null 2>&1
plain_kb=$(( $(stat -c %s res/results.html) / 1024 ))
rm -rf res && "$bin/upcmp" run1 run2 res -q --annotate-page 0 --annotate-top 20 >/dev/null 2>&1
echo "2 runs x ${samples} samples over ${functions} functions; median of ${runs} runs (the better of 2 alternated rounds); load: $(cut -d' ' -f1-3 /proc/loadavg)"
printf '                           %8s %8s\n' wall cpu
printf 'upcmp --annotate-page 0:   %6.3f s %6.3f s\n' "$pw" "$pc"
printf 'upcmp --annotate-top 20:   %6.3f s %6.3f s\n' "$aw" "$ac"
printf 'difference:                %6.3f s %6.3f s (target: under 1 s)\n' "$(echo "$aw - $pw" | bc -l)" "$(echo "$ac - $pc" | bc -l)"
printf 'upcmp (the page annotated): %5.3f s %6.3f s\n' "$gw" "$gc"
printf 'difference:                %6.3f s %6.3f s; %s functions on the page, results.html %s KiB against %s KiB\n' \
    "$(echo "$gw - $pw" | bc -l)" "$(echo "$gc - $pc" | bc -l)" "$on_page" "$page_kb" "$plain_kb"
echo "functions annotated: $(grep -c '^' res/results.annotate.csv 2>/dev/null || echo '?') CSV lines in results.annotate.csv"
