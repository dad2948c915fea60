"""ELO-DCG training-data selection (Long et al. 2010) on real LETOR data, and its speed.

Protocol (method note §7), per dataset and repetition r (seed r):

1. split the queries at random into base (10 %), pool (55 %) and test (35 %);
2. fit the bootstrap ensemble (`BootstrapLightGBM`, N = 8) on the base queries and compute
   EL(q) and EL(j) on the pool once;
3. for every strategy and budget (in labels) select from the pool, train one LightGBM model
   (the ensemble members' settings, the same seed for every strategy of the repetition) on
   base + selected with the true grades, and score DCG@10 (gain 2^y - 1, discount
   1/log2(1 + r); queries without a relevant document count 0) on the test queries;
4. reference models: base only, and base + the whole pool ("whole-pool model").

Datasets: the MSLR-WEB sample (train and test files, each without its cut-off last query;
grades 0-4, ~120 documents per query): document level and two-stage, the headline; MQ2008
(S1 + S4 + S5, grades 0-2, ~19 documents per query): query level, the headline. Every strategy
runs on both. The drawn variant (`--draw`, ε = 0.1) of elo_qd, elo_q and elo_d runs beside the
deterministic one (conditional Poisson sampling; two-stage rules spend at most the budget);
its training-quality cost is the paired difference to it.

Reported: mean ± standard error over repetitions of test DCG@10 per budget; paired
differences against random_q and top_k; the labels each strategy needs to reach 95 % of the
whole-pool model's gain over the base model (linear interpolation on the mean curve; "not
reached" within the budgets); the share of selected labels with grade >= 1.

Speed: one round's selection (EL(q), EL(j), elo_qd) for a synthetic pool of 30,000 queries x
120 documents and N = 8 members, one thread; fitting timed apart (8 members on 1,000 labeled
queries x 120 documents x 46 features, and prediction measured on 360,000 rows).

Usage: ``python bench/bench_elo_dcg.py [--repetitions 20]`` (about 10-15 minutes on one core).
Writes ``bench/results/elo_dcg.json`` and ``.md``. Data: ``$SHARED_DATA_DIR`` or
``../shared/data``.
"""

from __future__ import annotations

import os

for _name in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_name, "1")  # "one core": set before numpy loads BLAS

import argparse  # noqa: E402
import json  # noqa: E402
import platform  # noqa: E402
import sys  # noqa: E402
import time  # noqa: E402
from dataclasses import dataclass  # noqa: E402
from pathlib import Path  # noqa: E402

import numpy as np  # noqa: E402

REPO_ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO_ROOT))

from estimation.formats.letor import LetorPool, concat_pools, drop_last_query, read_letor  # noqa: E402
from estimation.training.elo_dcg import expected_loss_documents, expected_loss_queries  # noqa: E402
from estimation.training.ensembles import BootstrapLightGBM, fit_ranker, predict  # noqa: E402
from estimation.training.selection import (  # noqa: E402
    DRAWABLE_RULES,
    SELECTION_RULES,
    pool_expected_loss,
    pool_mean_dcg,
    select_training,
)

SHARED_DATA = Path(os.environ.get("SHARED_DATA_DIR", REPO_ROOT.parent / "shared" / "data"))
RESULTS = REPO_ROOT / "bench" / "results"
CUTOFF = 10
MEMBERS = 8
BASE_SHARE, TEST_SHARE = 0.10, 0.35
REACH_SHARE = 0.95
VARIANTS = [(s, False) for s in SELECTION_RULES] + [(s, True) for s in DRAWABLE_RULES]


@dataclass(frozen=True)
class Dataset:
    name: str
    pool: LetorPool
    max_grade: int
    budgets: tuple[int, ...]
    headline: str


def load_datasets(names: list[str]) -> list[Dataset]:
    datasets = []
    if "mslr" in names:
        folder = SHARED_DATA / "mslr_sample"
        parts = [
            drop_last_query(read_letor(folder / f"msn1.fold1.{part}.5k.txt.gz")) for part in ("train", "test")
        ]
        datasets.append(
            Dataset(
                "MSLR sample",
                concat_pools(parts),
                4,
                (60, 120, 240, 480, 960, 1920, 3840),
                "document level, two-stage",
            )
        )
    if "mq2008" in names:
        files = [SHARED_DATA / "mq2008" / f"S{i}.txt.gz" for i in (1, 4, 5)]
        datasets.append(
            Dataset(
                "MQ2008",
                read_letor(files, n_features=46),
                2,
                (50, 100, 200, 400, 800, 1600, 3200),
                "query level",
            )
        )
    return datasets


