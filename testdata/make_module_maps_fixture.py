#!/usr/bin/env python3
"""Writes testdata/import/module-maps.data and module-maps.kallsyms: a pipe-mode perf.data
of cpu-clock (period 250000, call chains) whose kernel samples fall in a kernel module
that kallsyms names no symbol at, as on a machine running kvm: perf record's synthesized
MMAP record of the module (pid -1, `[kvm]`) says whose code it is.

Samples (all of `mod`, pid/tid 4242, CPU 0):
  6 at 0xffffffffc0201000 (kvm, before its first symbol): perf names them [unknown] [kvm]
  3 at 0xffffffff81000180 (do_work in the core kernel)
Each sample's chain is the kernel part then user address 0x401000 (no mapping).

Run from the repository root: python3 testdata/make_module_maps_fixture.py
"""
import struct

PERIOD = 250000
# PERF_SAMPLE_IP | TID | TIME | CALLCHAIN | CPU | PERIOD
SAMPLE_TYPE = 0x1 | 0x2 | 0x4 | 0x20 | 0x80 | 0x100
ATTR_SIZE = 112  # PERF_ATTR_SIZE_VER5
# mmap, comm, task
FLAGS = (1 << 8) | (1 << 9) | (1 << 13)
MISC_KERNEL, MISC_USER = 1, 2
CONTEXT_KERNEL = (1 << 64) - 128
CONTEXT_USER = (1 << 64) - 512
PID = 4242


def record(rtype, misc, body):
    return struct.pack("<IHH", rtype, misc, 8 + len(body)) + body


def padded(name):
    b = name.encode() + b"\0"
    return b + b"\0" * (-len(b) % 8)


def attr():
    a = struct.pack("<IIQQQQQ", 1, ATTR_SIZE, 0, PERIOD, SAMPLE_TYPE, 0, FLAGS)
    a += b"\0" * (ATTR_SIZE - len(a))
    return record(64, 0, a + struct.pack("<Q", 1))  # PERF_RECORD_HEADER_ATTR, id 1


def mmap(pid, tid, start, length, pgoff, name, misc):
    return record(1, misc, struct.pack("<iiQQQ", pid, tid, start, length, pgoff) + padded(name))


def comm(pid, tid, name):
    return record(3, 0, struct.pack("<ii", pid, tid) + padded(name))


def sample(ip, t, chain):
    body = struct.pack("<QiiQII Q", ip, PID, PID, t, 0, 0, PERIOD)
    body += struct.pack("<Q", len(chain)) + b"".join(struct.pack("<Q", a) for a in chain)
    return record(9, MISC_KERNEL, body)


def main():
    out = b"PERFILE2" + struct.pack("<Q", 16)
    out += attr()
    out += comm(PID, PID, "mod")
    # The kernel's map (at `_text`, as perf record writes it), then the module's.
    out += mmap(-1, 0, 0xFFFFFFFF81000000, 0x300, 0xFFFFFFFF81000000, "[kernel.kallsyms]_text", MISC_KERNEL)
    out += mmap(-1, 0, 0xFFFFFFFFC0200000, 0x10000, 0, "[kvm]", MISC_KERNEL)
    t = 1_000_000_000
    for ip, n in [(0xFFFFFFFFC0201000, 6), (0xFFFFFFFF81000180, 3)]:
        for _ in range(n):
            t += PERIOD
            out += sample(ip, t, [CONTEXT_KERNEL, ip, 0xFFFFFFFF81000210, CONTEXT_USER, 0x401000])
    out += record(68, 0, b"")  # PERF_RECORD_FINISHED_ROUND
    with open("testdata/import/module-maps.data", "wb") as f:
        f.write(out)
    with open("testdata/import/module-maps.kallsyms", "w") as f:
        f.write(
            "ffffffff81000000 T _text\n"
            "ffffffff81000100 T do_work\n"
            "ffffffff81000200 T do_syscall_64\n"
            "ffffffff81000300 T _etext\n"
            "ffffffffc0208000 t kvm_entry\t[kvm]\n"
            "ffffffffc0208100 t kvm_exit\t[kvm]\n"
        )


main()
