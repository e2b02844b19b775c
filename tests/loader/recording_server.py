#!/usr/bin/env python3
"""A listener for the tests that records what reaches it: the place a hostile redirect points
to, or the host a malformed S3 name would connect to. Every connection's request head (up to
64 KiB, or whatever bytes came within 2 s: a TLS hello too) is appended to --log, escaped to one
line, and answered with 200 and the bytes of --body (as if this host served the object). A
connection that sends nothing (a check that the port listens) is not recorded.

usage: recording_server.py --port-file FILE --log FILE [--body FILE]
"""

import argparse
import os
import socketserver
import threading


class Handler(socketserver.BaseRequestHandler):
    def handle(self):
        self.request.settimeout(2)
        head = b""
        try:
            while b"\r\n\r\n" not in head and len(head) < 65536:
                chunk = self.request.recv(4096)
                if not chunk:
                    break
                head += chunk
        except OSError:
            pass
        if not head:
            return  # a connection that sent nothing (a check that the port listens)
        with self.server.lock, open(self.server.log, "a") as f:
            f.write(repr(head) + "\n")
        body = self.server.body
        method = head.split(b" ", 1)[0]
        reply = b"HTTP/1.1 200 OK\r\nContent-Length: %d\r\nETag: \"elsewhere\"\r\n" % len(body)
        reply += b"Connection: close\r\n\r\n"
        try:
            self.request.sendall(reply if method == b"HEAD" else reply + body)
        except OSError:
            pass


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--port-file", required=True)
    p.add_argument("--log", required=True)
    p.add_argument("--body", default="")
    args = p.parse_args()
    server = socketserver.ThreadingTCPServer(("127.0.0.1", 0), Handler)
    server.daemon_threads = True
    server.log = args.log
    server.lock = threading.Lock()
    server.body = open(args.body, "rb").read() if args.body else b"elsewhere"
    open(args.log, "a").close()
    tmp = args.port_file + ".tmp"
    with open(tmp, "w") as f:
        f.write(str(server.server_address[1]))
    os.replace(tmp, args.port_file)
    server.serve_forever()


if __name__ == "__main__":
    main()
