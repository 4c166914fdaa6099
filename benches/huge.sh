#!/usr/bin/env bash
# Peak memory and wall time of importing huge inputs (a perf.data file and a folded file of
# up to 2 GB) against peers on the same files, in one run (not a test).
#
#   benches/huge.sh [DIR]      # as root, after cargo build --release
#
# SIZES (default "512 1024 2048"): the sizes in MB of the inputs made.
# perf.data: a real `perf record -a -g -e cpu-clock -F 4000` of a fork and file load for
# $SECONDS_RECORDED (default 20) seconds, whose records are then repeated to each size
# (benches/perf_data_repeat.py: the same processes, mappings and stacks, N times the samples;
# perf report reads the result). Folded: 20,000 distinct stacks of 2 to 40 frames over
# 5,000 function names (an 11 MB block), written again and again until the file has the
# size: the lines grow with the size, the distinct stacks do not.
# For each file it prints wall seconds and peak RSS (MiB, /usr/bin/time) of
#   prfcmp FILE TINY                   (flat profile)
#   upcmp --perf FILE TINY OUT         (with stacks)
#   perf report --stdio --sort sym     (perf.data peer; SKIP_REPORT=1 leaves it out)
#   awk, summing the counts by leaf    (folded peer; inferno-flamegraph too when installed)
# and peer / ours ratios (above 1: ours is faster or smaller). Inputs live in DIR (kept and
# reused) or in a temporary directory removed at exit.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
. "$here/common.sh"
for t in perf /usr/bin/time python3 bc; do
    command -v "$t" >/dev/null || { echo "needs $t" >&2; exit 2; }
done
[ -x "$bin/prfcmp" ] && [ -x "$bin/upcmp" ] || { echo "build first: cargo build --release" >&2; exit 2; }
read -r -a sizes <<< "${SIZES:-512 1024 2048}"
if [ $# -gt 0 ]; then
    mkdir -p "$1"
    work=$(cd "$1" && pwd)
else
    scratch
fi
cd "$work"
echo "tiny 1" > tiny.folded
echo "tiny;stack 1" > tiny-stack.folded

ratio() { [ "$1" = - ] || [ "$2" = - ] && echo - || printf '%.1f' "$(echo "$1 / ($2 + 0.001)" | bc -l)"; }
row() { printf '%-34s %8s s %7s MiB\n' "$1" "$2" "$3"; }

# The recording repeated, and the folded text.
if [ ! -s base.data ]; then
    perf record -q -a -g -e cpu-clock -F 4000 -o base.data -- sh -c "
        end=\$((\$(date +%s) + ${SECONDS_RECORDED:-20}))
        while [ \$(date +%s) -lt \$end ]; do /bin/true; cat /etc/services >/dev/null; done" 2>/dev/null
fi
base_mb=$(($(stat -c%s base.data) / 1000000))
if [ ! -s block.folded ]; then
    python3 - <<'EOF'
import random
random.seed(46)
names = [f"function_{i:05d}_{'x' * (i % 23)}" for i in range(5000)]
with open("block.folded", "w") as out:
    for i in range(20000):
        depth = 2 + i % 39
        frames = [random.choice(names[:200])] + [random.choice(names) for _ in range(depth - 1)]
        out.write(";".join(frames) + f" {1 + i % 97}\n")
EOF
fi
echo "base recording: $base_mb MB; folded block: $(($(stat -c%s block.folded) / 1000000)) MB; binaries: $bin"
for mb in "${sizes[@]}"; do
    data=huge-$mb.data folded=huge-$mb.folded
    [ -s "$data" ] || python3 "$here/perf_data_repeat.py" base.data "$data" $(((mb + base_mb / 2) / base_mb > 0 ? (mb + base_mb / 2) / base_mb : 1))
    if [ ! -s "$folded" ]; then
        block_mb=$(($(stat -c%s block.folded) / 1000000))
        for _ in $(seq $(((mb + block_mb - 1) / block_mb))); do cat block.folded; done > "$folded"
    fi
    echo
    echo "== perf.data of $(($(stat -c%s "$data") / 1000000)) MB"
    read -r ps pm < <(peak "$bin/prfcmp" "$data" tiny.folded); row "prfcmp FILE TINY" "$ps" "$pm"
    rm -rf out
    read -r us um < <(peak "$bin/upcmp" --perf "$data" tiny-stack.folded out -q); row "upcmp --perf FILE TINY OUT" "$us" "$um"
    rs=- rm=-
    if [ "${SKIP_REPORT:-}" != 1 ]; then
        read -r rs rm < <(peak perf report --stdio --sort sym -i "$data"); row "perf report --stdio --sort sym" "$rs" "$rm"
    fi
    echo "perf report / prfcmp: wall $(ratio "$rs" "$ps"), peak RSS $(ratio "$rm" "$pm")"
    echo "== folded of $(($(stat -c%s "$folded") / 1000000)) MB"
    read -r fs fm < <(peak "$bin/prfcmp" "$folded" tiny.folded); row "prfcmp FILE TINY" "$fs" "$fm"
    rm -rf out
    read -r gs gm < <(peak "$bin/upcmp" --perf "$folded" tiny-stack.folded out -q); row "upcmp --perf FILE TINY OUT" "$gs" "$gm"
    read -r as am < <(peak awk '{ n = $NF; sub(/ [0-9]+$/, ""); k = split($0, f, ";"); c[f[k]] += n }
        END { for (l in c) print c[l], l }' "$folded"); row "awk, counts by leaf" "$as" "$am"
    echo "awk / prfcmp: wall $(ratio "$as" "$fs"), peak RSS $(ratio "$am" "$fm")"
    if command -v inferno-flamegraph >/dev/null; then
        read -r is im < <(peak inferno-flamegraph "$folded"); row "inferno-flamegraph" "$is" "$im"
        echo "inferno-flamegraph / upcmp --perf: wall $(ratio "$is" "$gs"), peak RSS $(ratio "$im" "$gm")"
    fi
    [ $# -gt 0 ] || rm -f "$data" "$folded"
done
