#!/usr/bin/env python3
"""Forge DeltaBundles for the tests: a good one, and one hostile variant per
case. Usage: mkbundle.py OUT.tar.zst BASE_ID CASE"""
import hashlib, io, json, subprocess, sys, tarfile

out, base, case = sys.argv[1], sys.argv[2], sys.argv[3]
sha = lambda b: "sha256:" + hashlib.sha256(b).hexdigest()
content = b"hello from a bundle\n"

def entry(path, data=content, mode="0644", typ="file"):
    new = {"type": typ, "mode": mode}
    if typ != "dir":
        new.update(size=len(data), sha256=sha(data))
    return {"op": "add", "path": path, "old": None, "new": new}

entries = [entry("new.txt")]
members = [("files/new.txt", content, 0o644, tarfile.REGTYPE, None)]
index_first, compress, canonical = True, True, True

def member(name, data=content, mode=0o644, typ=tarfile.REGTYPE, link=None):
    members.append((name, data, mode, typ, link))

hostile_paths = {
    "absolute": "/etc/evil", "dotdot": "../evil", "dotdot-inner": "a/../../evil", "empty-comp": "a//b",
    "dot": "./evil", "backslash": "a\\b", "long": "x" * 300, "reserved": ".airlock/evil",
    "reserved-case": ".AIRLOCK/evil", "nul": "a\u0000b", "newline": "a\nb",
}
if case == "good":
    pass
elif case in hostile_paths:
    entries = [entry(hostile_paths[case])]
    members = [("files/" + hostile_paths[case], content, 0o644, tarfile.REGTYPE, None)]
elif case == "casefold":
    entries = [entry("README"), entry("readme")]
    members = [("files/README", content, 0o644, tarfile.REGTYPE, None), ("files/readme", content, 0o644, tarfile.REGTYPE, None)]
elif case == "hardlink":
    entries.append(entry("link.txt"))
    member("files/link.txt", b"", 0o644, tarfile.LNKTYPE, "files/new.txt")
elif case == "device":
    entries.append(entry("dev"))
    member("files/dev", b"", 0o644, tarfile.CHRTYPE)
elif case == "fifo":
    entries.append(entry("fifo"))
    member("files/fifo", b"", 0o644, tarfile.FIFOTYPE)
elif case == "setuid-index":
    entries = [entry("new.txt", mode="4755")]
    members = [("files/new.txt", content, 0o4755, tarfile.REGTYPE, None)]
elif case == "setuid-member":
    members = [("files/new.txt", content, 0o4644, tarfile.REGTYPE, None)]
elif case == "extra-member":
    member("files/extra.txt")
elif case == "missing-member":
    entries.append(entry("other.txt"))
elif case == "duplicate-member":
    member("files/new.txt")
elif case == "size":
    entries[0]["new"]["size"] += 1
elif case == "digest":
    members = [("files/new.txt", b"HELLO from a bundle\n", 0o644, tarfile.REGTYPE, None)]
elif case == "noncanonical":
    canonical = False
elif case == "index-not-first":
    index_first = False
elif case == "plain-tar":
    compress = False
elif case == "unsorted":
    entries = [entry("z.txt"), entry("a.txt")]
    members = [("files/z.txt", content, 0o644, tarfile.REGTYPE, None), ("files/a.txt", content, 0o644, tarfile.REGTYPE, None)]
elif case == "outside-member":
    members = [("../../evil", content, 0o644, tarfile.REGTYPE, None)]
else:
    sys.exit("unknown case " + case)

if case != "unsorted":
    key = lambda p: p.replace("/", "\x00")  # airlock's path order: '/' first
    entries.sort(key=lambda e: key(e["path"]))
    members.sort(key=lambda m: key(m[0]))
index = {"format": "airlock-bundle", "version": 1, "base": base, "head": base, "entries": entries}
if canonical:
    idx = json.dumps(index, sort_keys=True, separators=(",", ":"), ensure_ascii=True).encode()
else:
    idx = json.dumps(index, indent=1).encode()

buf = io.BytesIO()
with tarfile.open(fileobj=buf, mode="w", format=tarfile.PAX_FORMAT) as tar:
    def add(name, data, mode, typ, link):
        ti = tarfile.TarInfo(name); ti.mode = mode; ti.type = typ; ti.mtime = 0
        if link: ti.linkname = link
        if typ == tarfile.REGTYPE:
            ti.size = len(data); tar.addfile(ti, io.BytesIO(data))
        else:
            tar.addfile(ti)
    if index_first:
        add(".airlock/bundle.json", idx, 0o644, tarfile.REGTYPE, None)
    for m in members:
        add(*m)
    if not index_first:
        add(".airlock/bundle.json", idx, 0o644, tarfile.REGTYPE, None)
data = buf.getvalue()
if compress:
    data = subprocess.run(["zstd", "-q", "-c"], input=data, stdout=subprocess.PIPE, check=True).stdout
open(out, "wb").write(data)
