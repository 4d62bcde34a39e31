#!/usr/bin/env python3
"""How long an fsync of 8 KiB takes on this disk, back to back and after the disk
has been idle for a while: on some disks (this project's bench host among them) an
fsync right after another is much cheaper, so claims timed back to back understate a
claim made between calls. Usage: python3 benches/fsync_after_idle.py [DIR]
(DIR defaults to target, on the checkout's disk)."""

import os
import statistics
import sys
import time

directory = sys.argv[1] if len(sys.argv) > 1 else "target"
path = os.path.join(directory, "fsync-after-idle.bin")
size = 4 << 20
fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o644)
try:
    os.pwrite(fd, b"\0" * size, 0)
    os.fsync(fd)

    def median_fsync_us(idle_s, count=300):
        took = []
        for i in range(count):
            os.pwrite(fd, b"x" * 8192, (i * 8192) % size)
            began = time.perf_counter()
            os.fsync(fd)
            took.append(time.perf_counter() - began)
            if idle_s:
                time.sleep(idle_s)
        return statistics.median(took) * 1e6

    print("| idle before each fsync | median fsync of 8 KiB (µs) |")
    print("|---|---|")
    for idle_ms in (0, 0.5, 2, 5):
        print(f"| {idle_ms} ms | {median_fsync_us(idle_ms / 1000):.0f} |")
finally:
    os.close(fd)
    os.unlink(path)
