#!/usr/bin/env bash
# results.html at scale: upcmp on two synthetic runs of one test with FUNCTIONS functions
# (as benches/scale.sh makes them), then headless chromium opens the page from disk.
# Prints the page's size, what writing it adds to upcmp, how long headless chromium takes
# to open and draw it (against an empty page), and the page's own clock: ready_ms from
# navigation to the function table drawn, then the time to show all rows, sort, scroll
# and filter. Run from the repository root after `cargo build --release`:
#   benches/html_open.sh [FUNCTIONS] [SAMPLES]
set -euo pipefail
functions=${1:-100000}
samples=${2:-1000000}
. "$(dirname "$0")/common.sh"
[ -x "$bin/upcmp" ] || { echo "no $bin/upcmp: cargo build --release first" >&2; exit 1; }
browser=$(command -v chromium || command -v chromium-browser || command -v google-chrome) || {
  echo "needs a headless browser: apt-get install chromium" >&2
  exit 1
}
scratch

python3 "$(dirname "$0")/synthetic_runs.py" "$work" "$functions" "$samples"

cd "$work"
/usr/bin/time -f "%e %M" -o with.txt "$bin/upcmp" run1 run2 res -q 2>/dev/null
/usr/bin/time -f "%e %M" -o without.txt "$bin/upcmp" run1 run2 plain -q --no-html 2>/dev/null
read -r s_with k_with < with.txt
read -r s_without k_without < without.txt
echo "upcmp over ${functions} functions: ${s_with} s and $((k_with / 1024)) MiB peak with results.html," \
  "${s_without} s and $((k_without / 1024)) MiB without"
echo "results.html: $(du -h res/results.html | cut -f1) (results.csv: $(du -h res/results.csv | cut -f1))"

headless() {
  local profile
  profile=$(mktemp -d)
  "$browser" --headless --no-sandbox --disable-gpu --disable-quic --no-first-run \
    --disable-background-networking --disable-component-update --disable-sync \
    --user-data-dir="$profile" "$@" 2>/dev/null
  rm -rf "$profile"
}
# Open and draw (a screenshot of the first screen), against the same for an empty page;
# --dump-dom is not timed: writing out a 10 MB DOM takes longer than opening it.
echo '<!DOCTYPE html><title>empty</title>' > empty.html
for i in 1 2 3; do
  t0=$(date +%s.%N); headless --screenshot="$work/e.png" "file://$work/empty.html" > /dev/null; t1=$(date +%s.%N)
  headless --screenshot="$work/p.png" "file://$work/res/results.html" > /dev/null; t2=$(date +%s.%N)
  echo "open $i: $(echo "$t2 - $t1" | bc) s to a screenshot of the page against $(echo "$t1 - $t0" | bc) s for an empty page"
done
# The page's own clock, from navigation to the function table drawn, and interaction on
# the whole table: every row shown, sorted, scrolled, filtered.
headless --dump-dom "file://$work/res/results.html#timing" |
  grep -o '<pre id="upcmp-timing" hidden="">[^<]*' | sed 's/.*>/in the page (ms): /'
