#!/usr/bin/env python3
"""Writes testdata/import/tracepoint-pipe.data from a pipe-mode recording of a tracepoint
(`perf record -q -o - -e sched:sched_switch -a -- sleep 0.3 > tp.pipe`), without its
HEADER_FEATURE record of EVENT_DESC (feature 12) and its EVENT_UPDATE records of names
(type 78, kind 2): as older perf wrote a stream, and as KDAB perfparser's
probe.data.stream is, the event is then named only by the tracing data's formats, as perf
report names it.

Run from the repository root: python3 testdata/make_tracepoint_pipe_fixture.py tp.pipe
"""
import struct
import sys

HEADER_TRACING_DATA, HEADER_FEATURE, EVENT_DESC = 66, 80, 12
EVENT_UPDATE, EVENT_UPDATE_NAME = 78, 2


def main(src):
    d = open(src, "rb").read()
    assert d[:8] == b"PERFILE2", "a little-endian pipe-mode stream"
    out, at = bytearray(d[:16]), 16
    while at + 8 <= len(d):
        rtype, _misc, size = struct.unpack_from("<IHH", d, at)
        end = at + size
        if rtype == HEADER_TRACING_DATA:
            end += (struct.unpack_from("<I", d, at + 8)[0] + 7) // 8 * 8
        kind = struct.unpack_from("<Q", d, at + 8)[0] if size >= 16 else None
        dropped = (rtype, kind) in [(HEADER_FEATURE, EVENT_DESC), (EVENT_UPDATE, EVENT_UPDATE_NAME)]
        if not dropped:
            out += d[at:end]
        at = end
    open("testdata/import/tracepoint-pipe.data", "wb").write(out)


main(sys.argv[1])
