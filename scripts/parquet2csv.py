#!/usr/bin/env python3
"""Transcribe a flat Parquet file to CSV with nothing but the standard library.

Used to copy public measurement tables (aiconfigurator's collector outputs) into
validate/published/ without a pyarrow dependency. Supports what those files use: flat schemas,
data pages v1 and v2, PLAIN and dictionary encodings, UNCOMPRESSED / SNAPPY / GZIP codecs and ZSTD (through the
zstd command-line tool),,
INT32, INT64, FLOAT, DOUBLE, BOOLEAN and BYTE_ARRAY columns, optional (nullable) columns.
Anything else stops with a message naming what is unsupported.

  scripts/parquet2csv.py FILE.parquet > FILE.csv
"""
import csv
import struct
import subprocess
import sys
import zlib


class Reader:
    def __init__(self, buf, pos=0):
        self.b, self.p = buf, pos

    def byte(self):
        v = self.b[self.p]
        self.p += 1
        return v

    def varint(self):
        shift = result = 0
        while True:
            v = self.byte()
            result |= (v & 0x7F) << shift
            if not v & 0x80:
                return result
            shift += 7

    def zigzag(self):
        v = self.varint()
        return (v >> 1) ^ -(v & 1)

    def take(self, n):
        v = self.b[self.p:self.p + n]
        self.p += n
        return v


def thrift_value(r, t):
    if t in (1, 2):
        return t == 1
    if t == 3:
        return struct.unpack('b', r.take(1))[0]
    if t in (4, 5, 6):
        return r.zigzag()
    if t == 7:
        return struct.unpack('<d', r.take(8))[0]
    if t == 8:
        return bytes(r.take(r.varint()))
    if t in (9, 10):
        h = r.byte()
        n, et = h >> 4, h & 0x0F
        if n == 15:
            n = r.varint()
        return [thrift_value(r, et) for _ in range(n)]
    if t == 11:
        n = r.varint()
        if n == 0:
            return {}
        kv = r.byte()
        return {thrift_value(r, kv >> 4): thrift_value(r, kv & 0x0F) for _ in range(n)}
    if t == 12:
        return thrift_struct(r)
    raise ValueError(f'thrift type {t} not supported')


def thrift_struct(r):
    out, last = {}, 0
    while True:
        h = r.byte()
        if h == 0:
            return out
        delta, t = h >> 4, h & 0x0F
        fid = last + delta if delta else r.zigzag()
        out[fid] = thrift_value(r, t)
        last = fid


def snappy(data):
    r = Reader(data)
    n = r.varint()
    out = bytearray()
    while r.p < len(data):
        tag = r.byte()
        kind = tag & 3
        if kind == 0:
            ln = tag >> 2
            if ln >= 60:
                extra = ln - 59
                ln = int.from_bytes(r.take(extra), 'little')
            out += r.take(ln + 1)
            continue
        if kind == 1:
            ln = 4 + ((tag >> 2) & 7)
            off = ((tag >> 5) << 8) | r.byte()
        elif kind == 2:
            ln = (tag >> 2) + 1
            off = int.from_bytes(r.take(2), 'little')
        else:
            ln = (tag >> 2) + 1
            off = int.from_bytes(r.take(4), 'little')
        start = len(out) - off
        for i in range(ln):
            out.append(out[start + i])
    if len(out) != n:
        raise ValueError('snappy: length mismatch')
    return bytes(out)


def decompress(codec, data):
    if codec == 0:
        return bytes(data)
    if codec == 1:
        return snappy(data)
    if codec == 2:
        return zlib.decompress(data, 16 + zlib.MAX_WBITS)
    if codec == 6:  # ZSTD frames: the zstd command-line tool (Debian package zstd)
        return subprocess.run(['zstd', '-d', '-c', '-q'], input=bytes(data), stdout=subprocess.PIPE, check=True).stdout
    raise ValueError(f'compression codec {codec} not supported (0 none, 1 snappy, 2 gzip, 6 zstd)')


def rle_hybrid(r, end, width, count):
    """RLE / bit-packed hybrid values, as used for levels and dictionary indices."""
    out = []
    nbytes = (width + 7) // 8
    while len(out) < count and r.p < end:
        h = r.varint()
        if h & 1:
            groups = h >> 1
            raw = int.from_bytes(r.take(groups * width), 'little')
            for i in range(groups * 8):
                out.append((raw >> (i * width)) & ((1 << width) - 1))
        else:
            v = int.from_bytes(r.take(nbytes), 'little') if nbytes else 0
            out += [v] * (h >> 1)
    return out[:count]


