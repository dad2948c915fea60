"""Learned DCG (DCGLearn, Zhou et al. 2014): the paper's simulations, real runs, and speed.

(a) Permutation simulation (paper §5.2; method note §6): lists are random permutations of the
    grades [4, 4, 3, 3, 2, 2, 1, 1, 0, 0], K = 10, L = 5; truth ``W = g_l / log2(k + 1)`` with
    ``g = l`` (Data 1) or ``2^l - 1`` (Data 2). `fit_weights` (the QP, Clarabel) at C = 10 on
    20 / 100 / 800 training pairs, accuracy on 5,000 fresh test pairs; the other setting's
    truth on the same test pairs; gains recovered at 800 pairs; 25 % reversed training labels
    at 800 pairs (scored on clean test labels). Medians over seeds, compared with the
    independent reproduction quoted in the method note.
(b) SimpleMargin against random selection at 200 labels (paper §5.5): a pool of 5,000
    unlabeled pairs, a random start of 30 labels, then one label at a time (refit with the
    QP after each); random selection draws all 200 labels at random.
(c) Side-by-side answers simulated on real runs (method note §7): each topic's lists are the
    top 10 of real runs graded by the real qrels (unjudged = 0); the ground truth is not a
    standard DCG: ``c* = 1/k``, ``g* = [0, 1, 1.5]`` (a saturating gain), fixed before looking
    at any result; Thurstone noise ``ν = 1`` with Table 1's label shares. `learn_dcg` on
    1,000 and 3,000 answers; accuracy on 20,000 fresh answers of the learned W, the oracle
    ``w*`` (the noise ceiling), and DCG@10 with gain 2^y - 1 and y; Kendall τ between the
    true leaderboard of the systems (mean ``w*`` utility over all topics) and the leaderboard
    under learned and standard DCG. Robust03 (17 runs, 100 topics) and MQ2008 (8 runs, 470).
(d) Speed at 5,000 answers (K = 10, L = 5, 100 topics), one thread: one solve by the QP
    (Clarabel), by projected Newton and by L-BFGS-B on the bound-only form (objectives and
    T(W) compared), and one full `learn_dcg` refit with its defaults (the likelihood fit,
    cross-validation over 4 C, 100 bootstrap replicates each repeating the whole fit, BCa,
    the form test, learning curve), median of 5.

Usage: ``python bench/bench_learned_dcg.py [--seeds 20]`` (about 2 minutes). Writes
``bench/results/learned_dcg.json`` and ``.md``. Data: ``$SHARED_DATA_DIR`` or ``../shared/data``.
"""

from __future__ import annotations

import os

for _name in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_name, "1")  # "one core": set before numpy loads BLAS

import argparse  # noqa: E402
import json  # noqa: E402
import platform  # noqa: E402
import statistics  # noqa: E402
import sys  # noqa: E402
import time  # noqa: E402
from pathlib import Path  # noqa: E402

import numpy as np  # noqa: E402
from scipy.stats import kendalltau  # noqa: E402

REPO_ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO_ROOT))

from estimation.cli.learn_dcg import top_k_grades  # noqa: E402
from estimation.formats.trec import read_qrels, read_run  # noqa: E402
from estimation.learned_dcg.fit import (  # noqa: E402
    PreferenceData,
    _informative_pairs,
    fit_weights,
    learn_dcg,
    preference_accuracy,
    rank_one,
    simple_margin,
    standard_weights,
    transformed_weights,
    utilities,
)
from estimation.learned_dcg.simulation import permutation_preferences, run_preferences  # noqa: E402
from estimation.learned_dcg.solvers import objective, solve_bounded, solve_newton, solve_qp  # noqa: E402

