#!/usr/bin/env python3
"""Writes two uprun runs, WORK/run1 and WORK/run2, of one test `big` whose SAMPLES kernel
samples (each run) fall in the FUNCTIONS functions of a kernel-like ELF, WORK/vmlinux
(built here by gcc with -O2 -g, static, linked at 0xffffffff81000000): Zipf-like weights,
each sample at a random address of its function; run 2 doubles the third function. Each
run has its raw samples (samples.gz), its kallsyms.gz (from nm) and names the ELF in
`system` (as uprun does), so that `upcmp --annotate` finds the code and lines.
Used by benches/annotate.sh.

usage: annotate_runs.py WORK FUNCTIONS SAMPLES
"""
import gzip
import os
import random
import subprocess
import sys

work, nf, ns = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
period = 100000  # ns: 10 kHz, as uprun's default
src = ["#include <stdint.h>", "volatile uint64_t sink;"]
for i in range(nf):
    src += [
        f"__attribute__((noinline)) uint64_t f_{i:05d}(uint64_t n)",
        "{",
        f"\tuint64_t s = {i + 1}, t = 3;",
        "\tfor (uint64_t k = 0; k < n; k++) {",
        f"\t\ts = s * 2654435761u + (k ^ (s >> {i % 13 + 1}));",
        "\t\tt = (t << 5) ^ (t >> 3) ^ (s * 40503u);",
        "\t}",
        "\treturn s ^ t;",
        "}",
    ]
src += ["int main(int argc, char **argv)", "{", "\t(void)argv;", "\tuint64_t s = 0;"]
src += [f"\ts += f_{i:05d}(argc);" for i in range(nf)]
src += ["\tsink = s;", "\treturn 0;", "}", ""]
with open(os.path.join(work, "prog.c"), "w") as f:
    f.write("\n".join(src))
subprocess.run(["gcc", "-O2", "-g", "-static", "-nostartfiles", "-Wl,-e,main",
                "-Wl,-Ttext=0xffffffff81000000", "-no-pie", "-o", "vmlinux", "prog.c"],
               cwd=work, check=True)
nm = subprocess.run(["nm", "-n", "-S", "vmlinux"], cwd=work, check=True,
                    capture_output=True, text=True).stdout
funcs, kallsyms = [], []
for line in nm.splitlines():
    f = line.split()
    if len(f) == 4 and f[2] in "Tt" and f[0].startswith("ffffffff81"):
        if not kallsyms:
            kallsyms.append(f"{f[0]} T _text")
        kallsyms.append(f"{f[0]} {f[2]} {f[3]}")
        if f[3].startswith("f_"):
            funcs.append((f[3], int(f[0], 16), int(f[1], 16)))
kallsyms = "\n".join(kallsyms) + "\n"
vmlinux = os.path.join(os.path.abspath(work), "vmlinux")
for run in (1, 2):
    rng = random.Random(run)
    weights = [1.0 / (i + 1) for i in range(len(funcs))]
    if run == 2:
        weights[2] *= 2
    total = sum(weights)
    counts = [int(ns * w / total) for w in weights]
    counts[0] += ns - sum(counts)
    rdir = os.path.join(work, f"run{run}")
    d = os.path.join(rdir, "big")
    os.makedirs(d)
    per_cpu = [[0, 0] for _ in funcs]
    with gzip.open(os.path.join(d, "samples.gz"), "wt", compresslevel=1) as out:
        out.write("upcmp-samples 4\n")
        order = [i for i, c in enumerate(counts) for _ in range(c)]
        rng.shuffle(order)
        lines = []
        for k, i in enumerate(order):
            name, start, size = funcs[i]
            cpu = k % 2
            per_cpu[i][cpu] += 1
            lines.append(f"s {period // 2} {cpu} 42 42 k @{period} {start + rng.randrange(size):x}\n")
        out.write("".join(lines))
    with open(os.path.join(d, "prfout"), "w") as f:
        f.write(f"upcmp-prfout 1\ntest big\nevent cpu-clock\nperiod-sec {period * 1e-9}\ncpus 2\n")
        f.write(f"wall-sec {ns * period * 1e-9 / 2:.3f}\nidle-set do_idle\n")
        c0 = sum(c[0] for c in per_cpu)
        f.write(f"cpu 0 samples {c0} lost 0 throttled 0\ncpu 1 samples {ns - c0} lost 0 throttled 0\n")
        f.write(f"functions {len(funcs)}\n")
        for (name, _, _), c in zip(funcs, per_cpu):
            f.write(f"{c[0]} {c[1]} [kernel] {name}\n")
        f.write("end\n")
    with gzip.open(os.path.join(rdir, "kallsyms.gz"), "wt") as f:
        f.write(kallsyms)
    for name, text in (("test_list", "big: true\n"),
                       ("system", f"host: synthetic\nkernel-release: synthetic\nvmlinux: {vmlinux}\n"),
                       ("upcmp-run", "format: 2\ntool-version: 0\ncommand: synthetic\nstarted: x\nstatus: completed\n")):
        with open(os.path.join(rdir, name), "w") as f:
            f.write(text)
