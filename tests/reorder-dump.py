#!/usr/bin/env python3
"""reorder-dump.py IN OUT - the same records in another order: the heap
dump segments of each dump reversed, and every STRING record moved to the
end of the file, after the heap. An analyzer that reads the whole file
before it answers sees the same heap in both, which is what
tests/compare-views.sh must say; the bytes differ. IN is a plain dump whose
heap is in HEAP_DUMP_SEGMENT records (tests/hprof-roundtrip with a small
segment size makes many)."""
import struct
import sys

HEAP_DUMP_SEGMENT, HEAP_DUMP_END, STRING = 0x1C, 0x2C, 0x01


def records(data, at):
    while at < len(data):
        tag, _, length = struct.unpack_from(">BII", data, at)
        end = at + 9 + length
        if end > len(data):
            sys.exit("reorder-dump.py: offset %#x: record runs past the end" % at)
        yield tag, data[at:end]
        at = end


def main(src, dst):
    data = open(src, "rb").read()
    header_end = data.index(b"\0") + 1 + 12  # version, id size, timestamp
    out, names, segments = [data[:header_end]], [], []
    for tag, rec in records(data, header_end):
        if tag == STRING:
            names.append(rec)
        elif tag == HEAP_DUMP_SEGMENT:
            segments.append(rec)
        else:
            if tag == HEAP_DUMP_END:
                out += reversed(segments)
                segments = []
            out.append(rec)
    if segments:
        sys.exit("reorder-dump.py: segments without a HEAP_DUMP_END")
    out += names
    open(dst, "wb").write(b"".join(out))
    print("reorder-dump.py: %d names moved after the heap" % len(names))


if __name__ == "__main__":
    if len(sys.argv) != 3:
        sys.exit("usage: reorder-dump.py IN OUT")
    main(sys.argv[1], sys.argv[2])