SHARED_DATA = Path(os.environ.get("SHARED_DATA_DIR", REPO_ROOT.parent / "shared" / "data"))
RESULTS = REPO_ROOT / "bench" / "results"
C = 10.0
TRAIN_SIZES = (20, 100, 800)
N_TEST = 5000
DOC_REPRODUCTION = {"linear": (0.778, 0.900, 0.981), "exp": (0.769, 0.892, 0.978)}
DOC_GAINS = {"linear": (0, 0.27, 0.50, 0.75, 1), "exp": (0, 0.08, 0.21, 0.52, 1)}
DOC_ACTIVE = {"simple_margin": 0.992, "random": 0.936}
TOLERANCE = 0.02
ACTIVE_LABELS, RANDOM_START, POOL = 200, 30, 5000
REAL_TRUTH_GAINS = (0.0, 1.0, 1.5)
REAL_ANSWERS = (1000, 3000)
REAL_TEST = 20000
NU = 1.0
ORACLE_TARGET = 0.015
DATA_NAMES = {"linear": "Data 1 (g = l)", "exp": "Data 2 (g = 2^l - 1)"}


def median(values: list[float]) -> float:
    return float(statistics.median(values))


# ---------------------------------------------------------------------------------------------
# (a) and (b): the permutation simulation


def permutation_accuracy(seeds: int) -> dict:
    out = {}
    for gain, other in (("linear", "exp"), ("exp", "linear")):
        truth = standard_weights(10, 5, gain)
        rows: dict[str, list] = {str(n): [] for n in TRAIN_SIZES} | {"other": [], "noisy": [], "gains": []}
        for seed in range(seeds):
            rng = np.random.default_rng(1000 + seed)
            train = permutation_preferences(max(TRAIN_SIZES), truth, rng)
            test = permutation_preferences(N_TEST, truth, rng)
            for n in TRAIN_SIZES:
                subset = PreferenceData(
                    train.left[:n], train.right[:n], train.preference[:n], train.groups[:n]
                )
                W = fit_weights(subset, 5, c_strict=C)
                rows[str(n)].append(preference_accuracy(W, test))
                if n == max(TRAIN_SIZES):
                    rows["gains"].append(rank_one(transformed_weights(W)).gains)
            rows["other"].append(preference_accuracy(standard_weights(10, 5, other), test))
            noisy = permutation_preferences(max(TRAIN_SIZES), truth, rng, reversed_share=0.25)
            rows["noisy"].append(preference_accuracy(fit_weights(noisy, 5, c_strict=C), test))
        true_gains = truth[0] / truth[0, -1]
        measured = [median(rows[str(n)]) for n in TRAIN_SIZES]
        out[gain] = {
            "accuracy": dict(zip(map(str, TRAIN_SIZES), measured, strict=True)),
            "accuracy_quartiles": {
                str(n): np.percentile(rows[str(n)], [25, 75]).round(3).tolist() for n in TRAIN_SIZES
            },
            "doc_reproduction": dict(zip(map(str, TRAIN_SIZES), DOC_REPRODUCTION[gain], strict=True)),
            "within_tolerance": all(
                abs(a - b) <= TOLERANCE for a, b in zip(measured, DOC_REPRODUCTION[gain], strict=True)
            ),
            "other_setting_accuracy": median(rows["other"]),
            "reversed_25pct_accuracy_800": median(rows["noisy"]),
            "gains_800": np.median(np.array(rows["gains"]), axis=0).round(3).tolist(),
            "true_gains": true_gains.round(3).tolist(),
            "doc_gains_800": list(DOC_GAINS[gain]),
        }
    return out


def active_selection(seeds: int) -> dict:
    out = {}
    for gain in ("linear", "exp"):
        truth = standard_weights(10, 5, gain)
        margin_scores, random_scores, seconds = [], [], []
        for seed in range(seeds):
            rng = np.random.default_rng(2000 + seed)
            pool = permutation_preferences(POOL, truth, rng)
            test = permutation_preferences(N_TEST, truth, rng)
            asked = np.zeros(POOL, dtype=bool)
            asked[rng.choice(POOL, RANDOM_START, replace=False)] = True
            started = time.perf_counter()
            while asked.sum() < ACTIVE_LABELS:
                W = fit_weights(subset(pool, asked), 5, c_strict=C)
                asked[simple_margin(W, pool.left, pool.right, pool.groups, exclude=asked)] = True
            seconds.append(time.perf_counter() - started)
            margin_scores.append(preference_accuracy(fit_weights(subset(pool, asked), 5, c_strict=C), test))
            chosen = np.zeros(POOL, dtype=bool)
            chosen[rng.choice(POOL, ACTIVE_LABELS, replace=False)] = True
            random_scores.append(preference_accuracy(fit_weights(subset(pool, chosen), 5, c_strict=C), test))
        out[gain] = {
            "simple_margin": median(margin_scores),
            "random": median(random_scores),
            "doc": DOC_ACTIVE,
            "seconds_per_campaign": median(seconds),
        }
    return out


