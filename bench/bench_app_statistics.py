"""Unbiased means and honest intervals through the app's services, over many seeded campaigns.

The simulation of tests/sampling/test_statistics.py (synthetic 16-topic pool, two systems, DCG@3
on grades 0-2; `draws_top_up` draws from the stored q, an oracle assessor answers, the sampling
state is refitted every few rounds), repeated over many seeds per strategy: the mean of system A's
estimates must lie within 3 standard errors of the truth and the 95 % interval must cover it in
90-98 % of the campaigns. The test checks that the dashboard's estimate is exactly what the core
makes of the stored draws; this checks, with the core's own tests, that the whole is unbiased.

Usage::

    .venv/bin/python bench/bench_app_statistics.py                  # 200 campaigns per strategy
    .venv/bin/python bench/bench_app_statistics.py --campaigns 50 --strategies items

Exits 1 when a strategy misses either bound.
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

REPO_ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO_ROOT))


def run(strategy: str, campaigns: int) -> dict:
    from operations.accounts import user_create
    from tests.sampling.test_statistics import CUTOFF, simulate, simulated_campaign, synthetic_pool, truth

    coordinator = user_create(
        creator=None, username=f"coordinator-{strategy}", password="x-bench-42", role="coordinator"
    )
    assessor = user_create(
        creator=None, username=f"assessor-{strategy}", password="x-bench-42", role="assessor"
    )
    run_a, run_b, grades = synthetic_pool(11)
    true_value = truth(run_a, grades)
    campaign = simulated_campaign(coordinator, assessor, strategy, (run_a, run_b))
    values, covered = [], []
    for repetition in range(campaigns):
        result = simulate(campaign, assessor, grades, seed=1000 + repetition)
        row = next(r for r in result["systems"] if r["name"] == "A" and r["metric"] == f"DCG@{CUTOFF}")
        values.append(row["value"])
        covered.append(row["low"] <= true_value <= row["high"])
    array = np.asarray(values)
    standard_error = float(array.std(ddof=1) / np.sqrt(campaigns))
    return {
        "strategy": strategy,
        "truth": true_value,
        "mean": float(array.mean()),
        "se": standard_error,
        "coverage": float(np.mean(covered)),
        "unbiased": abs(array.mean() - true_value) <= 3 * standard_error,
        "covers": 0.90 <= float(np.mean(covered)) <= 0.98,
    }


def main() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--campaigns", type=int, default=200)
    parser.add_argument("--strategies", nargs="+", default=["active", "passive", "items"])
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as folder:
        os.environ["VAR_DIR"] = str(Path(folder) / "var")
        os.environ["DATABASE_URL"] = f"sqlite:///{Path(folder) / 'bench.sqlite3'}"
        os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")
        import django

        django.setup()
        from django.conf import settings
        from django.core.management import call_command

        settings.PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]
        from config.celery import app as celery_app

        celery_app.conf.broker_url = "memory://"
        call_command("migrate", verbosity=0)
        failed = False
        for strategy in args.strategies:
            started = time.time()
            line = run(strategy, args.campaigns)
            verdict = "ok" if line["unbiased"] and line["covers"] else "MISSED"
            failed |= verdict != "ok"
            print(
                f"{strategy}: truth {line['truth']:.4f} mean {line['mean']:.4f} +- {line['se']:.4f} "
                f"coverage {line['coverage']:.3f} over {args.campaigns} campaigns "
                f"({verdict}, {time.time() - started:.0f} s)",
                flush=True,
            )
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
