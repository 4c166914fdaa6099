#!/usr/bin/env python3
"""Writes testdata/forkwait/outdir1 and outdir2: two uprun output directories whose
samples reproduce the example upcmp output of the original tools (seed 001).

Run from the repository root: python3 testdata/make_forkwait_fixture.py
"""
import os

# (function, run1 s, run2 s, R2-R1 s, %), the seed's CPU Time Analysis.
LISTED = """bcopy 146.961 169.565 22.604 2.58
user 24.763 25.867 1.104 0.13
mutex_spinunlock 23.952 25.037 1.085 0.12
avl_findanyrange 16.879 17.889 1.010 0.12
tossmpages 12.287 13.133 0.846 0.10
kmem_zone_alloc 10.696 11.522 0.826 0.09
copy_pmap 18.757 19.536 0.779 0.09
mutex_bitunlock 6.865 7.591 0.726 0.08
pmap_probe 8.818 9.538 0.720 0.08
mutex_spinlock 11.417 12.053 0.636 0.07
preg_avl_start 4.334 4.950 0.616 0.07
syscall 7.634 8.187 0.553 0.06
elocore_exl_3 4.151 4.665 0.514 0.06
VEC_tlbmod 9.752 10.244 0.492 0.06
procfork 10.823 11.264 0.441 0.05
nonactive_timers_add 5.044 5.468 0.424 0.05
pagealloc 5.298 5.713 0.415 0.05
segcommon_free 6.667 7.071 0.404 0.05
avl_insert_find_growth 4.926 5.306 0.380 0.04
freepreg 11.115 11.482 0.366 0.04
pagefreeanon 8.991 9.354 0.363 0.04
pageuseinc 8.618 8.965 0.347 0.04
_pagefree 13.261 13.596 0.336 0.04
collapse_pair 4.750 5.047 0.297 0.03
pfault 12.854 13.146 0.292 0.03
kmem_zone_free 4.746 5.018 0.272 0.03
exit 7.879 8.144 0.264 0.03
mutex_lock 7.301 7.519 0.218 0.02
attachreg 9.914 10.118 0.204 0.02
freeproc 5.831 5.995 0.164 0.02
segcommon_reserve 4.462 4.626 0.163 0.02
mrunlock 7.907 8.062 0.154 0.02
procdup 7.299 7.448 0.149 0.02
mrlock 15.901 16.027 0.127 0.01
freereg 4.743 4.857 0.113 0.01
chunk_find 4.817 4.914 0.097 0.01
dupreg 7.907 7.944 0.037 0.00
mr_unlock 7.415 7.437 0.022 0.00
allocpreg 5.466 5.434 -0.032 0.00
spl0 25.197 24.891 -0.306 -0.03
bzero 56.180 41.355 -14.826 -1.69"""

# Summary numbers of the seed, in milliseconds.
RUNS = {
    1: dict(wall_ms=872757, cpu=876987, idle=866599, rate="425.0", msec="2.3529"),
    2: dict(wall_ms=912563, cpu=915842, idle=907122, rate="421.0", msec="2.3753"),
}
CPUS = 2
# Samples are 0.1 ms apart: the seed's deltas are not the differences of its printed
# millisecond values (bzero: 41.355 - 56.180 = -14.825, printed -14.826), so its
# profile had finer resolution than 1 ms; ten samples per millisecond reproduce it.
TICKS_PER_MS = 10
PERIOD_SEC = 0.0001


