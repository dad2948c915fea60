"""``python -m estimation plan``: which queries to label, and with what probability.

Output (stdout, tab-separated, a header then one line per query of the runs)::

    qid  q  cost  expected  second_moment

``q`` is the sampling probability after the defensive mixture, ``cost`` the raw query cost
lambda(x), ``expected`` E[L | x; theta] (E[delta | x; theta] for a difference) and
``second_moment`` the quantity under the square root of Sawade et al.'s optimal distribution.
A one-line summary goes to stderr so that stdout stays machine-readable.
"""

from __future__ import annotations

import argparse
import sys
from typing import TextIO

import numpy as np

from estimation.formats.judge_labels import read_judge_labels
from estimation.formats.trec import read_costs, read_labels, read_qrels, read_run
from estimation.judges.calibration import MISSING, judge_classes, no_calibration
from estimation.judges.design import DEFAULT_SAFETY_SHARE, judged_distribution
from estimation.judges.files import external_calibration
from estimation.metrics.spec import Metric
from estimation.sampling.items import system_weights
from estimation.sampling.pool_build import ESTIMAND_RULE, build_pool
from estimation.sampling.queries import DEFAULT_MIX, optimal_query_distribution

DESCRIPTION = f"""\
Plan a query-level judging campaign (Sawade et al. 2013): print, for every query of the
runs, the probability q(x) of drawing it, proportional to

    p(x) * sqrt(second_moment(x)) / sqrt(cost(x)),   mixed as (1 - EPS) q* + EPS p(x),

with p uniform over the queries. Columns:

  qid            the query
  q              sampling probability after mixing with EPS (the column sums to 1)
  cost           lambda(x): the summed document costs of the union of the runs' top K
                 (K = the metric's cutoff; 1 per document unless --costs is given)
  expected       E[L | x] of the run under the label model (difference: E[L1 - L2 | x];
                 leaderboard: the mean over the runs of E[L | x])
  second_moment  E[(L - R)^2 | x] with R = the mean over queries of E[L | x]
                 (difference: E[(delta - Delta)^2 | x]; leaderboard: the sum over the runs)

Goals: one (exactly one run), difference (exactly two runs: the first minus the second),
leaderboard (two or more runs, all absolute values). Documents missing from LABELS get the
uniform distribution over the grades. Default EPS: {DEFAULT_MIX}, so that every query keeps
at least a tenth of its passive probability and importance weights stay below 1 / EPS.
"""

JUDGED = """
With --judge JUDGE_LABELS (a model judge's labels of the pool: TREC qrels, JSONL or BEIR qrels)
the plan is the judged design's instead, one line per pooled (query, document) pair:

  qid  docno  q  cost  judge_class  h  sigma

q = (1 - EPS) |a| sigma(f) / sqrt(cost) / Z + EPS w / Z' (EPS default 0.2), where a is the pair's
DCG weight for the goal and w the summed weights of the runs; h and sigma come from
--judge-calibration HUMAN_QRELS JUDGE_LABELS (the same judge on other topics). Without a
calibration set the design starts from the no-model one (h = 0, sigma = 1) and calibrates on its
own first human labels: replay that with `simulate --strategy judged`. --labels is not needed.
"""

EPILOG = """\
examples:
  python -m estimation plan runA.run runB.run --labels labels.tsv --metric DCG@10 --goal difference
  python -m estimation plan runA.run runB.run --metric DCG@10 --goal difference --judge llm.txt \\
      --judge-calibration other_topics_qrels.txt other_topics_llm.txt
"""

GOAL_RUNS = {"one": (1, 1), "difference": (2, 2), "leaderboard": (2, None)}


