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

from estimation.formats.trec import read_costs, read_labels, read_qrels, read_run
from estimation.metrics.spec import Metric
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

EPILOG = """\
example:
  python -m estimation plan runA.run runB.run --labels labels.tsv --metric DCG@10 --goal difference
"""

GOAL_RUNS = {"one": (1, 1), "difference": (2, 2), "leaderboard": (2, None)}


def register(subparsers: argparse._SubParsersAction) -> None:
    """Add the ``plan`` subcommand."""
    parser = subparsers.add_parser(
        "plan",
        help="sampling probabilities of queries for a judging campaign",
        description=DESCRIPTION,
        epilog=EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument(
        "runs", metavar="RUN", nargs="+", help="TREC run file(s): qid Q0 docno rank score tag (plain or .gz)"
    )
    parser.add_argument(
        "--labels",
        required=True,
        metavar="LABELS",
        help="label model: qid docno p_0 ... p_ymax per line (whitespace-separated)",
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
        default=DEFAULT_MIX,
        metavar="EPS",
        help=f"weight of the uniform query distribution in the mixture, in [0, 1] (default {DEFAULT_MIX})",
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
        help="top grade (default: the number of probabilities per LABELS row minus 1)",
    )
    parser.set_defaults(handler=plan_command)


def plan_command(args: argparse.Namespace, out: TextIO | None = None, err: TextIO | None = None) -> int:
    """Run the ``plan`` subcommand; file problems raise `InputFileError` (exit status 2)."""
    out = sys.stdout if out is None else out
    err = sys.stderr if err is None else err
    Metric.parse(args.metric)  # fail on a typo before reading any file
    _check_run_count(args.goal, len(args.runs))

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
    plan = optimal_query_distribution(pool, metric, args.goal, systems, query_cost=raw_cost, mix=args.mix)

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