def subset(data: PreferenceData, mask: np.ndarray) -> PreferenceData:
    return PreferenceData(data.left[mask], data.right[mask], data.preference[mask], data.groups[mask])


# ---------------------------------------------------------------------------------------------
# (c): real runs


def real_lists(name: str) -> tuple[np.ndarray, list[str]]:
    """(topics, systems, 10) grades of each run's top 10 on the qrels' topics, and the run tags."""
    if name == "Robust03":
        qrels = read_qrels(SHARED_DATA / "robust03" / "qrels.txt")
        paths = sorted((SHARED_DATA / "robust03" / "runs").glob("input.*.gz"))
    else:
        qrels = read_qrels(SHARED_DATA / "mq2008" / "qrels.txt")
        paths = sorted((SHARED_DATA / "mq2008" / "runs").glob("*.run"))
    runs = [read_run(path) for path in paths]
    lists = top_k_grades(runs, qrels, 10)
    topics = sorted(qrels)
    empty = np.full(10, -1)
    grades = np.array([[lists.get((run.tag, qid), empty) for run in runs] for qid in topics])
    return grades, [run.tag for run in runs]


def real_runs(seeds: int) -> dict:
    K = 10
    truth = np.outer(1.0 / np.arange(1, K + 1), REAL_TRUTH_GAINS)
    exp, linear = standard_weights(K, 3, "exp"), standard_weights(K, 3, "linear")
    out = {}
    for name in ("Robust03", "MQ2008"):
        lists, tags = real_lists(name)
        m, n_systems, _ = lists.shape

        def leaderboard(
            W: np.ndarray, lists: np.ndarray = lists, m: int = m, n: int = n_systems
        ) -> np.ndarray:
            return utilities(W, lists.reshape(m * n, K)).reshape(m, n).mean(axis=0)

        true_board = leaderboard(truth)
        per_size = {}
        for n_answers in REAL_ANSWERS:
            rows: dict[str, list[float]] = {
                k: [] for k in ("learned", "oracle", "exp", "linear", "cv_learned", "cv_exp", "cv_linear")
            }
            taus: dict[str, list[float]] = {"learned": [], "exp": [], "linear": []}
            gains, discounts, ratios = [], [], []
            for seed in range(seeds):
                rng = np.random.default_rng(3000 + seed)
                data, _ = run_preferences(lists, n_answers, truth, rng, nu=NU)
                test, _ = run_preferences(lists, REAL_TEST, truth, rng, nu=NU)
                result = learn_dcg(data, 3, seed=seed, bootstrap=20, curve=False)
                for label, W in (
                    ("learned", result.weights),
                    ("oracle", truth),
                    ("exp", exp),
                    ("linear", linear),
                ):
                    rows[label].append(preference_accuracy(W, test))
                for label in ("learned", "exp", "linear"):
                    rows[f"cv_{label}"].append(result.accuracy[label])
                for label, W in (("learned", result.weights), ("exp", exp), ("linear", linear)):
                    taus[label].append(float(kendalltau(leaderboard(W), true_board).statistic))
                gains.append(result.gains)
                discounts.append(result.discounts)
                ratios.append(result.sigma_ratio)
            summary = {key: median(values) for key, values in rows.items()}
            summary["oracle_minus_learned"] = summary["oracle"] - summary["learned"]
            summary["within_target"] = summary["oracle_minus_learned"] <= ORACLE_TARGET
            summary["kendall_tau"] = {key: median(values) for key, values in taus.items()}
            summary["gains"] = np.median(np.array(gains), axis=0).round(3).tolist()
            summary["discounts"] = np.median(np.array(discounts), axis=0).round(3).tolist()
            summary["sigma_ratio"] = median(ratios)
            per_size[str(n_answers)] = summary
        out[name] = {
            "topics": m,
            "systems": n_systems,
            "true_gains": [g / REAL_TRUTH_GAINS[-1] for g in REAL_TRUTH_GAINS],
            "true_discounts": (1.0 / np.arange(1, K + 1)).round(3).tolist(),
            "answers": per_size,
        }
    return out


