#!/usr/bin/env bash
# upcmp at scale: two synthetic runs of 10^6 samples over 10^5 functions (one test each),
# compared by upcmp; prints the wall time and peak memory. Run from the repository root
# after `cargo build --release --workspace`:
#   benches/scale.sh [FUNCTIONS] [SAMPLES]
set -euo pipefail
functions=${1:-100000}
samples=${2:-1000000}
. "$(dirname "$0")/common.sh"
scratch

python3 "$(dirname "$0")/synthetic_runs.py" "$work" "$functions" "$samples"

cd "$work"
/usr/bin/time -f "%e %M" -o time.txt "$bin/upcmp" run1 run2 res -q 2>/dev/null
read -r secs kib < time.txt
echo "upcmp on 2 runs x ${samples} samples over ${functions} functions: ${secs} s, peak RSS $((kib / 1024)) MiB"
echo "prfout size: $(du -h run1/big/prfout | cut -f1); results.csv rows: $(wc -l < res/results.csv)"
