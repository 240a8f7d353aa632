#!/usr/bin/env python3
"""helptree.py AIRLOCK: every command path of the CLI and its --help text,
found by following the "commands:" and "subcommands:" lists from
`airlock --help` down (and the few named only in a usage line: EXTRA).  Prints one JSON object {"path": "help text", ...}
("" is airlock itself)."""
import json, re, subprocess, sys

al = sys.argv[1]


def helptext(path):
    p = subprocess.run([al] + path + ["--help"], capture_output=True, text=True)
    return p.stdout + p.stderr


def children(text):
    out, on = [], False
    for line in text.splitlines():
        if re.match(r"^(sub)?commands:$", line):
            on = True
            continue
        if on:
            m = re.match(r"^  ([a-z][a-z-]*)\s", line + " ")
            if not m:
                break
            out.append(m.group(1))
    return out


# verbs whose help names their subcommands in the usage line only
EXTRA = ["audit show", "audit checkpoint", "audit export", "audit verify", "audit pubkey",
         "audit prove", "run show"]
tree, todo = {}, [[]] + [e.split() for e in EXTRA]
while todo:
    path = todo.pop(0)
    text = helptext(path)
    tree[" ".join(path)] = text
    todo += [path + [c] for c in children(text)]
json.dump(tree, sys.stdout, indent=1, sort_keys=True)
