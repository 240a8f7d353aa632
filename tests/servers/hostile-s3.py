#!/usr/bin/env python3
"""A hostile S3 endpoint for the tests (not a server anyone runs): it
answers every request with what a broken or malicious server could send.
  GET /BUCKET?list-type=2...   200, a listing body of 9 MiB (over airlock's 8 MiB cap)
  HEAD or GET of a key ending in 'f' * 64: 200 with Content-Length 2**40 (over 64 GiB)
  any other GET of a key:       200 with bytes that are not the object
  PUT:                          403 with an error document of 9 MiB
Other buckets (path-style: /BUCKET/...) misbehave in one way each:
  bomb      listings carry a "billion laughs" DOCTYPE and entity references
            (an XML parser that expanded them would need gigabytes); PUT 200
  loop      listings are truncated and always give the same continuation token
  empty     listings are truncated, give a new token each time and no keys
  endless   listings are truncated, a new token and one new key of ours each time
  slow      every request: 503 SlowDown with Retry-After: 100000
  big503    every request: 503 with an error document of 9 MiB
hostile-s3.py [LOG]: LOG gets "METHOD PATH" for each request.
Prints the port it listens on (127.0.0.1), then serves until killed."""
import http.server
import itertools
import socketserver
import sys

BIG = 9 << 20
LOG = sys.argv[1] if len(sys.argv) > 1 else None
seq = itertools.count()
BOMB = (b"<?xml version='1.0'?><!DOCTYPE lolz [<!ENTITY lol 'lol'>"
        + b"".join(b"<!ENTITY lol%d '%s'>" % (i, (b"&lol%d;" % (i - 1) if i > 1 else b"&lol;") * 10)
                   for i in range(1, 10))
        + b"]><ListBucketResult><IsTruncated>false</IsTruncated>"
        + b"<Contents><Key>&lol9;</Key><Size>&lol9;</Size></Contents>" * 1000
        + b"</ListBucketResult>")


def listing(truncated, token, keys):
    body = "<?xml version='1.0'?><ListBucketResult><IsTruncated>%s</IsTruncated>" % (
        "true" if truncated else "false")
    if token:
        body += "<NextContinuationToken>%s</NextContinuationToken>" % token
    for k in keys:
        body += "<Contents><Key>%s</Key><Size>1</Size>" \
                "<LastModified>1970-01-01T00:00:00.000Z</LastModified></Contents>" % k
    return (body + "</ListBucketResult>").encode()


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

    def mode(self):
        if LOG:
            with open(LOG, "a") as f:
                f.write("%s %s\n" % (self.command, self.path))
        bucket = self.path.lstrip("/").split("?")[0].split("/")[0]
        if bucket in ("slow", "big503"):
            n = int(self.headers.get("Content-Length", "0"))
            if n:
                self.rfile.read(n)
            self.send_response(503)
            self.send_header("Retry-After", "100000")
            doc = b"<Error><Code>SlowDown</Code></Error>"
            length = BIG if bucket == "big503" else len(doc)
            self.send_header("Content-Length", str(length))
            self.end_headers()
            if self.command == "HEAD":
                return True
            try:
                if bucket == "big503":
                    for chunk in self._chunks(BIG):
                        self.wfile.write(chunk)
                else:
                    self.wfile.write(doc)
            except (BrokenPipeError, ConnectionResetError):
                pass
            return True
        if "list-type" not in self.path and not (bucket == "bomb" and self.command == "PUT"):
            return False
        if self.command == "PUT":
            self.rfile.read(int(self.headers.get("Content-Length", "0")))
            self._send(200, 0, [])
            return True
        prefix = self.path.split("prefix=")[1].split("&")[0].replace("%2F", "/")
        if bucket == "bomb":
            return self._send(200, len(BOMB), [BOMB]) or True
        if bucket == "loop":
            body = listing(True, "same", [prefix + "%064x" % 1])
        elif bucket == "empty":
            body = listing(True, "t%d" % next(seq), [])
        elif bucket == "endless":
            n = next(seq)
            body = listing(True, "t%d" % n, [prefix + "%064x" % n])
        else:
            return False
        self._send(200, len(body), [body])
        return True

    def do_GET(self):
        if self.mode():
            return
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
        if self.mode():
            return
        self.send_response(200)
        self.send_header("Content-Length", str(1 << 40))
        self.end_headers()

    def do_PUT(self):
        if self.mode():
            return
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