def variant_name(strategy: str, draw: bool) -> str:
    return f"{strategy}+draw" if draw else strategy


def test_dcg(pool: LetorPool, scores: np.ndarray) -> float:
    """Mean DCG@10 (2^y - 1) over the pool's queries of the ranking by `scores` (ties: row order)."""
    return pool_mean_dcg(pool, scores, CUTOFF)


def one_repetition(data: Dataset, repetition: int) -> dict:
    rng = np.random.default_rng(repetition)
    n = data.pool.n_queries
    order = rng.permutation(n)
    n_base, n_test = round(BASE_SHARE * n), round(TEST_SHARE * n)
    base, test, pool_queries = order[:n_base], order[n_base : n_base + n_test], order[n_base + n_test :]
    work_truth = data.pool.subset(np.r_[base, pool_queries])
    n_base_rows = int(work_truth.query_offsets[n_base])
    hidden = work_truth.grades.copy()
    hidden[n_base_rows:] = -1
    work = work_truth.with_grades(hidden)
    test_pool = data.pool.subset(test)

    def model_dcg(rows: np.ndarray) -> float:
        model = fit_ranker(work.features[rows], work_truth.grades[rows], seed=repetition)
        return test_dcg(test_pool, predict(model, test_pool.features))

    started = time.perf_counter()
    scores = BootstrapLightGBM(n_members=MEMBERS).fit(
        work.features, work.grades, work.query_offsets, repetition
    )
    fit_seconds = time.perf_counter() - started
    started = time.perf_counter()
    loss = pool_expected_loss(work, scores, max_grade=data.max_grade, cutoff=CUTOFF)
    el_seconds = time.perf_counter() - started
    base_rows = np.arange(n_base_rows)
    result = {
        "base": model_dcg(base_rows),
        "whole_pool": model_dcg(np.arange(work.n_docs)),
        "pool_queries": int(pool_queries.size),
        "pool_docs": int(work.n_docs - n_base_rows),
        "fit_seconds": fit_seconds,
        "el_seconds": el_seconds,
        "curves": {},
    }
    for strategy, draw in VARIANTS:
        curve = []
        for budget in data.budgets:
            selection = select_training(
                work,
                None if strategy in ("random_q", "random_d", "random_qd") else scores,
                strategy=strategy,
                budget=budget,
                max_grade=data.max_grade,
                cutoff=CUTOFF,
                seed=repetition,
                draw=draw,
                loss=loss,
            )
            selected_grades = work_truth.grades[selection.rows]
            curve.append(
                {
                    "budget": budget,
                    "spent": len(selection),
                    "dcg": model_dcg(np.r_[base_rows, selection.rows]),
                    "relevant_share": float(np.mean(selected_grades >= 1))
                    if len(selection)
                    else float("nan"),
                }
            )
        result["curves"][variant_name(strategy, draw)] = curve
    return result


