#!/usr/bin/env python3
"""make-colliding-dump.py OUT ORDER - an Android-style dump (1.0.3, 4-byte
ids) of one 8 x 4 ARGB_8888 android.graphics.Bitmap per letter of ORDER,
whose 128-byte mBuffer holds content A, B or C: A and B are the two blocks
with one MD5 that check_shrink.c uses (Wang and Yu, 2004), C another
picture.  Bitmap i is 0x2000 + 0x10 i, its buffer 0x1000 + 0x10 i."""
import struct
import sys

A = bytes.fromhex(
    "d131dd02c5e6eec4693d9a0698aff95c2fcab58712467eab4004583eb8fb7f89"
    "55ad340609f4b30283e488832571415a085125e8f7cdc99fd91dbdf280373c5b"
    "d8823e3156348f5bae6dacd436c919c6dd53e2b487da03fd02396306d248cda0"
    "e99f33420f577ee8ce54b67080a80d1ec69821bcb6a8839396f9652b6ff72a70")
B = bytes.fromhex(
    "d131dd02c5e6eec4693d9a0698aff95c2fcab50712467eab4004583eb8fb7f89"
    "55ad340609f4b30283e4888325f1415a085125e8f7cdc99fd91dbd7280373c5b"
    "d8823e3156348f5bae6dacd436c919c6dd53e23487da03fd02396306d248cda0"
    "e99f33420f577ee8ce54b67080280d1ec69821bcb6a8839396f965ab6ff72a70")
C = bytes(range(128))
CONTENTS = {"a": A, "b": B, "c": C}


def record(tag, body):
    return struct.pack(">BII", tag, 0, len(body)) + body


def main(path, order):
    out = b"JAVA PROFILE 1.0.3\0" + struct.pack(">IQ", 4, 0)
    for sid, text in ((0x10, "android.graphics.Bitmap"), (0x11, "mBuffer"),
                      (0x12, "mWidth"), (0x13, "mHeight")):
        out += record(0x01, struct.pack(">I", sid) + text.encode())
    out += record(0x02, struct.pack(">IIII", 1, 0x100, 0, 0x10))
    # CLASS_DUMP: id, serial, super, loader, signers, domain, 2 reserved,
    # instance size, no constants, no statics, 3 fields
    seg = struct.pack(">BIIIIIIII", 0x20, 0x100, 0, 0, 0, 0, 0, 0, 0)
    seg += struct.pack(">IHHH", 12, 0, 0, 3) + struct.pack(">IBIBIB", 0x11, 2, 0x12, 10, 0x13, 10)
    for i, letter in enumerate(order):
        array, bitmap, data = 0x1000 + 0x10 * i, 0x2000 + 0x10 * i, CONTENTS[letter]
        seg += struct.pack(">BIIIB", 0x23, array, 0, len(data), 8) + data
        seg += struct.pack(">BIIII", 0x21, bitmap, 0, 0x100, 12) + struct.pack(">III", array, 8, 4)
    out += record(0x1c, seg) + record(0x2c, b"")
    with open(path, "wb") as f:
        f.write(out)


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2])
