"""Runs the release gate's `main` and prints, on stderr's last line, the process's peak memory
(VmHWM, which an exec resets, unlike ru_maxrss: that one counts the forking test process too)
and the seconds `main` took: the client's timeout runs from its start, and the interpreter's own
start-up (over a second on a loaded machine) is not the client's to bound."""

from __future__ import annotations

import os
import sys
import time
from pathlib import Path

from clients.release_gate import main

if __name__ == "__main__":
    started = time.monotonic()
    code = main(sys.argv[1:])
    seconds = time.monotonic() - started
    peak = next(
        line for line in Path("/proc/self/status").read_text().splitlines() if line.startswith("VmHWM")
    )
    print(f"peak {int(peak.split()[1]) / 1024:.1f} MB seconds {seconds:.2f}", file=sys.stderr, flush=True)
    os._exit(code)