def summarise(data: Dataset, repetitions: list[dict]) -> dict:
    reps = len(repetitions)
    base = np.array([r["base"] for r in repetitions])
    whole = np.array([r["whole_pool"] for r in repetitions])

    def matrix(name: str, key: str) -> np.ndarray:
        return np.array([[point[key] for point in r["curves"][name]] for r in repetitions])

    def mean_se(values: np.ndarray) -> tuple[list[float], list[float]]:
        se = values.std(axis=0, ddof=1) / np.sqrt(reps) if reps > 1 else np.full(values.shape[1:], np.nan)
        return values.mean(axis=0).tolist(), se.tolist()

    target = base.mean() + REACH_SHARE * (whole.mean() - base.mean())
    summary = {}
    for strategy, draw in VARIANTS:
        name = variant_name(strategy, draw)
        dcg = matrix(name, "dcg")
        spent = matrix(name, "spent").mean(axis=0)
        entry = {
            "spent": spent.tolist(),
            "relevant_share": np.nanmean(matrix(name, "relevant_share"), axis=0).tolist(),
        }
        entry["mean"], entry["se"] = mean_se(dcg)
        for reference in ("random_q", "top_k"):
            entry[f"diff_{reference}"], entry[f"diff_{reference}_se"] = mean_se(
                dcg - matrix(reference, "dcg")
            )
        if draw:
            entry["diff_deterministic"], entry["diff_deterministic_se"] = mean_se(
                dcg - matrix(strategy, "dcg")
            )
        entry["labels_to_reach"] = labels_to_reach(spent, np.asarray(entry["mean"]), target)
        summary[name] = entry
    return {
        "dataset": data.name,
        "headline": data.headline,
        "repetitions": reps,
        "budgets": list(data.budgets),
        "pool_queries": repetitions[0]["pool_queries"],
        "pool_docs_mean": float(np.mean([r["pool_docs"] for r in repetitions])),
        "base": [float(base.mean()), float(base.std(ddof=1) / np.sqrt(reps)) if reps > 1 else float("nan")],
        "whole_pool": [
            float(whole.mean()),
            float(whole.std(ddof=1) / np.sqrt(reps)) if reps > 1 else float("nan"),
        ],
        "reach_target": float(target),
        "ensemble_fit_seconds_median": float(np.median([r["fit_seconds"] for r in repetitions])),
        "el_seconds_median": float(np.median([r["el_seconds"] for r in repetitions])),
        "strategies": summary,
    }


def labels_to_reach(spent: np.ndarray, mean: np.ndarray, target: float) -> float | None:
    """Labels at which the mean curve first reaches `target` (linear between budgets)."""
    previous_x, previous_y = 0.0, None
    for x, y in zip(spent.tolist(), mean.tolist(), strict=True):
        if y >= target:
            if previous_y is None or previous_y >= target or x == previous_x:
                return float(x)
            return float(previous_x + (target - previous_y) / (y - previous_y) * (x - previous_x))
        previous_x, previous_y = x, y
    return None


def speed(n_queries: int, n_docs: int, seed: int = 0) -> dict:
    """One round's selection time on a synthetic pool; the ensemble's fit timed apart."""
    rng = np.random.default_rng(seed)
    rows = n_queries * n_docs
    offsets = np.arange(n_queries + 1, dtype=np.int64) * n_docs
    latent = rng.gamma(1.0, 0.8, rows)
    scores = latent[:, None] + rng.normal(0, 0.5, (rows, MEMBERS))
    pool = LetorPool(
        features=np.zeros((rows, 0), dtype=np.float32),
        grades=np.full(rows, -1, dtype=np.int64),
        query_ids=tuple(str(q) for q in range(n_queries)),
        query_offsets=offsets,
        doc_ids=tuple(str(d % n_docs + 1) for d in range(rows)),
    )
    timings = {}
    started = time.perf_counter()
    expected_loss_queries(scores, offsets, max_grade=4, cutoff=CUTOFF)
    timings["el_query_seconds"] = time.perf_counter() - started
    started = time.perf_counter()
    expected_loss_documents(scores, offsets, max_grade=4, cutoff=CUTOFF)
    timings["el_doc_seconds"] = time.perf_counter() - started
    started = time.perf_counter()
    selection = select_training(pool, scores, strategy="elo_qd", budget=15 * 2000, max_grade=4, cutoff=CUTOFF)
    timings["select_elo_qd_seconds"] = time.perf_counter() - started
    timings["selected"] = len(selection)
    # Fitting, apart: 8 members on 1,000 labeled queries x n_docs x 46 features; prediction
    # measured on 3,000 queries' rows and scaled to the whole pool.
    features = rng.normal(size=(1000 * n_docs, 46)).astype(np.float32)
    grades = np.clip(np.round(features[:, 0] + 0.5 * features[:, 1] + 1), 0, 4).astype(np.int64)
    base_offsets = np.arange(1001, dtype=np.int64) * n_docs
    started = time.perf_counter()
    BootstrapLightGBM(n_members=MEMBERS).fit(features, grades, base_offsets, seed)
    timings["ensemble_fit_and_predict_base_seconds"] = time.perf_counter() - started
    model = fit_ranker(features, grades, seed)
    sample = rng.normal(size=(3000 * n_docs, 46)).astype(np.float32)
    started = time.perf_counter()
    predict(model, sample)
    per_member = (time.perf_counter() - started) * rows / sample.shape[0]
    timings["predict_whole_pool_seconds_estimated"] = per_member * MEMBERS
    timings.update(n_queries=n_queries, n_docs=n_docs, members=MEMBERS)
    return timings


