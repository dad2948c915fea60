"""Time the exact moments and query-level sampling distributions at MSLR-WEB30k scale.

A synthetic pool of 30,000 queries x 120 documents x 5 grades (seeded Dirichlet label model,
random permutations of all 120 documents per system, costs ``log(1 + length)`` rescaled to a
mean query cost of 1), evaluated at full depth (K = 120) and at K = 10, on one core.

Cases: one-system q* for DCG and ERR, two-system q* for DCG and ERR (the ERR cross moment
E[L1 L2]), and a 3-system leaderboard. When ``estimation.sampling.queries`` offers
``optimal_query_distribution`` it is timed end to end; otherwise the moments plus the q*
formula (``q* ∝ p sqrt(E[(L - R)^2 | x]) / sqrt(lambda)``, normalised, mixed with p).

Usage: ``python bench/bench_core.py [--queries 30000] [--repeat 5] [--quick]``. Writes
``bench/results/core.json`` and ``bench/results/core.md``.
"""

from __future__ import annotations

import os

# One core: set before numpy is imported, so BLAS never starts its thread pool.
for _variable in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ[_variable] = "1"

import argparse  # noqa: E402
import gc  # noqa: E402
import json  # noqa: E402
import platform  # noqa: E402
import resource  # noqa: E402
import statistics  # noqa: E402
import sys  # noqa: E402
import time  # noqa: E402
import tracemalloc  # noqa: E402
from collections.abc import Callable  # noqa: E402
from pathlib import Path  # noqa: E402

import numpy as np  # noqa: E402

REPO_ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO_ROOT))

from estimation.metrics.moments import difference_moments, leaderboard_second_moment, ranking_moments  # noqa: E402
from estimation.metrics.spec import Metric  # noqa: E402
from estimation.sampling.pool import Pool  # noqa: E402

RESULTS = REPO_ROOT / "bench" / "results"
MIX = 0.1
TARGETS_SECONDS = {"one-system": 1.0, "two-system DCG": 1.0, "two-system ERR": 10.0}
MEMORY_TARGET_MB = 2048.0


def synthetic_pool(n_queries: int, n_docs: int, n_grades: int, n_systems: int, seed: int) -> Pool:
    """MSLR-WEB30k-shaped pool: every system ranks all documents of every query."""
    rng = np.random.default_rng(seed)
    theta = rng.dirichlet(np.ones(n_grades), size=(n_queries, n_docs))
    rankings = np.argsort(rng.random((n_systems, n_queries, n_docs)), axis=2)
    lengths = rng.lognormal(mean=6.0, sigma=0.8, size=(n_queries, n_docs))
    item_cost = np.log1p(lengths)
    item_cost /= item_cost.sum(axis=1).mean()
    return Pool(
        theta=theta,
        slot_used=np.ones((n_queries, n_docs), dtype=bool),
        rankings=rankings,
        item_cost=item_cost,
        query_weight=np.full(n_queries, 1.0 / n_queries),
        system_names=tuple(f"system{index}" for index in range(n_systems)),
    )


def query_cost(pool: Pool, systems: list[int], depth: int) -> np.ndarray:
    """lambda(x): cost of the union of the systems' top-``depth`` items per query."""
    needed = np.zeros(pool.theta.shape[:2], dtype=bool)
    queries = np.arange(pool.n_queries)[:, None]
    for system in systems:
        ranking = pool.rankings[system, :, :depth]
        needed[queries, np.where(ranking >= 0, ranking, 0)] |= ranking >= 0
    return (pool.item_cost * needed).sum(axis=1)


def mixed_optimal(weight: np.ndarray, second_moment: np.ndarray, cost: np.ndarray) -> np.ndarray:
    """q = (1 - eps) q* + eps p with q* ∝ p sqrt(second moment) / sqrt(lambda)."""
    optimal = weight * np.sqrt(second_moment) / np.sqrt(cost)
    optimal /= optimal.sum()
    return (1.0 - MIX) * optimal + MIX * weight


def formula_cases(pool: Pool, depth: int) -> dict[str, Callable[[], np.ndarray]]:
    """Moments plus the q* formula, per case."""
    dcg, err = Metric("DCG", cutoff=depth), Metric("ERR", cutoff=depth)
    weight = pool.query_weight

    def one_system(metric: Metric) -> np.ndarray:
        cost = query_cost(pool, [0], depth)
        moments = ranking_moments(pool.theta, pool.rankings[0], metric)
        return mixed_optimal(weight, moments.second_moment_about(float(weight @ moments.mean)), cost)

    def two_systems(metric: Metric) -> np.ndarray:
        cost = query_cost(pool, [0, 1], depth)
        moments = difference_moments(pool.theta, pool.rankings[0], pool.rankings[1], metric)
        return mixed_optimal(weight, moments.second_moment_about(float(weight @ moments.mean)), cost)

    def leaderboard(metric: Metric) -> np.ndarray:
        cost = query_cost(pool, [0, 1, 2], depth)
        second = leaderboard_second_moment(pool.theta, pool.rankings[:3], metric, query_weight=weight)
        return mixed_optimal(weight, second, cost)

    return {
        "one-system DCG": lambda: one_system(dcg),
        "one-system ERR": lambda: one_system(err),
        "two-system DCG": lambda: two_systems(dcg),
        "two-system ERR": lambda: two_systems(err),
        "leaderboard (3 systems) DCG": lambda: leaderboard(dcg),
        "leaderboard (3 systems) ERR": lambda: leaderboard(err),
    }


