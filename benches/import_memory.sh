#!/usr/bin/env bash
# Peak memory of the perf.data import against the recording's size and against perf
# report's on the same file (not a test).
#
#   benches/import_memory.sh [MB...]     # as root, after cargo build --release
#
# For each MB (default: 50 200 800) records `perf record -a -g -e cpu-clock -c 20000` of a
# fork load until the file holds MB megabytes (about 10 MB a second on 2 CPUs), then
# measures the peak RSS (/usr/bin/time) of `prfcmp REC.data TINY.folded`, of
# `upcmp --perf REC.data TINY.folded OUT` (stacks too) and of
# `perf report --stdio --sort sym -i REC.data`, and prints them with perf report's peak
# divided by ours (above 1: we use less). The recordings live in a temporary directory
# removed at exit ($KEEP=DIR keeps them in DIR instead, reused when present).
# $SKIP_REPORT=1 leaves perf report out (it needs tens of GB on files of a few GB).
# $REPEAT=N adds a row per size for a file holding N copies of that recording's records
# (benches/perf_data_repeat.py): N times the file and the samples, the same distinct
# stacks (REPEAT=10 on 200 MB makes the 2 GB file of the memory target).
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
. "$here/common.sh"
sizes=("$@")
[ ${#sizes[@]} -gt 0 ] || sizes=(50 200 800)
for t in perf /usr/bin/time bc; do
    command -v "$t" >/dev/null || { echo "needs $t" >&2; exit 2; }
done
[ -x "$bin/prfcmp" ] && [ -x "$bin/upcmp" ] || { echo "build first: cargo build --release" >&2; exit 2; }
if [ -n "${KEEP:-}" ]; then
    mkdir -p "$KEEP"
    work=$KEEP
else
    scratch
fi
cd "$work"
echo "tiny 1" > tiny.folded
echo "tiny;stack 1" > tiny-stack.folded

printf '%-8s %9s  %-16s %-16s %-16s %s\n' "file MB" samples "prfcmp s/MiB" "upcmp --perf" "perf report" "report/prfcmp report/upcmp (RSS)"
for mb in "${sizes[@]}"; do
    f=rec-$mb.data
    if [ ! -s "$f" ]; then
        perf record -q -a -g -e cpu-clock -c 20000 -o "$f" -- \
            sh -c "while [ \$(stat -c%s $f 2>/dev/null || echo 0) -lt $((mb * 1000000)) ]; do /bin/true; done" 2>/dev/null
    fi
    samples=$(perf report -i "$f" --stats 2>/dev/null | awk '/SAMPLE events:/ {print $3; exit}')
    read -r ps pm < <(peak "$bin/prfcmp" "$f" tiny.folded)
    rm -rf out
    read -r us um < <(peak "$bin/upcmp" --perf "$f" tiny-stack.folded out -q)
    if [ "${SKIP_REPORT:-}" = 1 ]; then
        rs=- rm=- ratios="-"
    else
        read -r rs rm < <(peak perf report --stdio --sort sym -i "$f")
        ratios=$(printf '%.1f %.1f' "$(echo "$rm / $pm" | bc -l)" "$(echo "$rm / $um" | bc -l)")
    fi
    printf '%-8s %9s  %-16s %-16s %-16s %s\n' "$(($(stat -c%s "$f") / 1000000))" "${samples:-?}" \
        "$ps s $pm" "$us s $um" "$rs s $rm" "$ratios"
    if [ -n "${REPEAT:-}" ]; then
        r=rep-$mb-x$REPEAT.data
        python3 "$here/perf_data_repeat.py" "$f" "$r" "$REPEAT"
        read -r ps pm < <(peak "$bin/prfcmp" "$r" tiny.folded)
        rm -rf out
        read -r us um < <(peak "$bin/upcmp" --perf "$r" tiny-stack.folded out -q)
        printf '%-8s %9s  %-16s %-16s %-16s %s\n' "$(($(stat -c%s "$r") / 1000000))" "${samples:-?}x$REPEAT" \
            "$ps s $pm" "$us s $um" "-" "-"
        rm -f "$r"
    fi
done
