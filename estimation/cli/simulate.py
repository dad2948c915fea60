"""``python -m estimation simulate``: replay judging campaigns with the qrels as the oracle.

Output (stdout, tab-separated, a header then one line per strategy and budget)::

    strategy  budget  truth  mean  bias_se  rmse  coverage  mean_width  topics_judged

With ``--arrival NEW_RUN``, one line per strategy, budget, top-up and answer (reuse, fresh,
topup; `estimation.simulation.arrivals`)::

    strategy  budget  topup  arrival  truth  mean  bias_se  rmse  coverage  mean_width

A summary (pool, label model, seeds) goes to stderr so that stdout stays machine-readable.
The numbers come from `estimation.simulation.planner.plan_budgets`.
"""

from __future__ import annotations

import argparse
import sys
from typing import TextIO

from estimation.cli.evaluate import add_qrels_and_runs
from estimation.formats.judge_labels import read_judge_labels
from estimation.formats.trec import read_costs, read_labels, read_qrels, read_run
from estimation.judges.files import external_calibration
from estimation.metrics.spec import Metric
from estimation.simulation.arrivals import (
    ARRIVAL_GOALS,
    ARRIVAL_KINDS,
    ARRIVAL_STRATEGIES,
    prepare_arrival_replay,
    replay_arrival,
)
from estimation.simulation.planner import (
    DEFAULT_REPETITIONS,
    DEFAULT_TOPIC_MULTIPLES,
    GOAL_SYSTEMS,
    PLANNED,
    applicable_strategies,
    check_strategy,
    default_budgets,
    plan_budgets,
    prepare_replay,
)

COLUMNS = (
    "strategy",
    "budget",
    "truth",
    "mean",
    "bias_se",
    "rmse",
    "coverage",
    "mean_width",
    "topics_judged",
)
ARRIVAL_COLUMNS = (
    "strategy",
    "budget",
    "topup",
    "arrival",
    "truth",
    "mean",
    "bias_se",
    "rmse",
    "coverage",
    "mean_width",
)

DESCRIPTION = f"""\
Replay judging campaigns with the qrels as the assessors, to choose a strategy and a budget.
For each strategy and budget, REPETITIONS seeded campaigns are run through the core's own
sampling loop and estimator; the line reports how they did against the truth.

Goals: one (the metric of the first run), difference (first run minus second). Every run
given is pooled: judging a topic means judging the union of all runs' top K.
Strategies (default: all that apply to the metric):
  passive  topics drawn uniformly, every pooled document of a topic judged
  active   topics drawn where the label model expects the most information per cost
           (Sawade et al. 2013); DCG@K or ERR@K
  items    single (topic, document) pairs drawn by importance sampling
           (Schnabel et al. 2016); DCG@K only
  judged   a model judge labelled every pair (--judge); human labels drawn where the
           calibrated judge is least sure, the estimate corrects the judge with them;
           DCG@K only. Calibrated on --judge-calibration HUMAN_QRELS JUDGE_LABELS (the
           same judge on other topics), else internally (a first stage of a third of
           the budget, cross-fitted)

Columns:
  budget         cost units (1 per document unless --costs; a topic costs its pooled
                 documents); default: the cost of about {", ".join(map(str, DEFAULT_TOPIC_MULTIPLES))} topics
  truth          the value `python -m estimation evaluate` reports (mean over every qrels topic)
  mean, bias_se  mean estimate and its Monte-Carlo standard error
  rmse           root mean squared error about the truth
  coverage       share of campaigns whose 95 % interval held the truth
  mean_width     mean interval width
  topics_judged  mean number of distinct topics with a judged document

A run that arrives (--arrival NEW_RUN --reference REF_RUN --topup N ...): first --budget human
labels are spent on the pooled runs (every RUN) with the strategy's design for --goal (one,
difference, or leaderboard: every pooled run), then NEW_RUN arrives and each top-up of N labels
is spent where its difference with REF_RUN is uncertain. Strategies items and judged (item
level; DCG@K). One row per strategy, budget, top-up and answer:
  reuse   the stored draws only, as "Evaluate a new run" did before (NEW_RUN's documents that no
          pooled run retrieved are missing from it)
  fresh   a new difference campaign over the grown pool spending only the top-up
  topup   the stored draws plus the top-up, with the stratified estimator
  truth   DCG@K(NEW_RUN) - DCG@K(REF_RUN) over the qrels topics

items, active and passive never see the judge (they are the no-model baselines; a judge can
reach them only as a label model through --labels). Judge label files: TREC qrels, JSONL
({"qid", "docid", "grade"} or "probs"), or BEIR/Hugging Face qrels (query-id corpus-id score).

Label model for active and items: LABELS (qid docno p_0 ... p_ymax, as `plan` reads it);
without it, uniform over the grades. Repetition r uses numpy's default_rng([SEED, r]).
"""