def register(subparsers: argparse._SubParsersAction) -> None:
    """Add the ``plan`` subcommand."""
    parser = subparsers.add_parser(
        "plan",
        help="sampling probabilities of queries for a judging campaign",
        description=DESCRIPTION + JUDGED,
        epilog=EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument(
        "runs", metavar="RUN", nargs="+", help="TREC run file(s): qid Q0 docno rank score tag (plain or .gz)"
    )
    parser.add_argument(
        "--labels",
        metavar="LABELS",
        help="label model: qid docno p_0 ... p_ymax per line (whitespace-separated); required unless --judge",
    )
    parser.add_argument("--metric", "-m", required=True, metavar="M", help="DCG@K or ERR@K")
    parser.add_argument("--goal", required=True, choices=tuple(GOAL_RUNS), help="what the campaign estimates")
    parser.add_argument("--costs", metavar="COSTS", help="docno cost per line (default: 1 per document)")
    parser.add_argument(
        "--qrels",
        metavar="QRELS",
        help="the estimand's topics are the qrels topics, as evaluate averages over them (a topic "
        "no run ranks counts 0 and costs nothing; run topics without qrels are dropped); "
        "default: the runs' topics",
    )
    parser.add_argument(
        "--mix",
        type=float,
        default=None,
        metavar="EPS",
        help=f"weight of the uniform query distribution in the mixture, in [0, 1] (default {DEFAULT_MIX}; "
        f"with --judge the no-model design's share, in (0, 1], default {DEFAULT_SAFETY_SHARE})",
    )
    parser.add_argument(
        "--gain",
        choices=("exp", "linear"),
        default="exp",
        help="DCG gain: exp = 2^y - 1 (default), linear = y",
    )
    parser.add_argument(
        "--ymax",
        type=int,
        default=None,
        metavar="N",
        help="top grade (default: the number of probabilities per LABELS row minus 1; with --judge and "
        "no LABELS, the largest grade of the judge's labels and the calibration set, at least 1)",
    )
    parser.add_argument(
        "--judge", metavar="JUDGE_LABELS", help="plan the judged design with this judge's labels"
    )
    parser.add_argument(
        "--judge-calibration",
        nargs=2,
        metavar=("HUMAN_QRELS", "JUDGE_LABELS"),
        help="external calibration: human qrels and the same judge's labels on other topics",
    )
    parser.set_defaults(handler=plan_command)


def plan_command(args: argparse.Namespace, out: TextIO | None = None, err: TextIO | None = None) -> int:
    """Run the ``plan`` subcommand; file problems raise `InputFileError` (exit status 2)."""
    out = sys.stdout if out is None else out
    err = sys.stderr if err is None else err
    Metric.parse(args.metric)  # fail on a typo before reading any file
    _check_run_count(args.goal, len(args.runs))
    if args.judge_calibration and not args.judge:
        raise ValueError("--judge-calibration needs --judge (the judge's labels of this pool)")
    if args.judge:
        return _judged_plan(args, out, err)
    if not args.labels:
        raise ValueError("plan needs --labels (a label model), or --judge for the judged design")
    mix = DEFAULT_MIX if args.mix is None else args.mix

    labels = read_labels(args.labels)
    width = len(next(iter(labels.values())))
    y_max = width - 1 if args.ymax is None else args.ymax
    if y_max != width - 1:
        raise ValueError(
            f"{args.labels}: rows hold {width} probabilities (grades 0..{width - 1}), but --ymax is {y_max}"
        )
    metric = Metric.parse(args.metric, gain=args.gain, y_max=y_max)
    if metric.name == "nDCG":
        raise ValueError("plan with DCG@K or ERR@K: nDCG is not used to build sampling distributions")
    runs = [read_run(path) for path in args.runs]
    costs = read_costs(args.costs) if args.costs else None
    if costs is not None:
        _check_costs_cover_runs(costs, runs, metric.cutoff, args.costs)

    topics = sorted(read_qrels(args.qrels)) if args.qrels else None
    pool = build_pool(runs, metric.cutoff, y_max=y_max, labels=labels, item_cost=costs, topics=topics)
    systems = tuple(range(pool.n_systems))
    raw_cost = pool.item_cost.sum(axis=1)  # every slot comes from some run's top K
    plan = optimal_query_distribution(pool, metric, args.goal, systems, query_cost=raw_cost, mix=mix)

    out.write("qid\tq\tcost\texpected\tsecond_moment\n")
    # The query-level distribution always carries both (they are None only for the item level).
    assert plan.expected is not None and plan.second_moment is not None
    for qid, q, cost, expected, second in zip(
        pool.query_ids, plan.q, raw_cost, plan.expected, plan.second_moment, strict=True
    ):
        out.write(f"{qid}\t{q:.8g}\t{cost:.8g}\t{expected:.8g}\t{second:.8g}\n")
    pairs = [(qid, doc) for qid, docs in zip(pool.query_ids, pool.item_ids, strict=True) for doc in docs]
    labelled = sum(pair in labels for pair in pairs)
    err.write(
        f"plan: {pool.n_queries} queries, {pool.n_systems} run(s), {metric} (y_max {y_max}), "
        f"goal {args.goal}, mix {plan.mix:g}; {labelled} of {len(pairs)} (query, document) pairs "
        "have a label distribution, the others are uniform over the grades\n"
    )
    unranked = int(np.count_nonzero(~pool.slot_used.any(axis=1)))
    source = "qrels" if args.qrels else "runs'"
    err.write(
        f"plan: estimand over {pool.n_queries} topics (the {source} topics); {unranked} of them no run "
        f"ranks (known: 0, cost 0). Rule: {ESTIMAND_RULE}\n"
    )
    return 0


def _judged_plan(args: argparse.Namespace, out: TextIO, err: TextIO) -> int:
    """The judged design's q per pooled pair, with the judge's class and its calibration."""
    first = Metric.parse(args.metric)
    if not first.is_linear_in_labels:
        raise ValueError(f"the judged design estimates DCG@K only, not {first}")
    labels = read_labels(args.labels) if args.labels else None
    judge_path = args.judge
    if args.ymax is not None:
        y_max = args.ymax
    elif labels:
        y_max = len(next(iter(labels.values()))) - 1
    else:
        grades = [line.expected_grade() for line in read_judge_labels(judge_path).values()]
        if args.judge_calibration:
            grades += [
                g for grades_of in read_qrels(args.judge_calibration[0]).values() for g in grades_of.values()
            ]
        y_max = max(1, int(np.ceil(max(grades))))
    metric = Metric.parse(args.metric, gain=args.gain, y_max=y_max)
    judge = read_judge_labels(judge_path, y_max=y_max)
    runs = [read_run(path) for path in args.runs]
    costs = read_costs(args.costs) if args.costs else None
    if costs is not None:
        _check_costs_cover_runs(costs, runs, metric.cutoff, args.costs)
    topics = sorted(read_qrels(args.qrels)) if args.qrels else None
    pool = build_pool(runs, metric.cutoff, y_max=y_max, labels=labels, item_cost=costs, topics=topics)
    pairs = [
        (qid, docno) for qid, docnos in zip(pool.query_ids, pool.item_ids, strict=True) for docno in docnos
    ]
    classes = np.full(pool.slot_used.shape, MISSING, dtype=np.int64)
    for row, (qid, docnos) in enumerate(zip(pool.query_ids, pool.item_ids, strict=True)):
        found = [judge.get((qid, docno)) for docno in docnos]
        classes[row, : len(docnos)] = judge_classes(
            [None if line is None else line.grade for line in found],
            [None if line is None else line.probs for line in found],
            n_grades=y_max + 1,
        )
    calibration = (
        external_calibration(*args.judge_calibration, metric=metric)
        if args.judge_calibration
        else no_calibration(y_max + 1)
    )
    weights = np.stack([system_weights(pool, metric, s) for s in range(pool.n_systems)])
    if args.goal == "one":
        importance = np.abs(weights[0])
    elif args.goal == "difference":
        importance = np.abs(weights[0] - weights[1])
    else:
        importance = np.abs(weights).sum(axis=0)
    share = DEFAULT_SAFETY_SHARE if args.mix is None else args.mix
    design = judged_distribution(
        importance,
        np.where(pool.slot_used, calibration.sigma(classes), 0.0),
        np.abs(weights).sum(axis=0),
        safety_share=share,
        cost=np.where(pool.slot_used, np.maximum(pool.item_cost, 1e-12), 1.0),
    )
    h, sigma = calibration.h(classes), calibration.sigma(classes)
    out.write("qid\tdocno\tq\tcost\tjudge_class\th\tsigma\n")
    for row, (qid, docnos) in enumerate(zip(pool.query_ids, pool.item_ids, strict=True)):
        for slot, docno in enumerate(docnos):
            label_class = int(classes[row, slot])
            shown_class = "none" if label_class == MISSING else str(label_class)
            out.write(
                f"{qid}\t{docno}\t{design.q[row, slot]:.8g}\t{pool.item_cost[row, slot]:.8g}\t"
                f"{shown_class}\t{h[row, slot]:.8g}\t{sigma[row, slot]:.8g}\n"
            )
    labelled = int(np.count_nonzero(classes[pool.slot_used] != MISSING))
    how = (
        f"external, {calibration.n_items} pairs of {args.judge_calibration[0]}"
        if args.judge_calibration
        else "none yet (the first stage is the no-model design; calibrate on its labels)"
    )
    err.write(
        f"plan: judged design, {metric} (y_max {y_max}), goal {args.goal}, safety share {share:g}; "
        f"{labelled} of {len(pairs)} pooled pairs labelled by {judge_path}; calibration {how}\n"
    )
    return 0


def _check_run_count(goal: str, n_runs: int) -> None:
    low, high = GOAL_RUNS[goal]
    if n_runs < low or (high is not None and n_runs > high):
        wanted = f"exactly {low}" if low == high else f"at least {low}"
        raise ValueError(f"--goal {goal} needs {wanted} run(s), got {n_runs}")


def _check_costs_cover_runs(costs: dict[str, float], runs: list, cutoff: int, path: str) -> None:
    for run in runs:
        for qid, docnos in run.rankings.items():
            for docno in docnos[:cutoff]:
                if docno not in costs:
                    where = f"run {run.tag!r}, query {qid!r}"
                    raise ValueError(f"{path}: no cost for document {docno!r} ({where})")
