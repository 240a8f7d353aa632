#!/usr/bin/env python3
"""A test host for the egress tests: run inside a network namespace the test
made (or on loopback for the bench).

  egress_target.py ADDR LOG [--https CERT KEY] [--http-port P] [--https-port P] [--no-udp]

HTTP on ADDR:80 (or --http-port), HTTPS on ADDR:443 when given a certificate,
a UDP listener on ADDR:53; every TCP connection and UDP datagram is a line in
LOG ("tcp PORT PEER" / "udp 53 PEER"), so a test can say that nothing
arrived.  GET /hello answers "hello <Host>"; GET /bytes/N answers N zero bytes;
POST /echo answers the request body.  Prints "ready" when listening."""
import http.server
import socket
import ssl
import sys
import threading

addr, log = sys.argv[1], sys.argv[2]
args = sys.argv[3:]
cert = key = None
http_port, https_port = 80, 443
use_udp = True
while args:
    a = args.pop(0)
    if a == "--https":
        cert, key = args.pop(0), args.pop(0)
    elif a == "--http-port":
        http_port = int(args.pop(0))
    elif a == "--https-port":
        https_port = int(args.pop(0))
    elif a == "--no-udp":
        use_udp = False
lock = threading.Lock()


def note(line):
    with lock, open(log, "a") as f:
        f.write(line + "\n")


ZERO = bytes(1 << 20)


class H(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, *a):
        pass

    def do_GET(self):
        if self.path.startswith("/bytes/"):
            n = int(self.path[7:])
            self.send_response(200)
            self.send_header("Content-Length", str(n))
            self.end_headers()
            mv = memoryview(ZERO)
            while n > 0:
                k = min(n, len(ZERO))
                self.wfile.write(mv[:k])
                n -= k
            return
        body = ("hello %s\n" % self.headers.get("Host", "")).encode()
        self.send_response(200 if self.path == "/hello" else 404)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def do_POST(self):
        n = int(self.headers.get("Content-Length", "0"))
        body = self.rfile.read(n)
        self.send_response(200)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)


class S(http.server.ThreadingHTTPServer):
    daemon_threads = True
    address_family = socket.AF_INET6 if ":" in addr else socket.AF_INET

    def get_request(self):
        c, peer = self.socket.accept()
        note("tcp %d %s" % (self.server_address[1], peer[0]))
        return c, peer


servers = [S((addr, http_port), H)]
if cert:
    s = S((addr, https_port), H)
    ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    ctx.load_cert_chain(cert, key)
    s.socket = ctx.wrap_socket(s.socket, server_side=True, do_handshake_on_connect=False)
    servers.append(s)
for s in servers:
    threading.Thread(target=s.serve_forever, daemon=True).start()
if not use_udp:
    print("ready", flush=True)
    threading.Event().wait()
udp = socket.socket(socket.AF_INET6 if ":" in addr else socket.AF_INET, socket.SOCK_DGRAM)
udp.bind((addr, 53))
print("ready", flush=True)
while True:
    data, peer = udp.recvfrom(65536)
    note("udp 53 %s" % peer[0])
