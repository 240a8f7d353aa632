#!/usr/bin/env python3
"""A hostile S3 endpoint for the tests (not a server anyone runs): it
answers every request with what a broken or malicious server could send.
  GET /BUCKET?list-type=2...   200, a listing body of 9 MiB (over airlock's 8 MiB cap)
  HEAD or GET of a key ending in 'f' * 64: 200 with Content-Length 2**40 (over 64 GiB)
  any other GET of a key:       200 with bytes that are not the object
  PUT:                          403 with an error document of 9 MiB
Prints the port it listens on (127.0.0.1), then serves until killed."""
import http.server
import socketserver
import sys

BIG = 9 << 20


class H(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, *a):
        pass

    def _send(self, code, length, body_iter):
        self.send_response(code)
        self.send_header("Content-Type", "application/xml")
        self.send_header("Content-Length", str(length))
        self.end_headers()
        try:
            for chunk in body_iter:
                self.wfile.write(chunk)
        except (BrokenPipeError, ConnectionResetError):
            pass

    def _chunks(self, total):
        head = b"<?xml version='1.0'?><ListBucketResult><IsTruncated>false</IsTruncated>"
        yield head
        left = total - len(head)
        while left > 0:
            n = min(left, 1 << 16)
            yield b" " * n
            left -= n

    def do_GET(self):
        if "?" in self.path and "list-type" in self.path:
            return self._send(200, BIG, self._chunks(BIG))
        if self.path.endswith("f" * 64):
            self.send_response(200)
            self.send_header("Content-Length", str(1 << 40))
            self.end_headers()
            self.wfile.write(b"x" * 4096)
            return
        body = b"not the object you asked for"
        return self._send(200, len(body), [body])

    def do_HEAD(self):
        self.send_response(200)
        self.send_header("Content-Length", str(1 << 40))
        self.end_headers()

    def do_PUT(self):
        n = int(self.headers.get("Content-Length", "0"))
        while n > 0:
            got = self.rfile.read(min(n, 1 << 16))
            if not got:
                break
            n -= len(got)
        return self._send(403, BIG, self._chunks(BIG))


class S(socketserver.ThreadingMixIn, http.server.HTTPServer):
    daemon_threads = True


srv = S(("127.0.0.1", 0), H)
print(srv.server_address[1], flush=True)
sys.stdout.close()
srv.serve_forever()
