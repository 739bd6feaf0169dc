#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""A scriptable stand-in for a cgperf collector, for the push tests.

It accepts POSTs the way the exporter will (gzip'd body, bearer token,
X-Cgperf-Sequence), answers each request with the next status of --statuses
(then 200), and records what it saw in --dir:

  requests.log   one line per request: N TIME SEQ STATUS VERDICT
                 (TIME: Unix seconds; SEQ: the header, or -; VERDICT: ok, or
                 why the request was refused: bad-method, bad-content-type,
                 bad-content-encoding, bad-token, bad-seq, bad-gzip, too-big)
  requests.jsonl the same with every header, for people debugging
  accepted.log   SEQ of each request answered 2xx, in order
  body-SEQ       the decompressed body of an accepted batch

A malformed request gets 400 (401 for a wrong token) whatever the script
says, so a test that sees only "ok" verdicts knows the requests were right.
Several runs may share --dir (a collector restarting): files are appended.

Statuses: comma-separated HTTP codes, or "hang" (read the request, never
answer), "store-hang" (accept the batch as a 200 would, then never answer:
an ack lost) or "close" (read the request, close the connection
unanswered). A 2xx for a sequence number accepted before says "duplicate"
in its body, as cgperf-exporter does.
--retry-after VALUE is sent with 429 and 503; "date+N" sends the HTTP date
N seconds ahead. --port 0 picks a free port; --port-file gets it once the
socket listens. With --tls-cert/--tls-key it speaks HTTPS, and with
--client-ca it requires a client certificate signed by that CA.
"""
import argparse
import email.utils
import gzip
import http.server
import json
import os
import signal
import socketserver
import ssl
import sys
import threading
import time

MAX_BODY = 64 << 20


class State:
    def __init__(self, args):
        self.args = args
        self.statuses = [s.strip() for s in args.statuses.split(",") if s.strip()] if args.statuses else []
        self.lock = threading.Lock()
        self.n = 0
        self.seen = set()  # sequence numbers accepted

    def next_status(self):
        with self.lock:
            self.n += 1
            st = self.statuses.pop(0) if self.statuses else "200"
            return self.n, st

    def record(self, name, line):
        with self.lock:
            with open(os.path.join(self.args.dir, name), "a") as f:
                f.write(line)
                f.flush()


class Handler(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server_version = "fake-collector/1"

    def log_message(self, fmt, *a):
        if self.server.state.args.verbose:
            sys.stderr.write("fake_collector: " + (fmt % a) + "\n")

    def reply(self, status, text="", extra=None):
        body = (text + "\n").encode() if text else b""
        self.send_response(status)
        for k, v in (extra or {}).items():
            self.send_header(k, v)
        self.send_header("Content-Type", "text/plain")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        if body:
            self.wfile.write(body)

    def do_GET(self):
        self.reply(405, "POST batches here")

    def do_POST(self):
        st = self.server.state
        args = st.args
        length = int(self.headers.get("Content-Length", "0") or 0)
        if length > MAX_BODY:
            self.reply(413, "too big")
            self.close_connection = True
            return
        raw = self.rfile.read(length) if length else b""
        n, script = st.next_status()
        seq = self.headers.get("X-Cgperf-Sequence", "-")
        verdict = "ok"
        body = None
        if self.headers.get("Content-Type") != "application/x-protobuf":
            verdict = "bad-content-type"
        elif self.headers.get("Content-Encoding") != "gzip":
            verdict = "bad-content-encoding"
        elif args.token is not None and self.headers.get("Authorization") != "Bearer " + args.token:
            verdict = "bad-token"
        elif not seq.isdigit():
            verdict = "bad-seq"
        else:
            try:
                body = gzip.decompress(raw)
            except Exception:
                verdict = "bad-gzip"
        if verdict != "ok":
            status = 401 if verdict == "bad-token" else 400
        elif script in ("hang", "store-hang"):
            status = script
        elif script == "close":
            status = "close"
        else:
            status = int(script)
        now = time.time()
        st.record("requests.log", "%d %.3f %s %s %s\n" % (n, now, seq, status, verdict))
        st.record("requests.jsonl", json.dumps({
            "n": n, "time": now, "seq": seq, "status": status, "verdict": verdict,
            "path": self.path, "length": length, "headers": dict(self.headers.items()),
        }) + "\n")
        if status == "store-hang":
            st.record("accepted.log", "%s\n" % seq)
            with open(os.path.join(args.dir, "body-%s" % seq), "wb") as f:
                f.write(body)
            st.seen.add(seq)
        if status in ("hang", "store-hang"):
            while True:
                time.sleep(3600)
        if status == "close":
            self.close_connection = True
            return
        extra = {}
        if status in (429, 503) and args.retry_after:
            ra = args.retry_after
            if ra.startswith("date+"):
                ra = email.utils.formatdate(time.time() + float(ra[5:]), usegmt=True)
            extra["Retry-After"] = ra
        text = "scripted %d (%s)" % (status, verdict)
        if 200 <= status < 300:
            with open(os.path.join(args.dir, "body-%s" % seq), "wb") as f:
                f.write(body)
            st.record("accepted.log", "%s\n" % seq)
            text = "duplicate\n" if seq in st.seen else "stored\n"
            st.seen.add(seq)
        self.reply(status, text, extra)


class Server(socketserver.ThreadingMixIn, http.server.HTTPServer):
    daemon_threads = True
    allow_reuse_address = True


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--dir", required=True)
    ap.add_argument("--host", default="127.0.0.1")
    ap.add_argument("--port", type=int, default=0)
    ap.add_argument("--port-file")
    ap.add_argument("--token")
    ap.add_argument("--statuses", default="")
    ap.add_argument("--retry-after")
    ap.add_argument("--tls-cert")
    ap.add_argument("--tls-key")
    ap.add_argument("--client-ca")
    ap.add_argument("--verbose", action="store_true")
    args = ap.parse_args()
    os.makedirs(args.dir, exist_ok=True)

    srv = Server((args.host, args.port), Handler)
    srv.state = State(args)
    if args.tls_cert:
        ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        ctx.load_cert_chain(args.tls_cert, args.tls_key)
        if args.client_ca:
            ctx.verify_mode = ssl.CERT_REQUIRED
            ctx.load_verify_locations(args.client_ca)
        srv.socket = ctx.wrap_socket(srv.socket, server_side=True)
    signal.signal(signal.SIGTERM, lambda *_: os._exit(0))
    if args.port_file:
        tmp = args.port_file + ".tmp"
        with open(tmp, "w") as f:
            f.write("%d\n" % srv.server_address[1])
        os.rename(tmp, args.port_file)
    srv.serve_forever()


if __name__ == "__main__":
    main()
