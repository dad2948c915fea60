"""Learned DCG you can trust: coverage of the intervals, recovery, and the test of the DCG form.

(a) Coverage grid. Side-by-side answers are simulated (`estimation.learned_dcg.simulation.
    run_preferences`) on synthetic lists: per topic 6 systems' top 5 with grades 0-2 drawn
    with probabilities .6/.25/.15. One condition is the base, the others change one factor:
    - truth ``W = c ⊗ g``: "issue" g = [0, .8, 1], c = 1/k^1.5 (the base); "standard"
      g = 2^y - 1, c = 1/log2(k+1); "flat" g = [0, .9, 1], c = 1/k^.5; "steep" g = [0, .1, 1],
      c = 1/k^1.5; "linear" g = y, c = 1/k; "issue-2" g = [0, .75, 1], c = 1/k^1.4;
    - noise: probit (base), logistic (unit variance), probit with 10 % careless answers;
    - the answer scale: with "about the same" (base) or without (four answers);
    - answers: 1,500 over 150 topics (base), 500 over 100, 5,000 over 300.
    Each condition is simulated ``--reps`` times; `learn_dcg` runs with its defaults (C chosen
    by 5-fold cross-validation, the whole fit repeated in ``--bootstrap`` replicates, BCa).
    Reported per method (likelihood, the default; the paper's QP on four conditions):
    coverage of the 95 % intervals of g1 and c2..c5 (with its binomial standard error), the
    mean estimate against the truth (bias), the median interval width, the median seconds
    of one whole `learn_dcg` (one process of ``--jobs``, the machine shared).
(b) The DCG-form test alone (no bootstrap): size under the base truth, on the simulator's
    lists (a pool of topics x 6 systems) and on independent random lists per answer (each
    answer its own two lists, the setting of the test's χ² approximation), and power against
    truths whose gain depends on the position (g = [0, .3, 1] at positions 1-2 and
    [0, .9, 1] below; and a milder [0, .5, 1] / [0, .7, 1]), at 500, 1,500 and 5,000 answers,
    ``--form-reps`` datasets each.
(c) Held-out accuracy of the learned DCG (gain x discount, C chosen without the held-out
    topics) of both methods on the same simulated campaigns (base truth, probit and 10 %
    careless answers, 1,500 answers), ``--reps`` each, no bootstrap; the oracle's accuracy (the
    true W on the same answers) is the noise ceiling.

Usage: ``python bench/bench_learned_dcg_coverage.py [--reps 20] [--bootstrap 100] [--jobs 2]``
(``--coverage-from JSON`` reuses an earlier run's coverage rows and runs the form test alone).
Writes ``bench/results/learned_dcg_coverage.json`` and ``.md``; prints the tables.
"""

from __future__ import annotations

import os

for _name in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_name, "1")  # "one core per process": set before numpy loads BLAS

import argparse  # noqa: E402
import json  # noqa: E402
import platform  # noqa: E402
import sys  # noqa: E402
import time  # noqa: E402
import zlib  # noqa: E402
from concurrent.futures import ProcessPoolExecutor  # noqa: E402
from pathlib import Path  # noqa: E402

import numpy as np  # noqa: E402

REPO_ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO_ROOT))

from estimation.learned_dcg.fit import learn_dcg  # noqa: E402
from estimation.learned_dcg.likelihood import form_test, ordinal_design  # noqa: E402
from estimation.learned_dcg.lists import utilities  # noqa: E402
from estimation.learned_dcg.simulation import run_preferences  # noqa: E402

K, L = 5, 3
POSITIONS = np.arange(1, K + 1)
TRUTHS = {
    "issue": ([0.0, 0.8, 1.0], 1.0 / POSITIONS**1.5),
    "standard": ([0.0, 1.0 / 3.0, 1.0], 1.0 / np.log2(POSITIONS + 1)),
    "flat": ([0.0, 0.9, 1.0], 1.0 / POSITIONS**0.5),
    "steep": ([0.0, 0.1, 1.0], 1.0 / POSITIONS**1.5),
    "linear": ([0.0, 0.5, 1.0], 1.0 / POSITIONS),
    "issue-2": ([0.0, 0.75, 1.0], 1.0 / POSITIONS**1.4),
}
BASE = {"truth": "issue", "noise": "probit", "careless": 0.0, "ties": True, "answers": 1500, "topics": 150}
SIZES = {500: 100, 1500: 150, 5000: 300}


