#!/usr/bin/env bash
# Comparison and import speed against perf diff, perf report and inferno, on a pair of
# large system-wide recordings with call chains (not a test).
#
#   benches/compare.sh [DIR]     # as root, after cargo build --release
#
# DIR (default /var/tmp/upcmp-compare-bench) keeps the recordings between runs: a.data
# (a fork load) and b.data (a file-read load), each `perf record -a -g -F 4000 -e
# cpu-clock` for $SECS seconds (default 120: about 10^6 samples on 2 CPUs), and a.txt,
# the `perf script` text of a.data. They are made when absent.
# Each row is the median of $RUNS runs (default 5) with its range, the median CPU time
# (user + system: what the work costs, whatever else the machine runs) and the largest
# peak RSS (/usr/bin/time); each peer's median divided by ours (above 1: we are faster),
# in wall time and in CPU time.
# $BIN (default $CARGO_TARGET_DIR/release, else target/release) holds prfcmp and upcmp;
# $BEFORE, another directory of them (an older commit's), is timed in the same run, row
# by row, so that both face the same load on a shared machine.
set -euo pipefail
dir=${1:-/var/tmp/upcmp-compare-bench}
secs=${SECS:-120}
runs=${RUNS:-5}
. "$(dirname "$0")/common.sh"
for t in perf inferno-collapse-perf /usr/bin/time bc; do
    command -v "$t" >/dev/null || { echo "needs $t (inferno: cargo install inferno; time: apt-get install time)" >&2; exit 2; }
done
[ -x "$bin/prfcmp" ] && [ -x "$bin/upcmp" ] || { echo "build first: cargo build --release" >&2; exit 2; }
mkdir -p "$dir"
cd "$dir"

if [ ! -s a.data ]; then
    echo "recording a.data: fork load, ${secs} s" >&2
    perf record -q -a -g -F 4000 -e cpu-clock -o a.data -- \
        sh -c "end=\$((\$(date +%s) + $secs)); while [ \$(date +%s) -lt \$end ]; do /bin/true; done" 2>/dev/null
fi
if [ ! -s b.data ]; then
    echo "recording b.data: file-read load, ${secs} s" >&2
    [ -s read.bin ] || head -c 200000000 /dev/urandom > read.bin
    perf record -q -a -g -F 4000 -e cpu-clock -o b.data -- \
        timeout "$secs" sh -c 'while :; do dd if=read.bin of=/dev/null bs=4k 2>/dev/null; done' 2>/dev/null || true
fi
[ -s a.txt ] || perf script -i a.data > a.txt 2>/dev/null
echo "tiny 1" > tiny.folded
echo "tiny;stack 1" > tiny-stack.folded

samples_a=$(perf report -i a.data --stats 2>/dev/null | awk '/SAMPLE events:/ {print $3; exit}')
samples_b=$(perf report -i b.data --stats 2>/dev/null | awk '/SAMPLE events:/ {print $3; exit}')
echo "a.data: ${samples_a:-?} samples, $(du -h a.data | cut -f1); b.data: ${samples_b:-?} samples, $(du -h b.data | cut -f1); a.txt: $(du -h a.txt | cut -f1)"
echo "binaries: $bin; $runs runs each, median (min-max), largest peak RSS"
echo

