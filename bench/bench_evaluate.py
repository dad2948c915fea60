"""Wall time and peak memory of `python -m estimation evaluate` next to pytrec_eval and ir_measures.

Every measurement is a whole process, Python start-up and imports included: the bench starts
the command and collects it with ``os.wait4``, whose resource usage is that child's own
(``ru_maxrss``: its peak resident set, exact, no polling). The tools read the files
themselves: `evaluate` with its readers; pytrec_eval with its ``parse_qrel`` / ``parse_run``
over gunzipped text, then ``RelevanceEvaluator`` (``ndcg_cut.10``: it has no ERR);
ir_measures with its ``read_trec_qrels`` / ``read_trec_run`` and ``calc_aggregate`` of
``nDCG@10`` (its ``ERR@20``, gdeval in Python, takes over ten times longer: left out).
Repetitions are interleaved (each repetition runs every command once, in a rotating order),
so the load of a shared machine falls on all of them alike; the tables give medians and the
median of the per-repetition ratios to pytrec_eval.

1. The 17 Robust03 runs (1.5M lines) against their qrels: nDCG@10 (linear gain, trec_eval's
   ndcg_cut.10), and nDCG@10 + ERR@20; `evaluate` of one run next to all 17 shows that memory
   does not grow with the number of runs.
2. One seeded synthetic run of 5,000,000 lines (5,000 topics x 1,000 documents, scores
   rounded so that ties occur, topics in file order) and qrels for it, written to a temporary
   directory: `evaluate` against pytrec_eval.

Usage::

    SHARED_DATA_DIR=... .venv/bin/python bench/bench_evaluate.py            # 5 repetitions
    SHARED_DATA_DIR=... .venv/bin/python bench/bench_evaluate.py --repeat 1 --lines 0

Writes bench/results/evaluate.json and evaluate.md.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
DATA = Path(os.environ.get("SHARED_DATA_DIR", ROOT.parent / "shared" / "data"))
RESULTS = ROOT / "bench" / "results"

PYTREC_EVAL = """
import gzip, statistics, sys, pytrec_eval
qrels_path, *runs = sys.argv[1:]
with open(qrels_path) as stream:
    evaluator = pytrec_eval.RelevanceEvaluator(pytrec_eval.parse_qrel(stream), {"ndcg_cut.10"})
for path in runs:
    with (gzip.open(path, "rt") if path.endswith(".gz") else open(path)) as stream:
        per_query = evaluator.evaluate(pytrec_eval.parse_run(stream))
    print(path, statistics.fmean(values["ndcg_cut_10"] for values in per_query.values()))
"""

IR_MEASURES = """
import sys, ir_measures
from ir_measures import nDCG
qrels = list(ir_measures.read_trec_qrels(sys.argv[1]))
for path in sys.argv[2:]:
    print(path, ir_measures.calc_aggregate([nDCG @ 10], qrels, ir_measures.read_trec_run(path)))
"""


def child_environment(pycache: str) -> dict[str, str]:
    """This environment, byte-compiling as an installed package does (into `pycache`, outside
    the repository): a setting that turns byte-compiling off would charge every start with
    compiling our modules, and no tool's."""
    env = {**os.environ, "PYTHONPYCACHEPREFIX": pycache}
    env.pop("PYTHONDONTWRITEBYTECODE", None)
    return env