# ---------------------------------------------------------------------------------------------
# (d): speed


def speed(repeats: int = 5) -> dict:
    rng = np.random.default_rng(4000)
    data = permutation_preferences(5000, standard_weights(10, 5, "exp"), rng, reversed_share=0.1)
    data = PreferenceData(data.left, data.right, data.preference, np.arange(len(data)) % 100)
    pairs = _informative_pairs(data, 5, ties=True, much_better_margin=1.0)
    weights = pairs.design.row_weights(np.ones(pairs.answer.size))
    times: dict[str, list[float]] = {"qp": [], "newton": [], "lbfgsb": [], "learn_dcg": []}
    solutions = {}
    for _ in range(repeats):
        for label, solver in (("qp", solve_qp), ("newton", solve_newton), ("lbfgsb", solve_bounded)):
            started = time.perf_counter()
            solutions[label] = solver(pairs.design, weights, C, C)
            times[label].append(time.perf_counter() - started)
        started = time.perf_counter()
        learn_dcg(data, 5)
        times["learn_dcg"].append(time.perf_counter() - started)
    f_qp = objective(solutions["qp"], pairs.design, weights, C, C)
    agreement = {}
    for label in ("newton", "lbfgsb"):
        f = objective(solutions[label], pairs.design, weights, C, C)
        t_gap = transformed_weights(solutions[label].reshape(10, 5)) - transformed_weights(
            solutions["qp"].reshape(10, 5)
        )
        agreement[label] = {
            "objective_rel_diff": (f - f_qp) / f_qp,
            "max_abs_T_diff": float(np.abs(t_gap).max()),
        }
    return {
        "answers": len(data),
        "seconds_median": {key: median(values) for key, values in times.items()},
        "agreement_with_qp": agreement,
        "learn_dcg_fits": (
            "the likelihood fit: 20 cross-validation (4 C x 5 folds) + 1 final, 100 bootstrap replicates "
            "of those 21, 25 jackknife, the form test's two, 40 curve"
        ),
    }


# ---------------------------------------------------------------------------------------------
# Report


