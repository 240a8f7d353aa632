#!/usr/bin/env python3
"""Independent reference for the snapshot id (docs/formats.md): compute the
id of a directory tree with nothing but hashlib, to check airlock against."""
import hashlib, os, stat, struct, sys

MAGIC = b"ALTREE\x00\x01"

def node(path):
    entries = []
    total = 0
    for name in sorted(os.listdir(os.fsencode(path))):
        p = os.path.join(os.fsencode(path), name)
        st = os.lstat(p)
        if stat.S_ISREG(st.st_mode):
            with open(p, "rb") as f:
                digest = hashlib.sha256(f.read()).digest()
            t, mode, size = b"f", st.st_mode & 0o7777, st.st_size
            total += size
        elif stat.S_ISLNK(st.st_mode):
            target = os.readlink(p)
            digest = hashlib.sha256(target).digest()
            t, mode, size = b"l", 0o777, len(target)
        elif stat.S_ISDIR(st.st_mode):
            digest, size = node(p)
            t, mode = b"d", st.st_mode & 0o7777
            total += size
        else:
            raise SystemExit("unsupported: %r" % p)
        entries.append(t + struct.pack(">HQ", mode, size) + digest +
                       struct.pack(">H", len(name)) + name)
    enc = MAGIC + struct.pack(">I", len(entries)) + b"".join(entries)
    return hashlib.sha256(enc).digest(), total

print("sha256:" + node(sys.argv[1])[0].hex())
