"""Runs the release gate's `main` and prints the process's peak memory (VmHWM, which an exec
resets, unlike ru_maxrss: that one counts the forking test process too) on stderr's last line."""

from __future__ import annotations

import os
import sys
from pathlib import Path

from clients.release_gate import main

if __name__ == "__main__":
    code = main(sys.argv[1:])
    peak = next(
        line for line in Path("/proc/self/status").read_text().splitlines() if line.startswith("VmHWM")
    )
    print(f"peak {int(peak.split()[1]) / 1024:.1f} MB", file=sys.stderr, flush=True)
    os._exit(code)