def conditions(method: str) -> list[dict]:
    """The base and one-factor changes (the QP gets the base and three)."""
    out = [dict(BASE, name="base")]
    for truth in TRUTHS:
        if truth != BASE["truth"]:
            out.append(dict(BASE, truth=truth, name=f"truth {truth}"))
    out.append(dict(BASE, noise="logistic", name="logistic noise"))
    out.append(dict(BASE, careless=0.1, name="10% careless"))
    out.append(dict(BASE, ties=False, name="no 'about the same'"))
    for answers, topics in SIZES.items():
        if answers != BASE["answers"]:
            out.append(dict(BASE, answers=answers, topics=topics, name=f"{answers} answers"))
    if method == "qp":
        keep = {"base", "truth issue-2", "logistic noise", "5000 answers"}
        out = [condition for condition in out if condition["name"] in keep]
    return out


def synthetic_lists(rng: np.random.Generator, topics: int) -> np.ndarray:
    return rng.choice(L, size=(topics, 6, K), p=[0.6, 0.25, 0.15])


def one_replicate(job: tuple) -> dict:
    method, condition, rep, bootstrap = job
    rng = np.random.default_rng([zlib.crc32(condition["name"].encode()), rep, 7])
    gains, discounts = (np.asarray(v, dtype=float) for v in TRUTHS[condition["truth"]])
    truth = np.outer(discounts, gains)
    lists = synthetic_lists(rng, condition["topics"])
    data, _ = run_preferences(
        lists, condition["answers"], truth, rng,
        noise=condition["noise"], careless=condition["careless"], ties=condition["ties"],
    )  # fmt: skip
    started = time.perf_counter()
    result = learn_dcg(data, L, method=method, bootstrap=bootstrap, seed=rep, curve=False)
    seconds = time.perf_counter() - started
    true_vector = np.concatenate([gains[1:2] / gains[-1], discounts[1:] / discounts[0]])
    estimate = np.concatenate([result.gains[1:2], result.discounts[1:]])
    low = np.concatenate([result.gains_low[1:2], result.discounts_low[1:]])
    high = np.concatenate([result.gains_high[1:2], result.discounts_high[1:]])
    return {
        "method": method,
        "condition": condition["name"],
        "covered": ((low <= true_vector) & (true_vector <= high)).tolist(),
        "estimate": estimate.tolist(),
        "truth": true_vector.tolist(),
        "width": (high - low).tolist(),
        "grid_warning": bool(result.grid_warnings),
        "seconds": seconds,
    }


def position_dependent(strength: str) -> np.ndarray:
    top, below = {"strong": ([0, 0.3, 1], [0, 0.9, 1]), "mild": ([0, 0.5, 1], [0, 0.7, 1])}[strength]
    discounts = 1.0 / POSITIONS**1.5
    return np.array([discounts[k] * np.asarray(top if k < 2 else below, dtype=float) for k in range(K)])


def independent_pairs(rng: np.random.Generator, answers: int, truth: np.ndarray):
    """Every answer on its own two random lists (no pool of topics x systems), cut points at
    ±0.5 and ±1.5 of a utility difference scaled to unit spread: the χ² test's own setting."""
    from estimation.learned_dcg.lists import PreferenceData, utilities

    left, right = (rng.choice(L, size=(answers, K), p=[0.5, 0.3, 0.2]) for _ in range(2))
    difference = utilities(truth, left) - utilities(truth, right)
    z = difference / difference.std() + rng.standard_normal(answers)
    preference = 2 - np.searchsorted([-1.5, -0.5, 0.5, 1.5], z)
    return PreferenceData(left, right, preference, np.arange(answers) % 100)


