#!/usr/bin/env python3
"""Writes N synthetic uprun runs of one test `big` into WORK/runs/NNNNN for benches/dataset.sh:
FUNCTIONS kernel functions with Zipf-like sample counts on one CPU, on 4 hosts of different
speed (the counts scale with it). Eight profiles per host are written once and hard-linked
into the runs (a run's identity is its `system` and `upcmp-run`, which each run has of its
own), so 10^4 runs cost little disk.

usage: dataset_runs.py WORK N FUNCTIONS
"""
import os
import random
import sys

work, n, nf = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
hosts = [("h0", 1.0), ("h1", 1.3), ("h2", 1.7), ("h3", 2.2)]
proto = os.path.join(work, "proto")
os.makedirs(proto, exist_ok=True)
for h, speed in hosts:
    for v in range(8):
        rng = random.Random(f"{h}{v}")
        lines, total = [], 0
        for i in range(nf):
            c = max(0, int(200000 / (i + 1) * speed * (1 + 0.02 * rng.gauss(0, 1))))
            total += c
            lines.append(f"{c} [kernel] function_{i:05d}")
        with open(os.path.join(proto, f"{h}-{v}"), "w") as f:
            f.write(f"upcmp-prfout 2\ntest big\ncommand big\nevent cpu-clock\nunit ns\nperiod-sec 0.001\n"
                    f"cpus 1\nwall-sec {total / 1000:.3f}\nidle-set do_idle\n"
                    f"cpu 0 samples {total} lost 0 throttled 0\nfunctions {nf}\n")
            f.write("\n".join(lines))
            f.write("\nend\n")
for k in range(n):
    h, _ = hosts[k % 4]
    d = os.path.join(work, "runs", f"{k:05d}")
    os.makedirs(os.path.join(d, "big"))
    os.link(os.path.join(proto, f"{h}-{(k // 4) % 8}"), os.path.join(d, "big", "prfout"))
    with open(os.path.join(d, "test_list"), "w") as f:
        f.write("big: big\n")
    with open(os.path.join(d, "system"), "w") as f:
        f.write(f"host: {h}\nkernel-release: 6.1.0\n")
    with open(os.path.join(d, "upcmp-run"), "w") as f:
        f.write(f"format: 2\ntool-version: 0\ncommand: synthetic {k}\nstarted: 2026-01-01T00:00:00Z+{k:05d}\n"
                "status: completed\nruns: 1\n")