def plain(r, ptype, n):
    if ptype == 1:
        return list(struct.unpack(f'<{n}i', r.take(4 * n)))
    if ptype == 2:
        return list(struct.unpack(f'<{n}q', r.take(8 * n)))
    if ptype == 4:
        return list(struct.unpack(f'<{n}f', r.take(4 * n)))
    if ptype == 5:
        return list(struct.unpack(f'<{n}d', r.take(8 * n)))
    if ptype == 6:
        out = []
        for _ in range(n):
            ln = struct.unpack('<i', r.take(4))[0]
            out.append(bytes(r.take(ln)).decode('utf-8'))
        return out
    if ptype == 0:
        raw = int.from_bytes(r.take((n + 7) // 8), 'little')
        return [bool((raw >> i) & 1) for i in range(n)]
    raise ValueError(f'physical type {ptype} not supported')


def read_column(buf, meta, optional):
    ptype, codec, total = meta[1], meta[4], meta[5]
    pos = meta.get(11, meta[9]) if meta.get(11) else meta[9]
    dictionary, values = None, []
    while len(values) < total:
        r = Reader(buf, pos)
        ph = thrift_struct(r)
        body = r.take(ph[3])
        pos = r.p
        kind = ph[1]
        if kind == 2:
            d = Reader(decompress(codec, body))
            dictionary = plain(d, ptype, ph[7][1])
            continue
        if kind == 0:
            h = ph[5]
            n, enc = h[1], h[2]
            page = decompress(codec, body)
            d = Reader(page)
            defs = [1] * n
            if optional:
                ln = struct.unpack('<i', d.take(4))[0]
                defs = rle_hybrid(d, d.p + ln, 1, n)
        elif kind == 3:
            h = ph[8]
            n, enc, dl, rl = h[1], h[4], h[5], h[6]
            levels = body[:dl + rl]
            rest = body[dl + rl:]
            page = levels + (decompress(codec, rest) if h.get(7, True) else bytes(rest))
            d = Reader(page)
            defs = [1] * n
            if optional and dl:
                defs = rle_hybrid(Reader(page, rl), rl + dl, 1, n)
            d.p = dl + rl
        else:
            raise ValueError(f'page type {kind} not supported')
        present = sum(defs)
        if enc in (2, 8):
            width = d.byte()
            idx = rle_hybrid(d, len(page), width, present)
            vals = [dictionary[i] for i in idx]
        elif enc == 0:
            vals = plain(d, ptype, present)
        else:
            raise ValueError(f'encoding {enc} not supported')
        it = iter(vals)
        values += [next(it) if x else None for x in defs]
    return values


def rows_at(git_dir, commit, path):
    """The rows (dicts of text, as main() writes them) of the parquet file at `path` in `commit` of a
    git repository (a bare mirror works), or None where the commit has no such file."""
    import io
    import os
    import tempfile
    blob = subprocess.run(['git', '--git-dir', git_dir, 'show', f'{commit}:{path}'], stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)
    if blob.returncode != 0:
        return None
    fd, tmp = tempfile.mkstemp(suffix='.parquet')
    with os.fdopen(fd, 'wb') as f:
        f.write(blob.stdout)
    out = io.StringIO()
    stdout, argv = sys.stdout, sys.argv
    sys.stdout, sys.argv = out, ['parquet2csv', tmp]
    try:
        main()
    finally:
        sys.stdout, sys.argv = stdout, argv
        os.unlink(tmp)
    return list(csv.DictReader(io.StringIO(out.getvalue())))


def main():
    if len(sys.argv) != 2:
        sys.exit('usage: parquet2csv.py FILE.parquet')
    buf = open(sys.argv[1], 'rb').read()
    if buf[:4] != b'PAR1' or buf[-4:] != b'PAR1':
        sys.exit(f'{sys.argv[1]}: not a parquet file')
    mlen = struct.unpack('<i', buf[-8:-4])[0]
    fm = thrift_struct(Reader(buf, len(buf) - 8 - mlen))
    schema = fm[2]
    leaves = schema[1:]
    if any(s.get(5) for s in leaves):
        sys.exit(f'{sys.argv[1]}: nested schema not supported')
    names = [s[4].decode() for s in leaves]
    optional = [s.get(3, 0) == 1 for s in leaves]
    w = csv.writer(sys.stdout, lineterminator='\n')
    w.writerow(names)
    for rg in fm[4]:
        cols = [read_column(buf, cc[3], optional[i]) for i, cc in enumerate(rg[1])]
        for row in zip(*cols):
            w.writerow(['' if v is None else repr(v) if isinstance(v, float) else v for v in row])


if __name__ == '__main__':
    main()