def measure(command: list[str], env: dict[str, str]) -> tuple[float, float, float]:
    """(wall seconds, CPU seconds, peak RSS in MiB) of one run of `command`, a child of ours."""
    started = time.perf_counter()
    child = subprocess.Popen(command, cwd=ROOT, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    assert child.stderr is not None
    errors = child.stderr.read()
    _, status, usage = os.wait4(child.pid, 0)
    seconds = time.perf_counter() - started
    child.returncode = os.waitstatus_to_exitcode(status)  # collected here, not by Popen
    if child.returncode != 0:
        raise RuntimeError(f"{command[:4]} exited {child.returncode}: {errors.decode()[-2000:]}")
    return seconds, usage.ru_utime + usage.ru_stime, usage.ru_maxrss / 1024  # Linux: KiB


Samples = dict[str, list[tuple[float, float, float]]]


def interleaved(commands: dict[str, list[str]], repeat: int, env: dict[str, str]) -> Samples:
    """`repeat` measurements of every command, interleaved, after one discarded warm-up each
    (byte-compiling, the file cache)."""
    for command in commands.values():
        measure(command, env)
    samples: Samples = {name: [] for name in commands}
    names = list(commands)
    for repetition in range(repeat):
        shift = repetition % len(names)
        for name in names[shift:] + names[:shift]:
            samples[name].append(measure(commands[name], env))
            wall, cpu, rss = samples[name][-1]
            print(f"  {name}: {wall:.2f} s wall, {cpu:.2f} s CPU, {rss:.0f} MiB", flush=True)
    return samples


def synthetic_collection(folder: Path, lines: int, seed: int) -> tuple[Path, Path]:
    """A run of `lines` lines (1,000 documents a topic) and qrels judging 30 of them a topic
    (150,000 judgments for 5M lines, about Robust03's 128,000: the qrels, held whole by every
    tool, stay a small part of the memory measured)."""
    rng = np.random.default_rng(seed)
    depth = 1000
    topics = lines // depth
    run_path, qrels_path = folder / "synthetic.run", folder / "synthetic.qrels"
    with run_path.open("w") as run, qrels_path.open("w") as qrels:
        for topic in range(topics):
            docs = rng.choice(20 * depth, size=depth, replace=False)
            scores = np.round(np.sort(rng.gamma(2.0, 2.0, size=depth))[::-1], 2)  # ties
            run.write(
                "".join(
                    f"{topic} Q0 doc{doc:06d} {rank} {score:.2f} synthetic\n"
                    for rank, (doc, score) in enumerate(zip(docs.tolist(), scores.tolist(), strict=True), 1)
                )
            )
            judged = rng.choice(docs, size=30, replace=False)
            grades = rng.choice(3, size=30, p=[0.6, 0.3, 0.1])
            qrels.write(
                "".join(
                    f"{topic} 0 doc{doc:06d} {grade}\n" for doc, grade in zip(judged, grades, strict=True)
                )
            )
    return qrels_path, run_path


def summarize(samples: Samples, reference: str) -> list[dict[str, object]]:
    rows = []
    for name, values in samples.items():
        # Paired: each repetition's ratio, so that load shared by the pair cancels.
        ratios = [wall / samples[reference][i][0] for i, (wall, _, _) in enumerate(values)]
        rows.append(
            {
                "command": name,
                "median_seconds": statistics.median(wall for wall, _, _ in values),
                "median_cpu_seconds": statistics.median(cpu for _, cpu, _ in values),
                "median_peak_rss_mib": statistics.median(rss for _, _, rss in values),
                "median_ratio_to_pytrec_eval": statistics.median(ratios),
                "samples": values,
            }
        )
    return rows


def main() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--lines", type=int, default=5_000_000, help="synthetic run size (0: skip)")
    args = parser.parse_args()
    python = sys.executable
    qrels = str(DATA / "robust03" / "qrels.txt")
    runs = [str(path) for path in sorted((DATA / "robust03" / "runs").glob("*.gz"))]
    evaluate = [python, "-m", "estimation", "evaluate", qrels]
    ndcg = ["-m", "nDCG@10", "--gain", "linear"]
    commands = {
        "evaluate nDCG@10": [*evaluate, *runs, *ndcg],
        "evaluate nDCG@10 + ERR@20": [*evaluate, *runs, *ndcg, "-m", "ERR@20"],
        "evaluate nDCG@10, one run": [*evaluate, runs[0], *ndcg],
        "pytrec_eval ndcg_cut.10": [python, "-c", PYTREC_EVAL, qrels, *runs],
        "ir_measures nDCG@10": [python, "-c", IR_MEASURES, qrels, *runs],
    }
    results: dict[str, object] = {
        "machine": f"{platform.machine()}, {os.cpu_count()} cores, Python {platform.python_version()}",
        "repeat": args.repeat,
    }
    reference = "pytrec_eval ndcg_cut.10"
    with tempfile.TemporaryDirectory() as scratch:
        env = child_environment(str(Path(scratch) / "pycache"))
        print("Robust03, 17 runs", flush=True)
        results["robust03"] = summarize(interleaved(commands, args.repeat, env), reference)
        if args.lines:
            files = [str(path) for path in synthetic_collection(Path(scratch), args.lines, seed=24)]
            big = {
                "evaluate nDCG@10": [*evaluate[:4], *files, *ndcg],
                "evaluate nDCG@10 + ERR@20": [*evaluate[:4], *files, *ndcg, "-m", "ERR@20"],
                reference: [python, "-c", PYTREC_EVAL, *files],
            }
            print(f"synthetic run of {args.lines:,} lines", flush=True)
            results["synthetic"] = summarize(interleaved(big, args.repeat, env), reference)
            results["synthetic_lines"] = args.lines
    RESULTS.mkdir(exist_ok=True)
    (RESULTS / "evaluate.json").write_text(json.dumps(results, indent=2) + "\n")
    lines = [
        "# evaluate against pytrec_eval and ir_measures (whole processes)",
        "",
        f"Machine: {results['machine']}; medians of {args.repeat} interleaved repetitions.",
        "",
    ]
    for key, title in (("robust03", "17 Robust03 runs"), ("synthetic", f"one run of {args.lines:,} lines")):
        if key not in results:
            continue
        lines += [
            f"| {title} | wall (s) | CPU (s) | peak RSS (MiB) | wall / pytrec_eval's |",
            "|---|---:|---:|---:|---:|",
            *[
                f"| {row['command']} | {row['median_seconds']:.2f} | {row['median_cpu_seconds']:.2f} "
                f"| {row['median_peak_rss_mib']:.0f} | {row['median_ratio_to_pytrec_eval']:.2f} |"
                for row in results[key]  # type: ignore[attr-defined]
            ],
            "",
        ]
    (RESULTS / "evaluate.md").write_text("\n".join(lines))
    print("\n".join(lines))
    return 0


if __name__ == "__main__":
    sys.exit(main())
