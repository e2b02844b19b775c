#!/usr/bin/env python3
"""A read-only FUSE view of a folder that answers every request after a delay, as a network
file system (NFS, a cloud file share) does: to measure what a listing that waits on a server
costs stoke's indexing, and what its threaded listing saves.

    python3 -m venv /tmp/fusevenv && /tmp/fusevenv/bin/pip install mfusepy   # libfuse3 (apt fuse3)
    /tmp/fusevenv/bin/python bench/slow_fs.py SOURCE MOUNTPOINT --latency-ms 1 &
    ...                                                   # read MOUNTPOINT
    fusermount3 -u MOUNTPOINT

Every getattr, readdir, readlink, open and read waits --latency-ms first (in its own thread, so
requests overlap as they do on a server). Attributes and directory entries are not cached by the
kernel (timeouts 0), so each lookup is a round trip.
"""

import argparse
import errno
import os
import sys
import time

import mfusepy as fuse


class SlowFs(fuse.Operations):
    def __init__(self, root, latency_s):
        self.root = os.path.realpath(root)
        self.latency_s = latency_s

    def _path(self, path):
        time.sleep(self.latency_s)
        return os.path.join(self.root, path.lstrip("/"))

    def getattr(self, path, fh=None):
        try:
            st = os.lstat(self._path(path))
        except OSError as e:
            raise fuse.FuseOSError(e.errno)
        return {k: getattr(st, k) for k in ("st_mode", "st_nlink", "st_size", "st_uid", "st_gid",
                                            "st_atime", "st_mtime", "st_ctime", "st_ino")}

    def readdir(self, path, fh):
        try:
            return [".", ".."] + os.listdir(self._path(path))
        except OSError as e:
            raise fuse.FuseOSError(e.errno)

    def readlink(self, path):
        return os.readlink(self._path(path))

    def open(self, path, flags):
        if flags & (os.O_WRONLY | os.O_RDWR):
            raise fuse.FuseOSError(errno.EROFS)
        return os.open(self._path(path), os.O_RDONLY)

    def read(self, path, size, offset, fh):
        time.sleep(self.latency_s)
        return os.pread(fh, size, offset)

    def release(self, path, fh):
        os.close(fh)
        return 0


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("source")
    p.add_argument("mountpoint")
    p.add_argument("--latency-ms", type=float, default=1.0)
    a = p.parse_args()
    os.makedirs(a.mountpoint, exist_ok=True)
    fuse.FUSE(SlowFs(a.source, a.latency_ms / 1000), a.mountpoint, foreground=True, ro=True,
              nothreads=False, attr_timeout=0, entry_timeout=0, negative_timeout=0)


if __name__ == "__main__":
    sys.exit(main())
