#!/usr/bin/env python3
"""Writes the part of this machine's /proc/kallsyms a recording needs, so that a fixture
recorded here reads the same on any kernel: for each kernel address perf script prints of
RECORDING, the text symbol covering it and the one after (its end); `_text` and `_etext`
too. Run as root, on the kernel that made the recording:

    python3 testdata/make_kallsyms_extract.py RECORDING OUT.kallsyms
"""
import bisect
import subprocess
import sys

recording, out = sys.argv[1], sys.argv[2]
syms = []
for line in open("/proc/kallsyms"):
    parts = line.split()
    if len(parts) >= 3 and parts[1] in "tTwW" and len(parts) == 3:
        syms.append((int(parts[0], 16), line))
syms.sort()
starts = [a for a, _ in syms]
script = subprocess.run(
    ["perf", "script", "-i", recording, "-F", "ip"],
    capture_output=True, text=True, check=True).stdout
keep = set()
for word in script.split():
    try:
        addr = int(word, 16)
    except ValueError:
        continue
    if addr < 0xffff800000000000:
        continue
    i = bisect.bisect_right(starts, addr) - 1
    if i >= 0:
        keep.update({i, min(i + 1, len(syms) - 1)})
for i, (_, line) in enumerate(syms):
    if line.split()[2] in ("_text", "_etext"):
        keep.add(i)
with open(out, "w") as f:
    f.writelines(syms[i][1] for i in sorted(keep))
