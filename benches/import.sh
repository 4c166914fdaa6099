#!/bin/sh
# Import speed against peers, printed as ratios (not a test).
#
#   benches/import.sh [SECONDS]      # as root; builds with cargo build --release first
#
# Records `perf record -e cpu-clock -a -g` of dd for SECONDS (default 10), writes its
# `perf script` text, then times, best of 3:
#   upcmp perf.data   prfcmp REC.data TINY.folded          (our perf.data import)
#   upcmp script      prfcmp REC.txt TINY.folded           (our perf script import)
#   perf report       perf report --stdio --sort sym -i REC.data
#   inferno           inferno-collapse-perf REC.txt
# and prints each peer's time divided by ours (above 1: we are faster).
set -eu
secs=${1:-10}
target=${CARGO_TARGET_DIR:-target}
prfcmp=$target/release/prfcmp
command -v inferno-collapse-perf >/dev/null || { echo "needs inferno-collapse-perf: cargo install inferno" >&2; exit 2; }
[ -x "$prfcmp" ] || { echo "build first: cargo build --release" >&2; exit 2; }
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
perf record -q -N -e cpu-clock -a -g -o "$dir/rec.data" -- \
    timeout "$secs" dd if=/dev/zero of=/dev/null bs=512 2>/dev/null || true
perf script -i "$dir/rec.data" > "$dir/rec.txt" 2>/dev/null
echo "tiny 1" > "$dir/tiny.folded"
samples=$(grep -c 'cpu-clock:' "$dir/rec.txt")
echo "recording: $samples samples, perf.data $(du -h "$dir/rec.data" | cut -f1), perf script text $(du -h "$dir/rec.txt" | cut -f1)"

best() { # best wall time of 3 runs, in seconds
    b=""
    for _ in 1 2 3; do
        s=$(date +%s.%N); "$@" >/dev/null 2>&1; e=$(date +%s.%N)
        t=$(echo "$e - $s" | bc -l)
        if [ -z "$b" ] || [ "$(echo "$t < $b" | bc -l)" = 1 ]; then b=$t; fi
    done
    echo "$b"
}
ours_data=$(best "$prfcmp" "$dir/rec.data" "$dir/tiny.folded")
ours_text=$(best "$prfcmp" "$dir/rec.txt" "$dir/tiny.folded")
report=$(best perf report --stdio --sort sym -i "$dir/rec.data")
inferno=$(best inferno-collapse-perf "$dir/rec.txt")
# Every frame too: upcmp --perf builds the call stacks (and writes the whole results
# directory, flame graph included), as inferno folds every frame.
echo "tiny;stack 1" > "$dir/tiny-stack.folded"
upcmp=$target/release/upcmp
stacks_text=$(best sh -c "rm -rf '$dir/r' && '$upcmp' --perf '$dir/rec.txt' '$dir/tiny-stack.folded' '$dir/r' -q")
printf '%-34s %8.3f s\n' "upcmp, perf.data" "$ours_data" "upcmp, perf script text" "$ours_text" \
    "upcmp --perf, text, with stacks" "$stacks_text" \
    "perf report --stdio (perf.data)" "$report" "inferno-collapse-perf (text)" "$inferno"
printf 'perf report / upcmp perf.data:      %6.2f\n' "$(echo "$report / $ours_data" | bc -l)"
printf 'inferno / upcmp perf script text:   %6.2f\n' "$(echo "$inferno / $ours_text" | bc -l)"
printf 'perf report / upcmp perf script:    %6.2f\n' "$(echo "$report / $ours_text" | bc -l)"
printf 'inferno / upcmp --perf with stacks: %6.2f\n' "$(echo "$inferno / $stacks_text" | bc -l)"
