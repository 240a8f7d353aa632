#!/usr/bin/env python3
"""A fault-injecting HTTP proxy for the tests (not a server anyone runs): it
forwards every request to a real S3 server unchanged (the Host header too, so
SigV4 signatures still verify) and, when its plan says so, breaks one instead.
  fault-proxy.py UPSTREAM_PORT PLAN LOG
Prints the port it listens on (127.0.0.1), then serves until killed.
PLAN is read at each request: its first line whose METHOD matches (or is *)
is the request's fate and is removed, unless it starts with "always":
  [always] METHOD pass       forward it
  [always] METHOD reset      read half the request's body, then reset the connection
  [always] METHOD close      read the request, close without an answer
  [always] METHOD 5xx|4xx    read the request, answer that status (503: S3's SlowDown)
  [always] METHOD corrupt    forward it, flip the last byte of the answer's body
No matching line: forward it.  LOG gets one line per request:
  METHOD PATH FATE STATUS     (STATUS: the answer's, or - when none was sent)"""
import http.client
import http.server
import socket
import socketserver
import struct
import sys
import threading

UPSTREAM = int(sys.argv[1])
PLAN, LOG = sys.argv[2], sys.argv[3]
lock = threading.Lock()

CODES = {500: "InternalError", 502: "BadGateway", 503: "SlowDown", 504: "GatewayTimeout",
         400: "BadRequest", 403: "AccessDenied"}


def fate(method):
    with lock:
        try:
            with open(PLAN) as f:
                lines = f.read().splitlines()
        except FileNotFoundError:
            return "pass"
        for i, line in enumerate(lines):
            w = line.split()
            always = bool(w) and w[0] == "always"
            if always:
                w = w[1:]
            if len(w) != 2 or w[0] not in (method, "*"):
                continue
            if not always:
                del lines[i]
                with open(PLAN, "w") as f:
                    f.write("".join(l + "\n" for l in lines))
            return w[1]
        return "pass"


def log(*words):
    with lock:
        with open(LOG, "a") as f:
            f.write(" ".join(str(w) for w in words) + "\n")


class H(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, *a):
        pass

    def body(self, limit=None):
        n = int(self.headers.get("Content-Length", "0"))
        return self.rfile.read(n if limit is None else min(n, limit))

    def handle_one(self):
        what = fate(self.command)
        if what == "reset":
            n = int(self.headers.get("Content-Length", "0"))
            self.body(n // 2)
            log(self.command, self.path, what, "-")
            self.connection.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER,
                                       struct.pack("ii", 1, 0))
            self.connection.close()
            self.close_connection = True
            return
        data = self.body()
        if what == "close":
            log(self.command, self.path, what, "-")
            self.connection.shutdown(socket.SHUT_RDWR)
            self.close_connection = True
            return
        if what.isdigit():
            code = int(what)
            doc = ("<?xml version='1.0' encoding='UTF-8'?><Error><Code>%s</Code>"
                   "<Message>injected</Message></Error>" % CODES.get(code, "Injected")).encode()
            log(self.command, self.path, what, code)  # before the client can see it
            self.send_response(code)
            self.send_header("Content-Type", "application/xml")
            self.send_header("Content-Length", str(len(doc)))
            self.end_headers()
            if self.command != "HEAD":
                self.wfile.write(doc)
            return
        up = http.client.HTTPConnection("127.0.0.1", UPSTREAM, timeout=60)
        up.putrequest(self.command, self.path, skip_host=True, skip_accept_encoding=True)
        for k, v in self.headers.items():
            if k.lower() not in ("expect", "connection", "content-length"):
                up.putheader(k, v)
        if self.command in ("PUT", "POST") or data:
            up.putheader("Content-Length", str(len(data)))
        up.endheaders(data if data else None)
        resp = up.getresponse()
        payload = resp.read()
        if what == "corrupt" and payload:
            payload = payload[:-1] + bytes([payload[-1] ^ 1])
        up.close()
        log(self.command, self.path, what, resp.status)
        self.send_response(resp.status)
        length = None
        for k, v in resp.getheaders():
            if k.lower() in ("transfer-encoding", "connection"):
                continue
            if k.lower() == "content-length":
                length = v
                continue
            self.send_header(k, v)
        self.send_header("Content-Length", length if self.command == "HEAD" and length
                         else str(len(payload)))
        self.end_headers()
        if self.command != "HEAD":
            self.wfile.write(payload)

    do_GET = do_PUT = do_HEAD = do_DELETE = do_POST = handle_one


class S(socketserver.ThreadingMixIn, http.server.HTTPServer):
    daemon_threads = True


srv = S(("127.0.0.1", 0), H)
print(srv.server_address[1], flush=True)
srv.serve_forever()