def markdown(report: dict) -> str:
    a, b, c, d = report["permutation"], report["active"], report["real"], report["speed"]
    agree = d["agreement_with_qp"]
    lines = [
        "# Learned DCG (DCGLearn): simulations, real runs, speed",
        "",
        f"`python bench/bench_learned_dcg.py --seeds {report['seeds']}` ({report['platform']}); medians over "
        f"{report['seeds']} seeds. Generated file; see the script's docstring for the set-up.",
        "",
        f"## (a) Permutation simulation, K = 10, L = 5, C = {C:g}, {N_TEST:,} test pairs",
        "",
        "| data | 20 pairs | 100 | 800 | method note's reproduction | within 0.02 | other setting's truth "
        "| 25 % reversed labels, 800 | gains at 800 (true) |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    for gain in ("linear", "exp"):
        row = a[gain]
        acc = " | ".join(f"{row['accuracy'][str(n)]:.3f}" for n in TRAIN_SIZES)
        doc = " / ".join(f"{v:.3f}" for v in row["doc_reproduction"].values())
        lines.append(
            f"| {DATA_NAMES[gain]} | {acc} | {doc} | {'yes' if row['within_tolerance'] else 'no'} | "
            f"{row['other_setting_accuracy']:.3f} | {row['reversed_25pct_accuracy_800']:.3f} | "
            f"{row['gains_800']} ({row['true_gains']}; note {row['doc_gains_800']}) |"
        )
    lines += [
        "",
        f"## (b) SimpleMargin vs random selection at {ACTIVE_LABELS} labels ({RANDOM_START} random first)",
        "",
        "| data | SimpleMargin | random | method note (SimpleMargin / random) | seconds per campaign |",
        "|---|---|---|---|---|",
    ]
    for gain in ("linear", "exp"):
        row = b[gain]
        lines.append(
            f"| {DATA_NAMES[gain]} | {row['simple_margin']:.3f} | {row['random']:.3f} | "
            f"{DOC_ACTIVE['simple_margin']} / {DOC_ACTIVE['random']} | {row['seconds_per_campaign']:.1f} |"
        )
    lines += [
        "",
        f"## (c) Real runs, truth c* = 1/k, g* = {list(REAL_TRUTH_GAINS)}, nu = {NU:g}, Table 1 label shares",
        "",
        f"Accuracy on {REAL_TEST:,} fresh answers with a direction (cross-validated accuracy from "
        "`learn_dcg` in brackets); Kendall tau of the systems' leaderboard against the true one.",
        "",
        "| data | answers | learned | oracle w* | oracle - learned (target <= 0.015) | DCG 2^y-1 | DCG y "
        "| tau learned | tau 2^y-1 | tau y | learned gains | sigma2/sigma1 |",
        "|---|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for name, block in c.items():
        for size, row in block["answers"].items():
            tau = row["kendall_tau"]
            lines.append(
                f"| {name} ({block['systems']} runs, {block['topics']} topics) | {int(size):,} | "
                f"{row['learned']:.3f} ({row['cv_learned']:.3f}) | {row['oracle']:.3f} | "
                f"{row['oracle_minus_learned']:.3f} {'ok' if row['within_target'] else 'MISSED'} | "
                f"{row['exp']:.3f} ({row['cv_exp']:.3f}) | {row['linear']:.3f} ({row['cv_linear']:.3f}) | "
                f"{tau['learned']:.3f} | {tau['exp']:.3f} | {tau['linear']:.3f} | {row['gains']} | "
                f"{row['sigma_ratio']:.3f} |"
            )
    first = next(iter(c.values()))
    lines += [
        "",
        f"True gains normalised: {[round(g, 3) for g in first['true_gains']]}; true discounts "
        f"{first['true_discounts']}. Learned discounts (Robust03, {REAL_ANSWERS[-1]:,} answers): "
        f"{c['Robust03']['answers'][str(REAL_ANSWERS[-1])]['discounts']}.",
        "",
        f"## (d) Speed, {d['answers']:,} answers, K = 10, L = 5, one thread (median of 5)",
        "",
        "| one solve: QP (Clarabel) | projected Newton | L-BFGS-B | full `learn_dcg` refit |",
        "|---|---|---|---|",
        f"| {d['seconds_median']['qp']:.3f} s | {d['seconds_median']['newton']:.4f} s | "
        f"{d['seconds_median']['lbfgsb']:.3f} s | {d['seconds_median']['learn_dcg']:.2f} s |",
        "",
        f"Agreement with the QP: Newton objective {agree['newton']['objective_rel_diff']:.1e} relative, "
        f"max |T(W) difference| {agree['newton']['max_abs_T_diff']:.1e}; L-BFGS-B "
        f"{agree['lbfgsb']['objective_rel_diff']:.1e}, {agree['lbfgsb']['max_abs_T_diff']:.1e}. "
        f"A refit is {d['learn_dcg_fits']} fits (Newton methods).",
        "",
    ]
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seeds", type=int, default=20, help="seeds per setting (default 20)")
    args = parser.parse_args()
    if not SHARED_DATA.is_dir():
        raise SystemExit(f"shared data not found at {SHARED_DATA} (set SHARED_DATA_DIR)")
    started = time.perf_counter()
    report = {
        "seeds": args.seeds,
        "platform": f"Python {platform.python_version()}, {platform.machine()}",
        "permutation": permutation_accuracy(args.seeds),
    }
    print(f"(a) done in {time.perf_counter() - started:.0f} s", file=sys.stderr)
    report["active"] = active_selection(args.seeds)
    print(f"(b) done in {time.perf_counter() - started:.0f} s", file=sys.stderr)
    report["real"] = real_runs(args.seeds)
    print(f"(c) done in {time.perf_counter() - started:.0f} s", file=sys.stderr)
    report["speed"] = speed()
    report["total_seconds"] = time.perf_counter() - started
    RESULTS.mkdir(parents=True, exist_ok=True)
    (RESULTS / "learned_dcg.json").write_text(json.dumps(report, indent=1) + "\n")
    (RESULTS / "learned_dcg.md").write_text(markdown(report))
    print(markdown(report))


if __name__ == "__main__":
    main()
