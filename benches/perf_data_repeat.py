#!/usr/bin/env python3
"""Writes a perf.data file holding COPIES copies of SRC's records: the same processes,
mappings and stacks, COPIES times the samples (for measuring memory against file size).
The header's data size and the feature sections' offsets, behind the data, move with it.

    benches/perf_data_repeat.py SRC DST COPIES
"""
import struct
import sys

src, dst, copies = sys.argv[1], sys.argv[2], int(sys.argv[3])
with open(src, "rb") as f:
    head = f.read(104)
    if head[:8] != b"PERFILE2":
        sys.exit(f"{src}: not a perf.data file of version 2")
    data_at, data_len = struct.unpack_from("<2Q", head, 40)
    features = bin(int.from_bytes(head[72:104], "little")).count("1")
    f.seek(0)
    before = f.read(data_at)
    data = f.read(data_len)
    table = [struct.unpack("<2Q", f.read(16)) for _ in range(features)]
    rest = f.read()
before = bytearray(before)
struct.pack_into("<Q", before, 48, data_len * copies)
with open(dst, "wb") as out:
    out.write(before)
    for _ in range(copies):
        out.write(data)
    for at, size in table:
        out.write(struct.pack("<2Q", at + (copies - 1) * data_len, size))
    out.write(rest)