# measure NAME CMD...: runs CMD $runs times; sets med, lo, hi (wall seconds), cpu (median
# user + system seconds) and mem (MB).
measure() {
    local name=$1 times=() cpus=() kib=0 t u s k
    shift
    for _ in $(seq "$runs"); do
        rm -rf res
        /usr/bin/time -f "%e %U %S %M" -o time.txt "$@" >/dev/null 2>err.txt || {
            echo "$name failed:" >&2; cat err.txt >&2; exit 1; }
        read -r t u s k < <(tail -n 1 time.txt)
        times+=("$t")
        cpus+=("$(echo "$u + $s" | bc -l)")
        [ "$k" -gt "$kib" ] && kib=$k
    done
    mapfile -t sorted < <(printf '%s\n' "${times[@]}" | sort -g)
    med=${sorted[$((runs / 2))]} lo=${sorted[0]} hi=${sorted[$((runs - 1))]} mem=$((kib / 1024))
    mapfile -t sorted < <(printf '%s\n' "${cpus[@]}" | sort -g)
    cpu=${sorted[$((runs / 2))]}
    printf '%-46s %6.2f s (%.2f-%.2f) cpu %6.2f s %5d MB\n' "$name" "$med" "$lo" "$hi" "$cpu" "$mem"
}
ratio() { echo "scale=2; $1 / $2" | bc -l; }
# ratios PEER OURS: the peer's median over ours, in wall time and in CPU time (the
# variables PEER, OURS, PEER_cpu and OURS_cpu).
ratios() {
    local p=$1 o=$2 pc=${1}_cpu oc=${2}_cpu
    printf '%6s wall %6s cpu' "$(ratio "${!p}" "${!o}")" "$(ratio "${!pc}" "${!oc}")"
}
# ours NAME VAR ARGS...: measures prfcmp/upcmp ARGS (the first ARG names the binary) with
# $bin into VAR, and with $BEFORE too when set (into VAR_before).
ours() {
    local name=$1 var=$2 cmd=$3
    shift 3
    measure "$name" "$bin/$cmd" "$@"
    printf -v "$var" '%s' "$med"
    printf -v "${var}_cpu" '%s' "$cpu"
    if [ -n "${BEFORE:-}" ]; then
        measure "  before: $name" "$BEFORE/$cmd" "$@"
        printf -v "${var}_before" '%s' "$med"
        printf -v "${var}_before_cpu" '%s' "$cpu"
    fi
}

measure "perf diff a.data b.data" perf diff a.data b.data; diff=$med diff_cpu=$cpu
ours "prfcmp a.data b.data" flat prfcmp a.data b.data
ours "upcmp --perf a.data b.data R (stacks)" stacks upcmp --perf a.data b.data res -q
measure "perf report --no-children -g none (a.data)" perf report --no-children -g none --stdio -i a.data; report=$med report_cpu=$cpu
ours "prfcmp a.data TINY (one perf.data import)" import prfcmp a.data tiny.folded
measure "inferno-collapse-perf a.txt" inferno-collapse-perf a.txt; inferno=$med inferno_cpu=$cpu
ours "prfcmp a.txt TINY (one perf script import)" text prfcmp a.txt tiny.folded
ours "upcmp --perf a.txt TINY R (text, stacks)" text_stacks upcmp --perf a.txt tiny-stack.folded res -q
measure "cat a.txt" cat a.txt; cat_=$med cat__cpu=$cpu
echo
# rows SUFFIX: the ratios of the binaries whose medians end in SUFFIX ("" or _before).
rows() {
    local f=flat$1 s=stacks$1 i=import$1 t=text$1 ts=text_stacks$1
    echo "perf diff / prfcmp (flat):                $(ratios diff "$f")   (target >= 10)"
    echo "perf diff / upcmp --perf (stacks):        $(ratios diff "$s")   (target >= 5)"
    echo "perf report / prfcmp import of perf.data: $(ratios report "$i")"
    echo "inferno / prfcmp import of perf script:   $(ratios inferno "$t")   (target >= 3)"
    echo "inferno / upcmp --perf text with stacks:  $(ratios inferno "$ts")"
    echo "cat / prfcmp import of perf script:       $(ratios cat_ "$t")"
    if [ -n "${samples_a:-}" ]; then
        local ic=${i}_cpu
        echo "perf.data import: $(echo "$samples_a / ${!i} / 1" | bc) samples/s of wall time, $(echo "$samples_a / ${!ic} / 1" | bc) per CPU second (a.data, the whole prfcmp)"
    fi
}
echo "$bin:"
rows ""
if [ -n "${BEFORE:-}" ]; then
    echo
    echo "$BEFORE:"
    rows _before
fi
