#!/usr/bin/env python3
"""Independent reference for the ledger (docs/formats.md): RFC 6962 roots
and proofs recomputed from an export's entries with nothing but hashlib.
  ledger_ref.py roots EXPORT            check every C line's root; print count
  ledger_ref.py path EXPORT I N         the inclusion proof of entry I in size N
  ledger_ref.py proof EXPORT M N        the consistency proof of size M in N
  ledger_ref.py resign EXPORT KEY OUT   recompute every checkpoint and sign it
                                        with KEY (openssl), after an edit"""
import hashlib, subprocess, sys, tempfile

H = lambda b: hashlib.sha256(b).digest()
leaf = lambda e: H(b"\x00" + e)
node = lambda l, r: H(b"\x01" + l + r)

def split(n):
    k = 1
    while k << 1 < n:
        k <<= 1
    return k

def mth(d):
    if len(d) == 1:
        return d[0]
    k = split(len(d))
    return node(mth(d[:k]), mth(d[k:]))

def path(m, d):
    if len(d) <= 1:
        return []
    k = split(len(d))
    return path(m, d[:k]) + [mth(d[k:])] if m < k else path(m - k, d[k:]) + [mth(d[:k])]

def subproof(m, d, b):
    if m == len(d):
        return [] if b else [mth(d)]
    k = split(len(d))
    return subproof(m, d[:k], b) + [mth(d[k:])] if m <= k else subproof(m - k, d[k:], False) + [mth(d[:k])]

def read(path_):
    lines = open(path_, "rb").read().split(b"\n")
    return lines, [leaf(l[2:]) for l in lines if l.startswith(b"E ")]

cmd = sys.argv[1]
lines, leaves = read(sys.argv[2])
if cmd == "roots":
    n = 0
    for l in lines:
        if l.startswith(b"C "):
            size, root = l.split()[1:3]
            assert mth(leaves[: int(size)]).hex() == root.decode(), "root of %s differs" % size.decode()
            n += 1
    print(n)
elif cmd == "path":
    print(" ".join(h.hex() for h in path(int(sys.argv[3]), leaves[: int(sys.argv[4])])))
elif cmd == "proof":
    print(" ".join(h.hex() for h in subproof(int(sys.argv[3]), leaves[: int(sys.argv[4])], True)))
elif cmd == "resign":
    key, out = sys.argv[3], sys.argv[4]
    origin = [l for l in lines if l.startswith(b"origin ")][0][7:].decode()
    res = []
    for l in lines:
        if l.startswith(b"C "):
            size, _, t, _ = l.decode().split()[1:5]
            root = mth(leaves[: int(size)]).hex()
            note = "airlock-ledger checkpoint v1\norigin %s\nsize %s\nroot %s\ntime %s\n" % (origin, size, root, t)
            with tempfile.NamedTemporaryFile() as f:
                f.write(note.encode()); f.flush()
                sig = subprocess.run(["openssl", "pkeyutl", "-sign", "-inkey", key, "-rawin", "-in", f.name],
                                     stdout=subprocess.PIPE, check=True).stdout.hex()
            l = ("C %s %s %s %s" % (size, root, t, sig)).encode()
        res.append(l)
    open(out, "wb").write(b"\n".join(res))
