"""Reading points and bars off published charts (PNG) in pure Python: the project has no imaging package.

Used by scripts/digitize-eplb-balancedness.py and scripts/digitize-bar-chart.py.
"""
import struct
import sys
import zlib


def read_png(path):
    """Width, height and rows of (r, g, b) for an 8-bit palette or RGB(A) PNG without interlacing
    (alpha is dropped: the charts read here are opaque)."""
    data = open(path, "rb").read()
    if data[:8] != b"\x89PNG\r\n\x1a\n":
        sys.exit(f"{path}: not a PNG file")
    pos, idat, hdr, palette = 8, b"", None, None
    while pos < len(data):
        (n,) = struct.unpack(">I", data[pos:pos + 4])
        kind, body = data[pos + 4:pos + 8], data[pos + 8:pos + 8 + n]
        pos += 12 + n
        if kind == b"IHDR":
            hdr = struct.unpack(">IIBBBBB", body)
        elif kind == b"PLTE":
            palette = [tuple(body[i:i + 3]) for i in range(0, len(body), 3)]
        elif kind == b"IDAT":
            idat += body
    if hdr is None:
        sys.exit(f"{path}: no IHDR chunk")
    w, h, depth, colour, _, _, interlace = hdr
    channels = {3: 1, 2: 3, 6: 4}.get(colour)
    if depth != 8 or interlace or channels is None:
        sys.exit(f"{path}: expected an 8-bit, non-interlaced palette or RGB(A) PNG")
    raw = zlib.decompress(idat)
    stride = w * channels
    rows, prev, at = [], bytearray(stride), 0
    for _ in range(h):
        f, line = raw[at], bytearray(raw[at + 1:at + 1 + stride])
        at += 1 + stride
        if f > 4:
            sys.exit(f"{path}: unknown PNG filter {f}")
        for i in range(stride):
            a = line[i - channels] if i >= channels else 0
            b = prev[i]
            c = prev[i - channels] if i >= channels else 0
            if f == 1:
                line[i] = (line[i] + a) & 255
            elif f == 2:
                line[i] = (line[i] + b) & 255
            elif f == 3:
                line[i] = (line[i] + (a + b) // 2) & 255
            elif f == 4:
                p = a + b - c
                pa, pb, pc = abs(p - a), abs(p - b), abs(p - c)
                line[i] = (line[i] + (a if pa <= pb and pa <= pc else b if pb <= pc else c)) & 255
        prev = line
        if channels == 1:
            rows.append([palette[v] for v in line])
        else:
            rows.append([tuple(line[i:i + 3]) for i in range(0, stride, channels)])
    return w, h, rows


def near(p, q, tol=40):
    return all(abs(a - b) <= tol for a, b in zip(p, q))


def runs(flags):
    """(start, end) of each run of True."""
    out, start = [], None
    for i, f in enumerate(flags + [False]):
        if f and start is None:
            start = i
        elif not f and start is not None:
            out.append((start, i - 1))
            start = None
    return out