def one_form_test(job: tuple) -> dict:
    truth_name, answers, rep = job
    rng = np.random.default_rng([answers, rep, 11, len(truth_name)])
    if truth_name.startswith("rank-1"):
        gains, discounts = (np.asarray(v, dtype=float) for v in TRUTHS["issue"])
        truth = np.outer(discounts, gains)
    else:
        truth = position_dependent(truth_name.split()[0])
    if "independent" in truth_name:
        data = independent_pairs(rng, answers, truth)
    else:
        data, _ = run_preferences(synthetic_lists(rng, SIZES[answers]), answers, truth, rng)
    test = form_test(ordinal_design(data, L))
    return {"truth": truth_name, "answers": answers, "p_value": test.p_value}


def one_accuracy(job: tuple) -> dict:
    careless, rep = job
    rng = np.random.default_rng([rep, 13, int(careless * 100)])
    gains, discounts = (np.asarray(v, dtype=float) for v in TRUTHS["issue"])
    truth = np.outer(discounts, gains)
    data, _ = run_preferences(synthetic_lists(rng, 150), 1500, truth, rng, careless=careless)
    out = {"careless": careless}
    for method in ("likelihood", "qp"):
        result = learn_dcg(data, L, method=method, bootstrap=0, seed=rep, curve=False, form=False)
        out[method] = result.accuracy["learned"]
    scored = (data.preference != 0) & ~data.identical()
    difference = utilities(truth, data.left[scored]) - utilities(truth, data.right[scored])
    out["oracle"] = float(np.mean(np.sign(difference) == -np.sign(data.preference[scored])))
    return out


def summarise(rows: list[dict]) -> list[dict]:
    table = []
    for key in dict.fromkeys((row["method"], row["condition"]) for row in rows):
        mine = [row for row in rows if (row["method"], row["condition"]) == key]
        covered = np.array([row["covered"] for row in mine], dtype=float)
        estimate = np.array([row["estimate"] for row in mine])
        truth = np.array(mine[0]["truth"])
        overall = float(covered.mean())
        table.append(
            {
                "method": key[0],
                "condition": key[1],
                "reps": len(mine),
                "coverage_g1": float(covered[:, 0].mean()),
                "coverage_c": float(covered[:, 1:].mean()),
                "coverage": overall,
                "coverage_se": float(np.sqrt(overall * (1 - overall) / covered.size)),
                "bias_g1": float(estimate[:, 0].mean() - truth[0]),
                "bias_c2": float(estimate[:, 1].mean() - truth[1]),
                "truth_g1": float(truth[0]),
                "truth_c2": float(truth[1]),
                "median_width_g1": float(np.median([row["width"][0] for row in mine])),
                "grid_warnings": int(sum(row["grid_warning"] for row in mine)),
                "median_seconds": float(np.median([row["seconds"] for row in mine])),
            }
        )
    return table


