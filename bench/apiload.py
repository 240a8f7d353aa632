#!/usr/bin/env python3
"""Closed-loop load driver for bench/api.sh: N clients each doing one thing
in a loop for D seconds; prints p50 p99 (ms) and completions/s.

  apiload.py http URL TOKEN PROJECT N SECONDS   POST a /bin/true run with wait
  apiload.py cli  AIRLOCK HOME PROJECT N SECONDS  airlock run PROJECT -- /bin/true
"""
import http.client, json, statistics, subprocess, sys, threading, time, urllib.parse

mode = sys.argv[1]
n, secs = int(sys.argv[5]), float(sys.argv[6])
lat, lock, stop = [], threading.Lock(), time.monotonic() + secs
fail = [0]

def http_client():
    u = urllib.parse.urlparse(sys.argv[2])
    c = http.client.HTTPConnection(u.hostname, u.port, timeout=120)
    body = json.dumps({"argv": ["/bin/true"], "wait": True})
    hdr = {"Authorization": "Bearer " + sys.argv[3], "Content-Type": "application/json"}
    while time.monotonic() < stop:
        s = time.perf_counter()
        c.request("POST", "/api/projects/%s/runs" % sys.argv[4], body=body, headers=hdr)
        r = c.getresponse(); r.read()
        d = time.perf_counter() - s
        with lock:
            if r.status == 200: lat.append(d)
            else: fail[0] += 1

def cli_client():
    cmd = [sys.argv[2], "--home", sys.argv[3], "run", sys.argv[4], "--", "/bin/true"]
    while time.monotonic() < stop:
        s = time.perf_counter()
        rc = subprocess.run(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL).returncode
        d = time.perf_counter() - s
        with lock:
            if rc == 0: lat.append(d)
            else: fail[0] += 1

t0 = time.monotonic()
ts = [threading.Thread(target=http_client if mode == "http" else cli_client) for _ in range(n)]
for t in ts: t.start()
for t in ts: t.join()
el = time.monotonic() - t0
lat.sort()
p = lambda q: lat[min(len(lat) - 1, int(q * len(lat)))] * 1000
print("%.1f %.1f %.1f %d" % (p(0.5), p(0.99), len(lat) / el, fail[0]))
