#!/usr/bin/env python3
"""An S3 server for the tests that checks every request's AWS Signature Version 4 the way AWS
S3 does, with botocore's own signer: path-style GET and HEAD (with Range) of objects in a folder.

A request is refused with 403 unless its Authorization header names the access key, signs
x-amz-content-sha256 (AWS S3 requires it; UNSIGNED-PAYLOAD or the empty body's hash), signs the
session token when the server has one, and carries the signature botocore computes over the
headers it says it signed, the path exactly as sent (S3 resolves no dot segments) and the query.

Objects: ROOT/BUCKET/NAME, where NAME is the key percent-encoded whole (urllib.parse.quote with
no safe character: "data/train-0.tar" is the file "data%2Ftrain-0.tar"), so that any key, one
with ".." segments included, is one file and never a path out of the folder.

Every request's method and path (as sent) is appended to --log, one line each, with its status.

usage: sigv4_server.py --root DIR --port-file FILE --access-key K --secret-key S
                       [--session-token T] [--region us-east-1] [--log FILE]
"""

import argparse
import hashlib
import hmac
import os
import re
import sys
import threading
import urllib.parse
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

from botocore.auth import S3SigV4Auth
from botocore.awsrequest import AWSRequest
from botocore.credentials import Credentials

EMPTY_SHA256 = hashlib.sha256(b"").hexdigest()
AUTH = re.compile(
    r"^AWS4-HMAC-SHA256 Credential=([^/,]+)/(\d{8})/([^/,]+)/([^/,]+)/aws4_request,\s*"
    r"SignedHeaders=([a-z0-9;-]+),\s*Signature=([0-9a-f]{64})$"
)


def refuse_reason(handler, args):
    """Why the request's signature is not right, or None when it is."""
    auth = handler.headers.get("Authorization", "")
    m = AUTH.match(auth)
    if not m:
        return "no AWS4-HMAC-SHA256 Authorization header: " + auth
    key, day, region, service, signed, signature = m.groups()
    if key != args.access_key:
        return "unknown access key " + key
    if region != args.region or service != "s3":
        return "scope %s/%s is not %s/s3" % (region, service, args.region)
    names = signed.split(";")
    if "x-amz-content-sha256" not in names:
        return "x-amz-content-sha256 is not signed (SignedHeaders=%s)" % signed
    if "host" not in names or "x-amz-date" not in names:
        return "host and x-amz-date must be signed (SignedHeaders=%s)" % signed
    if handler.headers.get("x-amz-content-sha256") not in ("UNSIGNED-PAYLOAD", EMPTY_SHA256):
        return "x-amz-content-sha256 is " + str(handler.headers.get("x-amz-content-sha256"))
    if args.session_token:
        if "x-amz-security-token" not in names:
            return "x-amz-security-token is not signed"
        if handler.headers.get("x-amz-security-token") != args.session_token:
            return "wrong session token"
    stamp = handler.headers.get("x-amz-date", "")
    if not stamp.startswith(day):
        return "x-amz-date %s is not of the credential's day %s" % (stamp, day)
    headers = {}
    for name in names:
        values = handler.headers.get_all(name)
        if values is None:
            return "signed header %s is missing" % name
        headers[name] = ",".join(values)
    request = AWSRequest(
        method=handler.command, url="http://" + headers["host"] + handler.path, headers=headers
    )
    request.context["timestamp"] = stamp
    signer = S3SigV4Auth(Credentials(args.access_key, args.secret_key), "s3", args.region)
    if signer.signed_headers(signer.headers_to_sign(request)) != signed:
        return "botocore would sign %s, not %s" % (
            signer.signed_headers(signer.headers_to_sign(request)),
            signed,
        )
    canonical = signer.canonical_request(request)
    expected = signer.signature(signer.string_to_sign(request, canonical), request)
    if not hmac.compare_digest(expected, signature):
        return "signature mismatch; botocore's canonical request:\n" + canonical
    return None


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server_version = "sigv4-test"

    def log_message(self, fmt, *a):
        sys.stderr.write("sigv4_server: " + (fmt % a) + "\n")

    def record(self, status):
        with self.server.log_lock, open(self.server.args.log, "a") as f:
            f.write("%s %s %d\n" % (self.command, self.path, status))

    def answer(self, status, body=b"", headers=()):
        self.record(status)
        self.send_response(status)
        for k, v in headers:
            self.send_header(k, v)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        if self.command != "HEAD":
            self.wfile.write(body)

    def serve(self):
        args = self.server.args
        why = refuse_reason(self, args)
        if why is not None:
            sys.stderr.write("sigv4_server: 403 %s %s: %s\n" % (self.command, self.path, why))
            body = b"<Error><Code>SignatureDoesNotMatch</Code></Error>"
            return self.answer(403, body, [("Content-Type", "application/xml")])
        path = self.path.split("?", 1)[0]
        bucket, _, key = path.lstrip("/").partition("/")
        key = urllib.parse.unquote(key)
        name = urllib.parse.quote(key, safe="")
        file = os.path.join(args.root, bucket, name)
        if not bucket or not key or "/" in bucket or bucket in (".", "..") or not os.path.isfile(file):
            return self.answer(404, b"<Error><Code>NoSuchKey</Code></Error>")
        with open(file, "rb") as f:
            data = f.read()
        etag = '"%s"' % hashlib.md5(data).hexdigest()
        common = [("ETag", etag), ("Accept-Ranges", "bytes")]
        rng = self.headers.get("Range")
        m = re.match(r"^bytes=(\d+)-(\d*)$", rng or "")
        if rng and m:
            first = int(m.group(1))
            last = int(m.group(2)) if m.group(2) else len(data) - 1
            if first >= len(data):
                return self.answer(416, b"", [("Content-Range", "bytes */%d" % len(data))])
            last = min(last, len(data) - 1)
            content_range = ("Content-Range", "bytes %d-%d/%d" % (first, last, len(data)))
            return self.answer(206, data[first : last + 1], common + [content_range])
        return self.answer(200, data, common)

    do_GET = serve
    do_HEAD = serve


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--root", required=True)
    p.add_argument("--port-file", required=True)
    p.add_argument("--access-key", required=True)
    p.add_argument("--secret-key", required=True)
    p.add_argument("--session-token", default="")
    p.add_argument("--region", default="us-east-1")
    p.add_argument("--log", default=os.devnull)
    args = p.parse_args()
    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    server.daemon_threads = True
    server.args = args
    server.log_lock = threading.Lock()
    tmp = args.port_file + ".tmp"
    with open(tmp, "w") as f:
        f.write(str(server.server_address[1]))
    os.replace(tmp, args.port_file)
    server.serve_forever()


if __name__ == "__main__":
    main()
