"""The Content-Security-Policy middleware's cost per response: django-csp's middleware, which
builds the policy text for every response, against `SettledContentSecurityPolicy`
(labeling/middleware.py), which builds it once. Interleaved blocks of plain responses in one
process (the view makes an empty HttpResponse); medians of the blocks.

Usage::

    .venv/bin/python bench/bench_csp_header.py [--blocks 11] [--requests 2000]
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--blocks", type=int, default=11)
    parser.add_argument("--requests", type=int, default=2000)
    args = parser.parse_args()
    import django

    django.setup()
    from csp.middleware import CSPMiddleware
    from django.http import HttpRequest, HttpResponse
    from django.test import RequestFactory

    from labeling.middleware import SettledContentSecurityPolicy

    def page(request: HttpRequest) -> HttpResponse:
        return HttpResponse("ok")

    requests = [RequestFactory().get("/api/x/") for _ in range(args.requests)]
    middlewares = {"django-csp": CSPMiddleware(page), "settled": SettledContentSecurityPolicy(page)}
    per_response: dict[str, list[float]] = {name: [] for name in middlewares}
    for _ in range(args.blocks):
        for name, middleware in middlewares.items():
            started = time.perf_counter()
            for request in requests:
                middleware(request)
            per_response[name].append((time.perf_counter() - started) / len(requests) * 1e6)
    for name, values in per_response.items():
        print(f"{name}: {statistics.median(values):.1f} us per response (the view's own included)")


if __name__ == "__main__":
    main()
