#!/usr/bin/env python3
"""ptyrun.py OUT -- CMD...: run CMD as the session leader of a new pty, the
pty its controlling terminal and stdin (as an operator's shell would run it),
its stdout and stderr to OUT.stdout / OUT.stderr.  While CMD runs, a line is
typed on the pty every 50 ms.  Afterwards the pty is checked as the operator
would find it; prints one line per finding:

  typed-line-read   <yes|no>   the typed line came back in CMD's output
  pty-received      <hex>      what CMD (or anything it started) wrote to the pty
  ldisc-ok          <yes|no>   the pty still echoes and reads lines (N_TTY)
  termios-same      <yes|no>   the terminal's settings are as before
  foreground        <ours|theirs>  who is the pty's foreground process group
  rc                N
"""
import fcntl, os, select, struct, subprocess, sys, termios, time

out, cmd = sys.argv[1], sys.argv[3:]
master, slave = os.openpty()
# no echo: whatever the master reads was written by CMD or its children
attrs = termios.tcgetattr(slave)
attrs[3] &= ~(termios.ECHO | termios.ECHONL)
termios.tcsetattr(slave, termios.TCSANOW, attrs)
before = termios.tcgetattr(slave)
TYPED = b"operator-typed-secret\n"


def setup():
    os.setsid()
    fcntl.ioctl(0, termios.TIOCSCTTY, 0)


p = subprocess.Popen(cmd, stdin=slave, stdout=open(out + ".stdout", "wb"), stderr=open(out + ".stderr", "wb"),
                     preexec_fn=setup, close_fds=True)
received = b""
deadline = time.monotonic() + 60
while p.poll() is None and time.monotonic() < deadline:
    os.write(master, TYPED)
    r, _, _ = select.select([master], [], [], 0.05)
    if r:
        received += os.read(master, 4096)
if p.poll() is None:
    p.kill()
rc = p.wait()
# drain what is left, then see that the terminal works: a line typed is
# readable on the slave side
while select.select([master], [], [], 0.2)[0]:
    received += os.read(master, 4096)
termios.tcflush(slave, termios.TCIFLUSH)
os.write(master, b"after-the-run\n")
ok = False
t_end = time.monotonic() + 5
buf = b""
while time.monotonic() < t_end and b"after-the-run" not in buf:
    if select.select([slave], [], [], 0.1)[0]:
        buf += os.read(slave, 4096)
ok = b"after-the-run\n" in buf
ldisc = struct.unpack("i", fcntl.ioctl(slave, termios.TIOCGETD, b"\0\0\0\0"))[0]
text = open(out + ".stdout", "rb").read() + open(out + ".stderr", "rb").read()
print("typed-line-read", "yes" if b"operator-typed-secret" in text else "no")
print("pty-received", received.hex() or "-")
print("ldisc-ok", "yes" if ok and ldisc == 0 else "no")
print("termios-same", "yes" if termios.tcgetattr(slave) == before else "no")
try:
    fg = os.tcgetpgrp(slave)
    print("foreground", "ours" if fg == p.pid or fg <= 0 else "theirs")
except OSError:
    print("foreground", "ours")
print("rc", rc)
