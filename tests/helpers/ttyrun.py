#!/usr/bin/env python3
"""ttyrun.py [--stdout FILE] CMD...: run CMD with a new pty as its
controlling terminal, stdin, stderr and (unless --stdout names a file)
stdout; print what it wrote to the pty (bytes as they are), exit with its
status.  For the tests of output for people: colour, the pager, progress."""
import os, pty, select, sys

args = sys.argv[1:]
out_file = None
if args[:1] == ["--stdout"]:
    out_file, args = args[1], args[2:]
pid, fd = pty.fork()
if pid == 0:
    if out_file:
        f = os.open(out_file, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
        os.dup2(f, 1)
        os.close(f)
    os.execvp(args[0], args)
chunks = []
while True:
    try:
        b = os.read(fd, 65536)
    except OSError:
        break
    if not b:
        break
    chunks.append(b)
_, status = os.waitpid(pid, 0)
sys.stdout.buffer.write(b"".join(chunks))
sys.exit(os.waitstatus_to_exitcode(status))
