#!/usr/bin/env python3
"""A loopback HTTPS (or, with --http, plain HTTP) server for the integration
tests.

  integ_target.py CERT KEY LOG PORTFILE [--http]

Listens on 127.0.0.1 (a free port, written to PORTFILE).  Each request is a
JSON line in LOG: method, path, the Authorization and X-Api-Key headers it
got, the body.  GET .../big answers 9 MiB; anything else answers
{"method":..., "path":..., "body":...} (never a header it got)."""
import http.server
import json
import ssl
import sys
import threading

cert, key, log, portfile = sys.argv[1:5]
plain = "--http" in sys.argv[5:]
lock = threading.Lock()


class H(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, *a):
        pass

    def any(self):
        n = int(self.headers.get("Content-Length") or 0)
        body = self.rfile.read(n).decode("utf-8", "replace") if n else ""
        with lock, open(log, "a") as f:
            f.write(json.dumps({"method": self.command, "path": self.path,
                                "authorization": self.headers.get("Authorization"),
                                "x_api_key": self.headers.get("X-Api-Key"),
                                "body": body}) + "\n")
        if self.path.endswith("/big"):
            out, ctype = b"x" * (9 << 20), "application/octet-stream"
        else:
            out = json.dumps({"method": self.command, "path": self.path,
                              "body": body}).encode()
            ctype = "application/json"
        self.send_response(201 if self.command == "POST" else 200)
        self.send_header("Content-Type", ctype)
        self.send_header("Content-Length", str(len(out)))
        self.end_headers()
        if self.command != "HEAD":
            self.wfile.write(out)

    do_GET = do_POST = do_PUT = do_DELETE = do_PATCH = do_HEAD = any


srv = http.server.ThreadingHTTPServer(("127.0.0.1", 0), H)
if not plain:
    ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    ctx.load_cert_chain(cert, key)
    srv.socket = ctx.wrap_socket(srv.socket, server_side=True)
with open(portfile + ".tmp", "w") as f:
    f.write(str(srv.server_address[1]))
import os
os.rename(portfile + ".tmp", portfile)
srv.serve_forever()
