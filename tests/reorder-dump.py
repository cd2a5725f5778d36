#!/usr/bin/env python3
"""reorder-dump.py [--arrays-first] IN OUT - the same records in another
order: the heap dump segments of each dump reversed, and every STRING
record moved to the end of the file, after the heap. With --arrays-first,
instead, the sub-records of each heap (app, zygote, image: what follows
its HEAP_DUMP_INFO records) are brought together after one of them,
primitive arrays first, far before the Strings and Bitmaps that refer to
them, and cut into new segments. An analyzer that reads the whole file
before it answers sees the same heap in both, which is what
tests/compare-views.sh must say; the bytes differ. IN is a plain dump whose
heap is in HEAP_DUMP_SEGMENT records (tests/hprof-roundtrip with a small
segment size makes many)."""
import struct
import sys

HEAP_DUMP_SEGMENT, HEAP_DUMP_END, STRING = 0x1C, 0x2C, 0x01
PRIMITIVE_ARRAY, HEAP_DUMP_INFO = 0x23, 0xFE
SEGMENT_MAX = 1 << 20
TYPE_SIZE = {4: 1, 5: 2, 6: 4, 7: 8, 8: 1, 9: 2, 10: 4, 11: 8}  # 2 (object) is the id size


def records(data, at):
    while at < len(data):
        tag, _, length = struct.unpack_from(">BII", data, at)
        end = at + 9 + length
        if end > len(data):
            sys.exit("reorder-dump.py: offset %#x: record runs past the end" % at)
        yield tag, data[at:end]
        at = end


def sub_record_end(data, at, ids):
    """Where the heap sub-record at AT ends."""
    tag = data[at]
    at += 1
    fixed = {0xFF: ids, 0x01: 2 * ids, 0x02: ids + 8, 0x03: ids + 8, 0x04: ids + 4, 0x05: ids,
             0x06: ids + 4, 0x07: ids, 0x08: ids + 8, 0x89: ids, 0x8A: ids, 0x8B: ids, 0x8C: ids,
             0x8D: ids, 0x8E: ids + 8, 0x90: ids, 0xC3: ids + 9, HEAP_DUMP_INFO: 4 + ids}
    if tag in fixed:
        return at + fixed[tag]
    size = lambda t: ids if t == 2 else TYPE_SIZE[t]
    if tag == 0x21:  # instance
        return at + 2 * ids + 8 + struct.unpack_from(">I", data, at + 2 * ids + 4)[0]
    if tag == 0x22:  # object array
        return at + 2 * ids + 8 + ids * struct.unpack_from(">I", data, at + ids + 4)[0]
    if tag == PRIMITIVE_ARRAY:
        n, t = struct.unpack_from(">IB", data, at + ids + 4)
        return at + ids + 9 + n * size(t)
    if tag == 0x20:  # class dump
        at += 7 * ids + 8
        (n,) = struct.unpack_from(">H", data, at)
        at += 2
        for _ in range(n):  # constant pool: index, type, value
            at += 3 + size(data[at + 2])
        (n,) = struct.unpack_from(">H", data, at)
        at += 2
        for _ in range(n):  # statics: name, type, value
            at += ids + 1 + size(data[at + ids])
        (n,) = struct.unpack_from(">H", data, at)
        return at + 2 + n * (ids + 1)
    sys.exit("reorder-dump.py: offset %#x: heap sub-record tag %#x unknown" % (at - 1, tag))


def arrays_first(heap, ids):
    """HEAP (the sub-records of one dump) as segments: each heap's sub-records
    together after its HEAP_DUMP_INFO, its primitive arrays first."""
    heaps = {None: [[], []]}  # per heap: [its arrays, the rest]
    current, at = None, 0
    while at < len(heap):
        end = sub_record_end(heap, at, ids)
        sub = heap[at:end]
        if sub[0] == HEAP_DUMP_INFO:
            current = sub
            heaps.setdefault(current, [[], []])
        else:
            heaps[current][sub[0] != PRIMITIVE_ARRAY].append(sub)
        at = end
    segments, body = [], b""
    subs = (s for info, parts in heaps.items() for s in ([info] if info else []) + parts[0] + parts[1])
    for sub in subs:
        if body and len(body) + len(sub) > SEGMENT_MAX:
            segments.append(struct.pack(">BII", HEAP_DUMP_SEGMENT, 0, len(body)) + body)
            body = b""
        body += sub
    if body:
        segments.append(struct.pack(">BII", HEAP_DUMP_SEGMENT, 0, len(body)) + body)
    return segments


def main_arrays_first(src, dst):
    data = open(src, "rb").read()
    header_end = data.index(b"\0") + 1 + 12
    (ids,) = struct.unpack_from(">I", data, header_end - 12)
    out, heap = [data[:header_end]], []
    for tag, rec in records(data, header_end):
        if tag == HEAP_DUMP_SEGMENT:
            heap.append(rec[9:])
            continue
        if tag == HEAP_DUMP_END:
            out += arrays_first(b"".join(heap), ids)
            heap = []
        out.append(rec)
    if heap:
        sys.exit("reorder-dump.py: segments without a HEAP_DUMP_END")
    open(dst, "wb").write(b"".join(out))


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
    if len(sys.argv) == 4 and sys.argv[1] == "--arrays-first":
        main_arrays_first(sys.argv[2], sys.argv[3])
    elif len(sys.argv) == 3:
        main(sys.argv[1], sys.argv[2])
    else:
        sys.exit("usage: reorder-dump.py [--arrays-first] IN OUT")
