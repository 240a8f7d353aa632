#!/usr/bin/env python3
"""man-sync.py AIRLOCK [PAGE]: rewrite each "## airlock CMD" section's block
in the man page source (docs/man/airlock.1.scd) with CMD's --help as the
built AIRLOCK prints it, after a change to a command's help. The page's own
prose (options, output, config, exit codes) is left alone; a command with
no section is named on stderr (add one by hand, where it belongs).
tests/integration/t0126-install.sh checks the page against --help."""
import json, re, subprocess, sys

al = sys.argv[1]
page = sys.argv[2] if len(sys.argv) > 2 else "docs/man/airlock.1.scd"
tree = json.loads(subprocess.run([sys.executable, "tests/helpers/helptree.py", al],
                                 capture_output=True, text=True, check=True).stdout)
text = open(page).read()


def block(m):
    cmd = m.group(1)
    help_ = tree.get(cmd)
    if help_ is None:
        print(f"man-sync: no such command: airlock {cmd}", file=sys.stderr)
        return m.group(0)
    return f"## airlock {cmd}\n\n```\n{help_.rstrip()}\n```\n"


text = re.sub(r"^## airlock ([a-z -]+)\n\n```\n.*?\n```\n", block, text, flags=re.M | re.S)
have = set(re.findall(r"^## airlock ([a-z -]+)$", text, flags=re.M))
for cmd in sorted(tree):
    if cmd and cmd not in have:
        print(f"man-sync: no section for airlock {cmd}", file=sys.stderr)
open(page, "w").write(text)