def split(n):
    """n samples over the two CPUs."""
    return [n // 2, n - n // 2]


def fine_values():
    """For each listed function, sample counts (run1, run2) within half a millisecond
    of the printed values whose difference rounds to the printed delta, with no value
    exactly halfway between two printed ones."""
    out = []
    for line in LISTED.splitlines():
        name, a, b, d, _pct = line.split()
        t1, t2, td = (round(float(x) * 1000 * TICKS_PER_MS) for x in (a, b, d))
        best = None
        for o1 in range(-4, 5):
            for o2 in range(-4, 5):
                n1, n2 = t1 + o1, t2 + o2
                if abs((n2 - n1) - td) > 4 or 5 in (n1 % 10, n2 % 10, (n2 - n1) % 10):
                    continue
                cost = abs(o1) + abs(o2)
                if best is None or cost < best[0]:
                    best = (cost, n1, n2)
        assert best, name
        out.append((name, best[1], best[2]))
    return out


def rows_for(run):
    r = RUNS[run]
    rows = []
    for name, n1, n2 in fine_values():
        rows.append(("user" if name == "user" else "kernel", name, n1 if run == 1 else n2))
    # The rest of the CPU time goes to functions below the 0.5% cutoff in both runs
    # (at most 3 s each: 0.5% of run 1's CPU time is 4.385 s).
    rest = r["cpu"] * TICKS_PER_MS - sum(n for _, _, n in rows)
    k = 0
    while rest > 0:
        n = min((3000 - (7 if run == 1 else 5) * k) * TICKS_PER_MS, rest)
        rows.append(("kernel", f"below_cutoff_{k:03d}", n))
        rest -= n
        k += 1
    # Idle samples, in the original's two idle functions.
    idle = r["idle"] * TICKS_PER_MS
    rows.append(("kernel", "idle", idle - idle // 10))
    rows.append(("kernel", "checkRunq", idle // 10))
    return rows


def write(path, text):
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "w") as f:
        f.write(text)


def main():
    base = os.path.join("testdata", "forkwait")
    for run, r in RUNS.items():
        d = os.path.join(base, f"outdir{run}")
        rows = rows_for(run)
        per_cpu = [split(ms) for _, _, ms in rows]
        totals = [sum(c[i] for c in per_cpu) for i in range(CPUS)]
        lost_total = (2 * r["wall_ms"] - r["cpu"] - r["idle"]) * TICKS_PER_MS
        lost = split(lost_total)
        out = [
            "upcmp-prfout 1",
            "test forkwait",
            "command unixperf -forkwait -loop 200000 -repeat 2",
            "event cpu-clock",
            f"period-sec {PERIOD_SEC}",
            f"cpus {CPUS}",
            f"wall-sec {r['wall_ms'] / 1000:.6f}",
            "idle-set idle checkRunq",
        ]
        for c in range(CPUS):
            out.append(f"cpu {c} samples {totals[c]} lost {lost[c]} throttled 0")
        out.append(f"functions {len(rows)}")
        out.append("#      cpu0       cpu1 module function")
        for (module, name, _), counts in zip(rows, per_cpu):
            out.append("".join(f"  {n:>9}" for n in counts) + f" [{module}] {name}")
        out.append("end")
        write(os.path.join(d, "forkwait", "prfout"), "\n".join(out) + "\n")
        write(
            os.path.join(d, "forkwait", "upout"),
            "UNIX PERFORMANCE REPORT (generated by unixperf)\n\n"
            f"200000 reps @ {r['msec']} msec ({r['rate']:>7}/sec): fork, child immediately exits, parent waits\n"
            f"200000 reps @ {r['msec']} msec ({r['rate']:>7}/sec): fork, child immediately exits, parent waits\n"
            f"400000 trep @ {r['msec']} msec ({r['rate']:>7}/sec): fork, child immediately exits, parent waits\n\n",
        )
        write(
            os.path.join(d, "forkwait", "status"),
            "test: forkwait\ncommand: unixperf -forkwait -loop 200000 -repeat 2\ncopies: 1\n"
            "status: completed\nexit-codes: 0\nstarted: 1996-04-01T10:00:00Z\n"
            f"ended: 1996-04-01T10:15:00Z\nwall-sec: {r['wall_ms'] / 1000:.6f}\n",
        )
        write(
            os.path.join(d, "test_list"),
            "# test_list\n# ---------\n# forkwait run with default loop/repeat\n#\nforkwait\n",
        )
        write(
            os.path.join(d, "system"),
            f"date: 1996-04-0{run}T10:00:00Z\nhost: fixture\nkernel-release: 6.2\nkernel-version: IRIX 6.2\n"
            "architecture: mips\ndistribution: fixture\ncpus-online: 2\ncpu-list: 0-1\ncpu-model: R4400\n"
            "mem-total: 262144 kB\nmem-free: 131072 kB\nuptime-sec: 1000\nload-average: 0.00 0.00 0.00 1/50 1\n"
            "cpufreq-governors: none (no cpufreq)\nkernel-cmdline: none\nkernel-build-id: unknown\n"
            "perf-event-paranoid: -1\nsampling-event: cpu-clock\nsampling-frequency-hz: 10000\ntool-version: upcmp 0.1.0\n",
        )
        write(
            os.path.join(d, "upcmp-run"),
            "# Fixture made by testdata/make_forkwait_fixture.py\nformat: 1\ntool-version: 0.1.0\n"
            f"command: uprun /unix outdir{run}\nstarted: 1996-04-0{run}T10:00:00Z\n"
            f"ended: 1996-04-0{run}T10:15:00Z\nstatus: completed\n",
        )


if __name__ == "__main__":
    main()
