"""Servers on 127.0.0.1 for the remote-shard benchmark and the Python tests: nginx serving a
folder, SeaweedFS's S3 gateway (`weed server -s3`) with one identity and a bucket filled through
SigV4 (curl --aws-sigv4). Standard library only.

    with NginxServer(root, work) as url: ...             # url = "http://127.0.0.1:PORT"
    with SeaweedServer(weed, work) as s3: s3.put_folder(bucket, folder); s3.env(...)
"""

import json
import os
import shutil
import signal
import socket
import subprocess
import time

KEY, SECRET = "stoke-key", "stoke-secret"


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def wait_for(port, seconds):
    end = time.time() + seconds
    while time.time() < end:
        with socket.socket() as s:
            if s.connect_ex(("127.0.0.1", port)) == 0:
                return
        time.sleep(0.1)
    raise RuntimeError(f"nothing answers on port {port} after {seconds} s")


def start_nginx(root, work):
    port = free_port()
    os.makedirs(f"{work}/tmp", exist_ok=True)
    temps = "".join(f"  {t}_temp_path {work}/tmp;\n"
                    for t in ("client_body", "proxy", "fastcgi", "uwsgi", "scgi"))
    with open(f"{work}/nginx.conf", "w") as f:
        f.write(f"daemon off;\nmaster_process off;\nworker_processes 1;\n"
                f"error_log {work}/error.log;\npid {work}/nginx.pid;\n"
                f"events {{ worker_connections 256; }}\nhttp {{\n  access_log off;\n{temps}"
                f"  server {{\n    listen 127.0.0.1:{port};\n    root {root};\n"
                f"    location / {{ }}\n  }}\n}}\n")
    nginx = shutil.which("nginx") or "/usr/sbin/nginx"
    p = subprocess.Popen([nginx, "-p", work, "-c", f"{work}/nginx.conf"],
                         stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    wait_for(port, 10)
    return p, f"http://127.0.0.1:{port}"


def start_weed(weed, work):
    os.makedirs(f"{work}/data", exist_ok=True)
    with open(f"{work}/s3.json", "w") as f:
        json.dump({"identities": [{"name": "bench", "credentials": [
            {"accessKey": KEY, "secretKey": SECRET}],
            "actions": ["Admin", "Read", "Write", "List", "Tagging"]}]}, f)
    ports = []
    while len(ports) < 4:
        p = free_port()
        if p < 50000 and p not in ports:
            ports.append(p)
    log = open(f"{work}/weed.log", "w")
    proc = subprocess.Popen(
        [weed, "server", "-ip=127.0.0.1", "-ip.bind=127.0.0.1", f"-dir={work}/data",
         f"-master.port={ports[0]}", f"-volume.port={ports[1]}", f"-filer.port={ports[2]}",
         "-s3", f"-s3.port={ports[3]}", f"-s3.config={work}/s3.json", "-volume.max=16",
         # No fixed default ports (several may run side by side), nothing beyond 127.0.0.1.
         "-s3.port.iceberg=0", "-s3.port.lance=0", "-master.telemetry=false"],
        stdout=log, stderr=log)
    wait_for(ports[3], 60)
    return proc, f"http://127.0.0.1:{ports[3]}"


def curl_s3(args):
    subprocess.run(["curl", "-sS", "-f", "--retry", "20", "--retry-delay", "1",
                    "--retry-all-errors", "--aws-sigv4", "aws:amz:us-east-1:s3",
                    "--user", f"{KEY}:{SECRET}", "-o", "/dev/null"] + args, check=True)


def stop(proc):
    proc.send_signal(signal.SIGTERM)
    try:
        proc.wait(5)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait()




class NginxServer:
    """nginx serving `root` on a free port of 127.0.0.1; `work` holds its files."""

    def __init__(self, root, work):
        self.root, self.work = root, work

    def __enter__(self):
        self.proc, self.url = start_nginx(os.path.abspath(self.root), self.work)
        return self.url

    def __exit__(self, *exc):
        stop(self.proc)


class SeaweedServer:
    """`weed server -s3` on free ports of 127.0.0.1; `work` holds its data and log."""

    def __init__(self, weed, work):
        self.weed, self.work = weed, work

    def __enter__(self):
        self.proc, self.endpoint = start_weed(self.weed, self.work)
        return self

    def __exit__(self, *exc):
        stop(self.proc)

    def put_folder(self, bucket, folder, prefix="", create=True):
        """Uploads the files of `folder` (not its subfolders) as bucket/prefix<name>, making
        the bucket first unless `create` is false (it exists already)."""
        if create:
            curl_s3(["-X", "PUT", f"{self.endpoint}/{bucket}"])
        for f in sorted(os.listdir(folder)):
            if not os.path.isfile(os.path.join(folder, f)):
                continue
            curl_s3(["-T", os.path.join(folder, f), f"{self.endpoint}/{bucket}/{prefix}{f}"])

    def put_file(self, bucket, key, path):
        """Uploads the file at `path` as bucket/key (the bucket exists already)."""
        curl_s3(["-T", path, f"{self.endpoint}/{bucket}/{key}"])

    def env(self, base=None):
        """The environment stoke reads S3 settings from, pointing at this server."""
        return dict(base if base is not None else os.environ, AWS_ENDPOINT_URL=self.endpoint,
                    AWS_ACCESS_KEY_ID=KEY, AWS_SECRET_ACCESS_KEY=SECRET, AWS_REGION="us-east-1")
