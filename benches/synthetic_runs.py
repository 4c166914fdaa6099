#!/usr/bin/env python3
"""Writes two synthetic uprun runs, WORK/run1 and WORK/run2, of one test `big`: FUNCTIONS
kernel functions sharing SAMPLES samples on two CPUs with Zipf-like weights (a few hot
functions, a long tail, as real profiles are); run 2 shuffles the tail past the first
1000. Used by benches/scale.sh and benches/html_open.sh.

usage: synthetic_runs.py WORK FUNCTIONS SAMPLES
"""
import os
import random
import sys

work, nf, ns = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
for run in (1, 2):
    rng = random.Random(run)
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
    for name, text in (("test_list", "big: true\n"), ("system", "host: synthetic\n"),
                       ("upcmp-run", "format: 2\ntool-version: 0\ncommand: synthetic\nstarted: x\nstatus: completed\n")):
        with open(os.path.join(work, f"run{run}", name), "w") as f:
            f.write(text)