def markdown(table: list[dict], form: list[dict], accuracy: list[dict], args: argparse.Namespace) -> str:
    lines = [
        f"Coverage of 95 % BCa intervals (g1 and c2..c5), {args.reps} simulated campaigns per row, "
        f"{args.bootstrap} bootstrap replicates of the whole fit each",
        "",
        "| method | condition | coverage (± se) | g1 | c2..c5 | bias g1 (truth) | bias c2 (truth) "
        "| median width g1 | seconds |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    for row in table:
        lines.append(
            f"| {row['method']} | {row['condition']} "
            f"| {row['coverage']:.3f} ± {row['coverage_se']:.3f} "
            f"| {row['coverage_g1']:.2f} | {row['coverage_c']:.2f} "
            f"| {row['bias_g1']:+.3f} ({row['truth_g1']:.2f}) "
            f"| {row['bias_c2']:+.3f} ({row['truth_c2']:.3f}) "
            f"| {row['median_width_g1']:.3f} | {row['median_seconds']:.1f} |"
        )
    lines += ["", f"DCG-form test alone, {args.form_reps} datasets per cell: share rejected at 5 %", ""]
    answers = sorted({row["answers"] for row in form})
    lines.append("| truth | " + " | ".join(f"{a} answers" for a in answers) + " |")
    lines.append("|---|" + "---|" * len(answers))
    for truth in dict.fromkeys(row["truth"] for row in form):
        cells = []
        for a in answers:
            p = [row["p_value"] for row in form if row["truth"] == truth and row["answers"] == a]
            p = [value for value in p if value == value]
            cells.append(f"{np.mean(np.array(p) < 0.05):.3f} (n={len(p)})" if p else "—")
        lines.append(f"| {truth} | " + " | ".join(cells) + " |")
    lines += [
        "",
        f"Held-out accuracy of the learned DCG (nested C), 1,500 answers, {args.reps} campaigns, mean ± se",
        "",
        "| answers | likelihood | the paper's QP | likelihood - QP | oracle (true W) |",
        "|---|---|---|---|---|",
    ]
    for careless in sorted({row["careless"] for row in accuracy}):
        mine = [row for row in accuracy if row["careless"] == careless]
        cells = []
        for key in ("likelihood", "qp"):
            values = np.array([row[key] for row in mine])
            cells.append(f"{values.mean():.4f} ± {values.std(ddof=1) / np.sqrt(values.size):.4f}")
        gap = np.array([row["likelihood"] - row["qp"] for row in mine])
        gap_text = f"{gap.mean():+.4f} ± {gap.std(ddof=1) / np.sqrt(gap.size):.4f}"
        oracle = np.mean([row["oracle"] for row in mine])
        label = "probit" if careless == 0 else f"probit, {careless:.0%} careless"
        lines.append(f"| {label} | {cells[0]} | {cells[1]} | {gap_text} | {oracle:.4f} |")
    return "\n".join(lines) + "\n"


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--reps", type=int, default=20)
    parser.add_argument("--bootstrap", type=int, default=100)
    parser.add_argument("--form-reps", type=int, default=200)
    parser.add_argument("--jobs", type=int, default=2)
    parser.add_argument("--methods", default="likelihood,qp")
    parser.add_argument(
        "--coverage-from",
        metavar="JSON",
        help="take the coverage rows of an earlier run's JSON and run only the form test",
    )
    parser.add_argument("--out", default=str(REPO_ROOT / "bench" / "results" / "learned_dcg_coverage"))
    args = parser.parse_args()
    started = time.perf_counter()
    jobs = [
        (method, condition, rep, args.bootstrap)
        for method in args.methods.split(",")
        for condition in conditions(method)
        for rep in range(args.reps)
    ]
    form_jobs = [
        (truth, answers, rep)
        for truth in (
            "rank-1 (base)",
            "rank-1, independent lists",
            "mild position dependence",
            "strong position dependence",
        )
        for answers in SIZES
        for rep in range(args.form_reps)
    ]
    with ProcessPoolExecutor(max_workers=args.jobs) as pool:
        form = list(pool.map(one_form_test, form_jobs, chunksize=20))
        accuracy = list(pool.map(one_accuracy, [(c, rep) for c in (0.0, 0.1) for rep in range(args.reps)]))
        if args.coverage_from:
            earlier = json.loads(Path(args.coverage_from).read_text())
            rows = earlier["rows"]
            args.reps, args.bootstrap = earlier["args"]["reps"], earlier["args"]["bootstrap"]
        else:
            rows = list(pool.map(one_replicate, jobs))
    table = summarise(rows)
    text = markdown(table, form, accuracy, args)
    print(text)
    print(f"total {time.perf_counter() - started:.0f} s on {args.jobs} processes")
    out = Path(args.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.with_suffix(".md").write_text(text)
    out.with_suffix(".json").write_text(
        json.dumps(
            {
                "args": vars(args),
                "python": platform.python_version(),
                "table": table,
                "rows": rows,
                "form": form,
            },
            indent=1,
        )
    )


if __name__ == "__main__":
    main()