def sampling_cases(pool: Pool, depth: int) -> dict[str, Callable[[], object]] | None:
    """End-to-end cases through estimation.sampling.queries, when that module exists."""
    try:
        from estimation.sampling.queries import optimal_query_distribution
    except ImportError:
        return None
    dcg, err = Metric("DCG", cutoff=depth), Metric("ERR", cutoff=depth)
    goals = {"one-system": ("one", [0]), "two-system": ("difference", [0, 1])}
    goals["leaderboard (3 systems)"] = ("leaderboard", [0, 1, 2])
    cases: dict[str, Callable[[], object]] = {}
    for label, (goal, systems) in goals.items():
        for metric in (dcg, err):
            cases[f"{label} {metric.name}"] = lambda metric=metric, goal=goal, systems=systems: (
                optimal_query_distribution(pool, metric, goal, systems)
            )
    return cases


def measure(function: Callable[[], object], repeat: int) -> dict:
    """Median wall time over ``repeat`` runs, then one traced run for the peak allocation."""
    times, cpu_times = [], []
    for _ in range(repeat):
        gc.collect()
        start, cpu_start = time.perf_counter(), time.process_time()
        function()
        times.append(time.perf_counter() - start)
        cpu_times.append(time.process_time() - cpu_start)
    gc.collect()
    tracemalloc.start()
    function()
    _, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    return {
        "median_s": statistics.median(times),
        "min_s": min(times),
        "max_s": max(times),
        "median_cpu_s": statistics.median(cpu_times),
        "repetitions": repeat,
        "peak_traced_mb": peak / 2**20,
    }


def target_for(case: str) -> float | None:
    if case.startswith("one-system"):
        return TARGETS_SECONDS["one-system"]
    return TARGETS_SECONDS.get(case)


def machine() -> dict:
    cpu = platform.processor() or ""
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    return {
        "nproc": os.cpu_count(),
        "threads_used": 1,
        "cpu": cpu,
        "python": platform.python_version(),
        "numpy": np.__version__,
        "platform": platform.platform(),
        "load_average_at_start": list(os.getloadavg()),
    }


def markdown(report: dict) -> str:
    info = report["machine"]
    shape = report["pool"]
    lines = [
        "# Core benchmark: exact moments and query-level q*",
        "",
        f"Pool: {shape['queries']:,} queries x {shape['documents']} documents x {shape['grades']} grades "
        f"(seed {shape['seed']}); every system ranks all documents. Method: {report['method']}.",
        f"Machine: {info['cpu']}, nproc = {info['nproc']} (1 thread used), Python {info['python']}, "
        f"numpy {info['numpy']}. Wall times are medians of {report['repeat']} runs; CPU s is the "
        "median process time (the machine is shared: load average at start "
        f"{', '.join(f'{value:.1f}' for value in info['load_average_at_start'])}).",
        "",
        "| case | K | median s | min-max s | CPU s | target s | peak traced MB |",
        "|---|---:|---:|---:|---:|---:|---:|",
    ]
    for row in report["results"]:
        target = "" if row["target_s"] is None else f"{row['target_s']:g}"
        if row["target_s"] is not None:
            target += " ok" if row["median_s"] <= row["target_s"] else " MISSED"
        lines.append(
            f"| {row['case']} | {row['cutoff']} | {row['median_s']:.3f} | "
            f"{row['min_s']:.3f}-{row['max_s']:.3f} | {row['median_cpu_s']:.3f} | {target} | "
            f"{row['peak_traced_mb']:.0f} |"
        )
    lines += [
        "",
        f"Process peak resident memory (ru_maxrss, pool included): {report['max_rss_mb']:.0f} MB "
        f"(target <= {MEMORY_TARGET_MB:.0f} MB). The pool's arrays alone take {report['pool_mb']:.0f} MB.",
        "",
    ]
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--queries", type=int, default=30_000)
    parser.add_argument("--documents", type=int, default=120)
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--seed", type=int, default=20240601)
    parser.add_argument("--quick", action="store_true", help="3,000 queries, 3 runs, no files written")
    args = parser.parse_args()
    if args.quick:
        args.queries, args.repeat = 3_000, 3

    info = machine()
    pool = synthetic_pool(args.queries, args.documents, 5, 3, args.seed)
    pool_mb = (pool.theta.nbytes + pool.rankings.nbytes + pool.item_cost.nbytes) / 2**20
    results = []
    method = "moments + q* formula (estimation.sampling.queries not available)"
    for depth in (args.documents, 10):
        cases = sampling_cases(pool, depth)
        if cases is not None:
            method = "estimation.sampling.queries.optimal_query_distribution, end to end"
        else:
            cases = formula_cases(pool, depth)
        for case, function in cases.items():
            row = {"case": case, "cutoff": depth, "target_s": target_for(case)}
            row.update(measure(function, args.repeat))
            print(
                f"{case:30s} K={depth:<4d} {row['median_s']:8.3f} s (cpu {row['median_cpu_s']:.3f} s)"
                f"  peak {row['peak_traced_mb']:5.0f} MB"
            )
            results.append(row)
    max_rss_mb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    report = {
        "machine": info,
        "pool": {"queries": args.queries, "documents": args.documents, "grades": 5, "seed": args.seed},
        "method": method,
        "repeat": args.repeat,
        "mix": MIX,
        "results": results,
        "max_rss_mb": max_rss_mb,
        "pool_mb": pool_mb,
        "memory_target_mb": MEMORY_TARGET_MB,
    }
    print(f"{method}; peak RSS {max_rss_mb:.0f} MB")
    if args.quick:
        print(markdown(report))
    else:
        RESULTS.mkdir(parents=True, exist_ok=True)
        (RESULTS / "core.json").write_text(json.dumps(report, indent=2) + "\n")
        (RESULTS / "core.md").write_text(markdown(report))


if __name__ == "__main__":
    main()