EPILOG = """\
examples:
  python -m estimation simulate qrels.txt runA.gz runB.gz --metric DCG@10 --goal difference
  python -m estimation simulate qrels.txt runA runB --metric DCG@10 --goal difference \
      --strategy items --strategy judged --budget 25 --budget 50 --judge llm.txt \
      --judge-calibration other_topics_qrels.txt other_topics_llm.txt
  python -m estimation simulate qrels.txt runA runB runC --metric DCG@10 --goal leaderboard \
      --strategy items --budget 100 --arrival runD --reference runA --topup 10 --topup 25
"""


def register(subparsers: argparse._SubParsersAction) -> None:
    """Add the ``simulate`` subcommand."""
    parser = subparsers.add_parser(
        "simulate",
        help="replay campaigns against qrels: error and coverage per strategy and budget",
        description=DESCRIPTION,
        epilog=EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    add_qrels_and_runs(parser)
    parser.add_argument("--metric", "-m", required=True, metavar="M", help="DCG@K, ERR@K or nDCG@K")
    parser.add_argument(
        "--goal",
        required=True,
        choices=tuple(ARRIVAL_GOALS),
        help="what the campaign estimates (leaderboard: only with --arrival)",
    )
    parser.add_argument(
        "--strategy",
        dest="strategies",
        action="append",
        choices=tuple(PLANNED),
        help="repeat for several (default: every strategy that applies to the metric)",
    )
    parser.add_argument(
        "--budget",
        dest="budgets",
        action="append",
        type=float,
        metavar="B",
        help="budget in cost units; repeat for several",
    )
    parser.add_argument(
        "--repetitions",
        type=int,
        default=DEFAULT_REPETITIONS,
        metavar="R",
        help=f"campaigns per strategy (default {DEFAULT_REPETITIONS})",
    )
    parser.add_argument("--seed", type=int, default=0, metavar="S", help="seed, >= 0 (default 0)")
    parser.add_argument("--costs", metavar="COSTS", help="docno cost per line (default: 1 per document)")
    parser.add_argument(
        "--labels", metavar="LABELS", help="label model: qid docno p_0 ... p_ymax (default: uniform)"
    )
    parser.add_argument(
        "--gain",
        choices=("exp", "linear"),
        default="exp",
        help="DCG/nDCG gain: exp = 2^y - 1 (default), linear = y",
    )
    parser.add_argument(
        "--ymax",
        type=int,
        default=None,
        metavar="N",
        help="top grade (default: the label rows' width minus 1, else the largest qrels grade, at least 1)",
    )
    parser.add_argument(
        "--judge",
        metavar="JUDGE_LABELS",
        help="a model judge's labels of the pool (qrels, JSONL or BEIR); enables --strategy judged",
    )
    parser.add_argument(
        "--judge-calibration",
        nargs=2,
        metavar=("HUMAN_QRELS", "JUDGE_LABELS"),
        help="external calibration: human qrels and the same judge's labels on other topics "
        "(default: the internal two-stage calibration)",
    )
    parser.add_argument("--arrival", metavar="NEW_RUN", help="a run that arrives after --budget is spent")
    parser.add_argument(
        "--reference",
        metavar="REF_RUN",
        help="the pooled run (its path or tag) the arrival is compared with (default: the first RUN)",
    )
    parser.add_argument(
        "--topup",
        dest="topups",
        action="append",
        type=int,
        metavar="N",
        help="human labels spent once the run arrives; repeat for several (default 10, 25, 50)",
    )
    parser.set_defaults(handler=simulate_command)


def simulate_command(args: argparse.Namespace, out: TextIO | None = None, err: TextIO | None = None) -> int:
    """Run the ``simulate`` subcommand; file problems raise `InputFileError` (exit status 2)."""
    out = sys.stdout if out is None else out
    err = sys.stderr if err is None else err
    Metric.parse(args.metric)  # fail on a typo before reading any file
    if args.arrival is None and (args.reference or args.topups):
        raise ValueError("--reference and --topup describe an arrival: give --arrival NEW_RUN")
    if args.arrival is None and args.goal not in GOAL_SYSTEMS:
        raise ValueError(f"--goal {args.goal} is replayed only for an arrival (--arrival NEW_RUN)")
    needed = ARRIVAL_GOALS[args.goal] if args.arrival else GOAL_SYSTEMS[args.goal]
    if len(args.runs) < needed:
        raise ValueError(f"--goal {args.goal} needs at least {needed} run(s), got {len(args.runs)}")
    if args.repetitions < 2:
        raise ValueError(f"--repetitions must be >= 2, got {args.repetitions}")
    if args.seed < 0:
        raise ValueError(f"--seed must be >= 0, got {args.seed}")
    for budget in args.budgets or ():
        if not budget > 0:
            raise ValueError(f"--budget must be > 0, got {budget:g}")

    qrels = read_qrels(args.qrels)
    largest_grade = max(grade for grades_of in qrels.values() for grade in grades_of.values())
    labels = read_labels(args.labels) if args.labels else None
    y_max = _top_grade(args, labels, largest_grade)
    metric = Metric.parse(args.metric, gain=args.gain, y_max=y_max)
    judge = read_judge_labels(args.judge, y_max=y_max) if args.judge else None
    if args.judge_calibration and judge is None:
        raise ValueError("--judge-calibration needs --judge (the judge's labels of this pool)")
    calibration = (
        external_calibration(*args.judge_calibration, metric=metric) if args.judge_calibration else None
    )
    strategies = (
        tuple(dict.fromkeys(args.strategies))
        if args.strategies
        else applicable_strategies(metric, judge=judge is not None)
    )
    for strategy in strategies:
        check_strategy(strategy, metric, judge=judge is not None)
    runs = [read_run(path) for path in args.runs]
    if args.arrival is not None:
        return _arrival_command(args, qrels, runs, metric, labels, judge, calibration, out, err)
    costs = read_costs(args.costs) if args.costs else None
    if costs is not None:
        _check_costs_cover_runs(costs, runs, qrels, metric.cutoff, args.costs)

    replay = prepare_replay(
        qrels,
        runs,
        metric,
        args.goal,
        labels=labels,
        item_cost=costs,
        judge=None if judge is None else {pair: (line.grade, line.probs) for pair, line in judge.items()},
        judge_calibration=calibration,
    )
    budgets = args.budgets or default_budgets(replay).tolist()
    rows = plan_budgets(replay, strategies, budgets, repetitions=args.repetitions, seed=args.seed)

    out.write("\t".join(COLUMNS) + "\n")
    for row in rows:
        numbers = (row.budget, row.truth, row.mean, row.bias_se, row.rmse, row.coverage, row.mean_width)
        fields = [row.strategy, *(f"{value:.8g}" for value in numbers), f"{row.topics_judged:.4g}"]
        out.write("\t".join(fields) + "\n")
    used = " minus ".join(run.tag for run in runs[:needed])
    err.write(
        f"simulate: {metric} (y_max {y_max}, gain {metric.gain}) of {used}; {len(runs)} run(s) pooled; "
        f"{replay.pool.n_queries} of {len(qrels)} qrels topics ranked by some run (the others count 0); "
        f"mean topic cost {replay.topic_cost.mean():.6g}; label model "
        f"{'from ' + args.labels if labels else 'uniform over the grades'}; "
        f"{args.repetitions} repetitions, seed {args.seed}\n"
    )
    if judge is not None:
        how = (
            f"external, {calibration.n_items} pairs of {args.judge_calibration[0]}"
            if calibration is not None
            else "internal two-stage"
        )
        err.write(f"simulate: judge {args.judge} ({len(judge)} labels); calibration {how}\n")
    empty = [row for row in rows if row.n_without_estimate]
    for row in empty:
        err.write(
            f"simulate: {row.strategy} at budget {row.budget:g}: {row.n_without_estimate} of "
            f"{row.n_repetitions} campaigns could not afford their first draw (no estimate)\n"
        )
    return 0


def _arrival_command(
    args: argparse.Namespace,
    qrels: dict,
    runs: list,
    metric: Metric,
    labels: dict | None,
    judge: dict | None,
    calibration: object,
    out: TextIO,
    err: TextIO,
) -> int:
    """The arrival replay: rows of `ARRIVAL_COLUMNS`."""
    if not metric.is_linear_in_labels:
        raise ValueError(f"--arrival is replayed at item level, which needs DCG@K, not {metric}")
    if args.costs:
        raise ValueError("--arrival charges one label per document: --costs is not replayed for it")
    default = [name for name, replayed in ARRIVAL_STRATEGIES.items() if judge or not replayed.needs_judge]
    strategies = tuple(dict.fromkeys(args.strategies or default))
    for strategy in strategies:
        if strategy not in ARRIVAL_STRATEGIES:
            raise ValueError(
                f"--arrival replays the strategies {', '.join(ARRIVAL_STRATEGIES)}, not {strategy}"
            )
        if ARRIVAL_STRATEGIES[strategy].needs_judge and judge is None:
            raise ValueError(f"strategy {strategy} needs --judge (the judge's labels of the grown pool)")
    topups = args.topups or [10, 25, 50]
    budgets = args.budgets or [100.0]
    for value in [*topups, *budgets]:
        if value < 2 or int(value) != value:
            raise ValueError(f"--budget and --topup count human labels: whole numbers >= 2, got {value:g}")
    arrival = read_run(args.arrival)
    reference = _reference_index(args, runs)
    replay = prepare_arrival_replay(
        qrels,
        runs,
        arrival,
        reference,
        metric,
        args.goal,
        labels=labels,
        judge=None if judge is None else {pair: (line.grade, line.probs) for pair, line in judge.items()},
        judge_calibration=calibration,  # type: ignore[arg-type]
    )
    out.write("\t".join(ARRIVAL_COLUMNS) + "\n")
    for strategy in strategies:
        for budget in budgets:
            for row in replay_arrival(replay, strategy, int(budget), topups, args.repetitions, args.seed):
                numbers = (row.truth, row.mean, row.bias_se, row.rmse, row.coverage, row.mean_width)
                fields = [
                    row.strategy,
                    f"{row.budget:g}",
                    str(row.topup),
                    row.arrival,
                    *(f"{v:.8g}" for v in numbers),
                ]
                out.write("\t".join(fields) + "\n")
    err.write(
        f"simulate: {metric} (y_max {metric.y_max}, gain {metric.gain}); {len(runs)} run(s) pooled, goal "
        f"{args.goal}; {arrival.tag} arrives with {int(replay.new.sum())} new (topic, document) pairs of "
        f"{int((replay.weights[0] > 0).sum())} in its top {metric.cutoff}; reference {runs[reference].tag}; "
        f"{replay.replay.pool.n_queries} of {len(qrels)} qrels topics ranked; "
        f"{args.repetitions} repetitions, seed {args.seed}; answers {', '.join(ARRIVAL_KINDS)}\n"
    )
    return 0


def _reference_index(args: argparse.Namespace, runs: list) -> int:
    """The pooled run --reference names (by path, else tag); the first run by default."""
    if args.reference is None:
        return 0
    if args.reference in args.runs:
        return list(args.runs).index(args.reference)
    tags = [run.tag for run in runs]
    if args.reference in tags:
        return tags.index(args.reference)
    raise ValueError(f"--reference {args.reference} is not one of the pooled runs (give its path or tag)")


def _top_grade(args: argparse.Namespace, labels: dict | None, largest_grade: int) -> int:
    width = len(next(iter(labels.values()))) if labels else None
    if args.ymax is not None:
        y_max = args.ymax
    elif width is not None:
        y_max = width - 1
    else:
        y_max = max(largest_grade, 1)
    if y_max < largest_grade:
        raise ValueError(f"{args.qrels}: the qrels hold grade {largest_grade}, above the top grade {y_max}")
    if width is not None and width != y_max + 1:
        raise ValueError(
            f"{args.labels}: rows hold {width} probabilities (grades 0..{width - 1}), "
            f"but the top grade is {y_max}"
        )
    return y_max


def _check_costs_cover_runs(costs: dict[str, float], runs: list, qrels: dict, cutoff: int, path: str) -> None:
    for run in runs:
        for qid, docnos in run.rankings.items():
            if qid not in qrels:
                continue
            for docno in docnos[:cutoff]:
                if docno not in costs:
                    raise ValueError(
                        f"{path}: no cost for document {docno!r} (run {run.tag!r}, query {qid!r})"
                    )
