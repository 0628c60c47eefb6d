# Makes the 3.10-shaped reply of a captured dump: the same messages without the 64-bit rate
# attributes 3.10 lacks (TCA_HTB_RATE64 6, TCA_HTB_CEIL64 7 / TCA_TBF_RATE64 4, TCA_TBF_PRATE64
# 5, inside TCA_OPTIONS), every length fixed up. Not a capture of a 3.10 kernel.
#   python3 strip_rate64.py IN OUT htb|tbf
import struct, sys
data = open(sys.argv[1], "rb").read(); drop = {"htb": {6, 7}, "tbf": {4, 5}}[sys.argv[3]]
def attrs(b):
    i = 0
    while i + 4 <= len(b):
        ln, ty = struct.unpack_from("=HH", b, i); yield ty, b[i + 4:i + ln]; i += (ln + 3) & ~3
def attr(ty, v): return struct.pack("=HH", 4 + len(v), ty) + v + b"\0" * (-len(v) % 4)
out = b""; i = 0
while i < len(data):
    ln, ty = struct.unpack_from("=IH", data, i); m = data[i:i + ln]; i += (ln + 3) & ~3
    if ty not in (36, 40): out += m; continue
    body = m[16:36]
    for t, v in attrs(m[36:]):
        if t & 0x3fff == 2:
            v = b"".join(attr(t2, v2) for t2, v2 in attrs(v) if t2 not in drop)
        body += attr(t, v)
    out += struct.pack("=I", 16 + len(body)) + m[4:16] + body
open(sys.argv[2], "wb").write(out)