def fmt(mean: float, se: float, digits: int = 3) -> str:
    return f"{mean:.{digits}f} ± {se:.{digits}f}"


def savings(data: dict) -> str:
    """Labels to reach the whole-pool target, ELO strategies against top_k, in words."""
    top_k = data["strategies"]["top_k"]
    top_k_reach, top_k_spent = top_k["labels_to_reach"], top_k["spent"][-1]
    phrases = []
    for name in ("elo_qd", "elo_q", "elo_d"):
        reach = data["strategies"][name]["labels_to_reach"]
        if reach is None:
            phrases.append(f"{name} does not reach it within its budgets")
        elif top_k_reach is not None:
            saved = 1 - reach / top_k_reach
            phrases.append(f"{name} {reach:.0f} labels against top_k's {top_k_reach:.0f} ({saved:.0%} fewer)")
        else:
            phrases.append(f"{name} reaches it at {reach:.0f} labels")
    if top_k_reach is None:
        phrases.append(f"top_k does not reach it within the {top_k_spent:.0f} labels it can spend")
    return "; ".join(phrases) + "."


def write_markdown(report: dict, path: Path) -> None:
    lines = [
        "# ELO-DCG training-data selection: benchmark",
        "",
        f"`python bench/bench_elo_dcg.py --repetitions {report['repetitions']}` on {report['machine']}; "
        f"{report['seconds']:.0f} s. DCG@10 (gain 2^y - 1) of a LightGBM model trained on base + selected, "
        "on held-out test queries; mean ± SE over repetitions (new random query splits each); paired "
        "differences share the split, the ensemble and the final model's seed.",
        "",
    ]
    if report["repetitions"] < 20:
        lines += [f"**Fewer repetitions than the protocol's 20: {report['repetitions']}.**", ""]
    for data in report["datasets"]:
        budgets = data["budgets"]
        lines += [
            f"## {data['dataset']} ({data['headline']})",
            "",
            f"Pool: {data['pool_queries']} queries, {data['pool_docs_mean']:.0f} documents on average; "
            f"base model {fmt(*data['base'])}, whole-pool model {fmt(*data['whole_pool'])}; "
            f"target for 'labels to reach' (95 % of the gap) {data['reach_target']:.3f}. "
            f"Ensemble fit (8 members) median {data['ensemble_fit_seconds_median']:.1f} s, "
            f"EL {data['el_seconds_median']:.3f} s.",
            "",
            "Test DCG@10 by budget (labels; capped strategies may spend less, see 'spent'):",
            "",
            "| strategy | "
            + " | ".join(str(b) for b in budgets)
            + " | spent at the largest | labels to reach |",
            "|---" * (len(budgets) + 3) + "|",
        ]
        for name, entry in data["strategies"].items():
            reach = entry["labels_to_reach"]
            first = entry["spent"][0]
            shown = (
                "not reached" if reach is None else (f"<= {first:.0f}" if reach <= first else f"{reach:.0f}")
            )
            lines.append(
                f"| {name} | "
                + " | ".join(fmt(m, s) for m, s in zip(entry["mean"], entry["se"], strict=True))
                + f" | {entry['spent'][-1]:.0f} | {shown} |"
            )
        for reference in ("random_q", "top_k"):
            lines += [
                "",
                f"Paired difference against {reference} (mean ± SE; positive = better than {reference}):",
                "",
                "| strategy | " + " | ".join(str(b) for b in budgets) + " |",
                "|---" * (len(budgets) + 1) + "|",
            ]
            for name, entry in data["strategies"].items():
                if name == reference:
                    continue
                lines.append(
                    f"| {name} | "
                    + " | ".join(
                        fmt(m, s, 4)
                        for m, s in zip(
                            entry[f"diff_{reference}"], entry[f"diff_{reference}_se"], strict=True
                        )
                    )
                    + " |"
                )
        lines += [
            "",
            "Cost of drawing instead of taking the top (drawn - deterministic, paired):",
            "",
            "| strategy | " + " | ".join(str(b) for b in budgets) + " |",
            "|---" * (len(budgets) + 1) + "|",
        ]
        for name, entry in data["strategies"].items():
            if "diff_deterministic" in entry:
                lines.append(
                    f"| {name} | "
                    + " | ".join(
                        fmt(m, s, 4)
                        for m, s in zip(
                            entry["diff_deterministic"], entry["diff_deterministic_se"], strict=True
                        )
                    )
                    + " |"
                )
        lines += [
            "",
            "Labels spent (mean over repetitions; the drawn two-stage rules spend at most the budget):",
            "",
            "| strategy | " + " | ".join(str(b) for b in budgets) + " |",
            "|---" * (len(budgets) + 1) + "|",
        ]
        for name, entry in data["strategies"].items():
            lines.append(f"| {name} | " + " | ".join(f"{v:.0f}" for v in entry["spent"]) + " |")
        lines += [
            "",
            "Share of selected labels with grade >= 1 at each budget:",
            "",
            "| strategy | " + " | ".join(str(b) for b in budgets) + " |",
            "|---" * (len(budgets) + 1) + "|",
        ]
        for name, entry in data["strategies"].items():
            lines.append(f"| {name} | " + " | ".join(f"{v:.2f}" for v in entry["relevant_share"]) + " |")
        lines += [
            "",
            "Labels to reach the target against top_k (paper's Table 2: 20-60 % fewer): " + savings(data),
            "",
        ]
    if "speed" in report:
        s = report["speed"]
        lines += [
            "## Speed of one round's selection",
            "",
            f"Synthetic pool of {s['n_queries']:,} queries x {s['n_docs']} documents, "
            f"N = {s['members']}, one thread: EL(q) {s['el_query_seconds']:.1f} s, "
            f"EL(j) {s['el_doc_seconds']:.1f} s, the whole elo_qd selection (EL included) "
            f"{s['select_elo_qd_seconds']:.1f} s for {s['selected']:,} labels (target < 60 s). "
            f"Fitting apart: 8 members on 1,000 labeled queries x {s['n_docs']} documents x 46 "
            f"features, with their predictions for those rows, "
            f"{s['ensemble_fit_and_predict_base_seconds']:.1f} s; predicting the whole pool with 8 "
            f"members ~{s['predict_whole_pool_seconds_estimated']:.0f} s (measured on 360,000 rows, "
            "scaled).",
            "",
        ]
    path.write_text("\n".join(lines), encoding="utf-8")


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--repetitions", type=int, default=20)
    parser.add_argument("--datasets", nargs="+", default=["mslr", "mq2008"], choices=["mslr", "mq2008"])
    parser.add_argument("--speed-queries", type=int, default=30_000, help="0 skips the speed measurement")
    parser.add_argument("--out", default=str(RESULTS / "elo_dcg"), help="output path without suffix")
    parser.add_argument("--report-only", action="store_true", help="rewrite the .md from the existing .json")
    args = parser.parse_args()
    out = Path(args.out)
    if args.report_only:
        write_markdown(
            json.loads(out.with_suffix(".json").read_text(encoding="utf-8")), out.with_suffix(".md")
        )
        return
    started = time.perf_counter()
    report: dict = {
        "repetitions": args.repetitions,
        "machine": f"{platform.machine()}, Python {platform.python_version()}, one thread",
        "datasets": [],
    }
    for data in load_datasets(args.datasets):
        runs = []
        for repetition in range(args.repetitions):
            runs.append(one_repetition(data, repetition))
            print(
                f"{data.name}: repetition {repetition + 1}/{args.repetitions} "
                f"({time.perf_counter() - started:.0f} s)",
                file=sys.stderr,
            )
        report["datasets"].append(summarise(data, runs))
    if args.speed_queries:
        report["speed"] = speed(args.speed_queries, 120)
        print(f"speed: {report['speed']}", file=sys.stderr)
    report["seconds"] = time.perf_counter() - started
    out.with_suffix(".json").write_text(json.dumps(report, indent=1), encoding="utf-8")
    write_markdown(report, out.with_suffix(".md"))
    print(out.with_suffix(".md").read_text(encoding="utf-8"))


if __name__ == "__main__":
    main()
