#!/usr/bin/env python3
"""How often the look at the machine before a test (src/host/check.rs) names a process
that is not busy. Each round takes the processes' CPU times at the start, after 50 ms, 100 ms
and 1 s, the way uprun does: the run time of each live thread in nanoseconds
(/proc/PID/task/TID/schedstat), and utime + stime in clock ticks (/proc/PID/stat). It
counts the processes each look names (more than 10% of a CPU) and those of them that used
less than 10% over the whole second (transient: busy for an instant, not beside the test).
Run from anywhere (root sees every process):
    benches/check_alarms.py [ROUNDS]
"""
import os
import sys
import time

HZ = os.sysconf("SC_CLK_TCK")
ME = os.getpid()


def snapshot():
    """pid -> (comm, ticks, ns of its live threads)"""
    out = {}
    for name in os.listdir("/proc"):
        if not name.isdigit():
            continue
        pid = int(name)
        try:
            stat = open(f"/proc/{pid}/stat").read()
            ns = 0
            for tid in os.listdir(f"/proc/{pid}/task"):
                ns += int(open(f"/proc/{pid}/task/{tid}/schedstat").read().split()[0])
        except (OSError, ValueError, IndexError):
            continue
        comm = stat[stat.find("(") + 1:stat.rfind(")")]
        f = stat[stat.rfind(")") + 1:].split()
        out[pid] = (comm, int(f[11]) + int(f[12]), ns)
    return out


def named(a, b, secs, ticks):
    """pids above 10% of a CPU between snapshots a and b"""
    busy = set()
    for pid, (_, t1, n1) in b.items():
        if pid == ME:
            continue
        _, t0, n0 = a.get(pid, ("", 0, 0))
        used = (t1 - t0) / HZ if ticks else (n1 - n0) * 1e-9
        if used / secs > 0.10:
            busy.add(pid)
    return busy


def main():
    rounds = int(sys.argv[1]) if len(sys.argv) > 1 else 60
    looks = {k: [0, 0, 0] for k in ["50 ms, ns", "50 ms, ticks", "100 ms, ns", "100 ms, ticks"]}
    for _ in range(rounds):
        t0 = time.monotonic()
        s0 = snapshot()
        time.sleep(0.05)
        t50 = time.monotonic()
        s50 = snapshot()
        time.sleep(max(0.0, 0.1 - (time.monotonic() - t0)))
        t100 = time.monotonic()
        s100 = snapshot()
        time.sleep(max(0.0, 1.0 - (time.monotonic() - t0)))
        t1s = time.monotonic()
        s1s = snapshot()
        steady = named(s0, s1s, t1s - t0, ticks=False)
        for key, b, secs, ticks in [
            ("50 ms, ns", s50, t50 - t0, False),
            ("50 ms, ticks", s50, t50 - t0, True),
            ("100 ms, ns", s100, t100 - t0, False),
            ("100 ms, ticks", s100, t100 - t0, True),
        ]:
            n = named(s0, b, secs, ticks)
            looks[key][0] += 1 if n - steady else 0
            looks[key][1] += len(n)
            looks[key][2] += len(n - steady)
    load = open("/proc/loadavg").read().split()[0]
    print(f"{rounds} rounds, load {load}")
    print(f"{'look':16} {'named/look':>10} {'transient':>10} {'looks with one':>15}")
    for key, (with_transient, total, transient) in looks.items():
        print(f"{key:16} {total / rounds:10.2f} {transient / rounds:10.2f} {100 * with_transient / rounds:14.1f}%")


main()
