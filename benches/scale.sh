#!/usr/bin/env bash
# upcmp at scale: two synthetic runs of 10^6 samples over 10^5 functions (one test each),
# compared by upcmp; prints the wall time and peak memory. Run from the repository root
# after `cargo build --release --workspace`:
#   benches/scale.sh [FUNCTIONS] [SAMPLES]
set -euo pipefail
functions=${1:-100000}
samples=${2:-1000000}
bin=${BIN:-${CARGO_TARGET_DIR:-target}/release}
case "$bin" in /*) ;; *) bin="$PWD/$bin" ;; esac
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

python3 - "$work" "$functions" "$samples" <<'PY'
import os, random, sys
work, nf, ns = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
for run in (1, 2):
    rng = random.Random(run)
    # Zipf-like weights, as real profiles are: a few hot functions, a long tail.
    weights = [1.0 / (i + 1) for i in range(nf)]
    total = sum(weights)
    counts = [int(ns * w / total) for w in weights]
    counts[0] += ns - sum(counts)
    if run == 2:
        rng.shuffle(counts[1000:])
    d = os.path.join(work, f"run{run}", "big")
    os.makedirs(d)
    with open(os.path.join(d, "prfout"), "w") as f:
        f.write(f"upcmp-prfout 1\ntest big\nevent cpu-clock\nperiod-sec 0.001\ncpus 2\nwall-sec {ns / 1000:.3f}\n")
        f.write("idle-set do_idle\n")
        c0 = sum(c // 2 for c in counts)
        f.write(f"cpu 0 samples {c0} lost 0 throttled 0\ncpu 1 samples {ns - c0} lost 0 throttled 0\n")
        f.write(f"functions {nf}\n")
        for i, c in enumerate(counts):
            f.write(f"{c // 2} {c - c // 2} [kernel] function_{i:06d}\n")
        f.write("end\n")
    with open(os.path.join(work, f"run{run}", "test_list"), "w") as f:
        f.write("big: true\n")
    with open(os.path.join(work, f"run{run}", "system"), "w") as f:
        f.write("host: synthetic\n")
    with open(os.path.join(work, f"run{run}", "upcmp-run"), "w") as f:
        f.write("format: 2\ntool-version: 0\ncommand: synthetic\nstarted: x\nstatus: completed\n")
PY

cd "$work"
/usr/bin/time -f "%e %M" -o time.txt "$bin/upcmp" run1 run2 res -q 2>/dev/null
read -r secs kib < time.txt
echo "upcmp on 2 runs x ${samples} samples over ${functions} functions: ${secs} s, peak RSS $((kib / 1024)) MiB"
echo "prfout size: $(du -h run1/big/prfout | cut -f1); results.csv rows: $(wc -l < res/results.csv)"
