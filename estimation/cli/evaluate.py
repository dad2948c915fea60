"""``python -m estimation evaluate``: score TREC runs against qrels, trec_eval style.

Output (stdout, tab-separated, one block per run and metric)::

    run_tag  metric  qid  value     one line per qrels topic
    run_tag  metric  all  mean      mean over the qrels' topics

With ``--judge JUDGE_LABELS`` every line gains a fifth column, the same metric with the judge's
labels as the qrels (on the qrels' topics), and stderr gets the agreement of judge and qrels
on the pairs both label and, per metric, Kendall's tau between the two orders of the runs.

A summary of the averaging (topics without a relevant document, topics the run misses)
goes to stderr so that stdout stays machine-readable.
"""

from __future__ import annotations

import argparse
import math
import sys
from dataclasses import replace
from typing import TextIO

from estimation.formats.qrels_fast import read_qrels_fast
from estimation.formats.run_top import read_run_top
from estimation.metrics.spec import Metric
from estimation.metrics.values import QrelsIndex, summarize_run

DESCRIPTION = """\
Evaluate TREC runs against qrels with DCG@K, nDCG@K or ERR@K.

Rules: each query's documents are ordered as trec_eval orders them (score descending,
then docno descending; the rank column is ignored). Unjudged documents count grade 0;
negative qrels grades count 0. The mean is over every topic of the qrels: topics the run
misses count 0, and so do topics without a relevant document (their number is reported on
stderr). Run topics absent from the qrels are ignored.

Gains: --gain exp uses 2^y - 1 (ir_measures nDCG(dcg='exp-log2'), gdeval); --gain linear
uses y (trec_eval / pytrec_eval ndcg_cut). ERR uses l(y) = (2^y - 1) / 2^ymax whatever
--gain says; gdeval's ERR assumes --ymax 4. --gains and --discounts (DCG and nDCG only)
replace them with your own vectors, e.g. those `learn-dcg` prints; nDCG's ideal ranking then
sorts the judged documents by those gains.

--judge JUDGE_LABELS (TREC qrels, JSONL or BEIR qrels of a model judge) adds the judge-only
value of every line as a fifth column: what the metric would be if the judge were the
assessor. It is not an estimate of the qrels' value (judges grade on their own scale); use
`simulate --strategy judged` for a certified one.
"""

EPILOG = """\
example:
  python -m estimation evaluate qrels.txt run1.gz run2.gz --metric nDCG@10 --gain linear
"""


def add_qrels_and_runs(parser: argparse.ArgumentParser) -> None:
    """The QRELS and RUN ... positional arguments every command that scores runs takes."""
    parser.add_argument("qrels", metavar="QRELS", help="qrels file: qid iter docno grade (plain or .gz)")
    parser.add_argument(
        "runs", metavar="RUN", nargs="+", help="TREC run file(s): qid Q0 docno rank score tag (plain or .gz)"
    )


def register(subparsers: argparse._SubParsersAction) -> None:
    """Add the ``evaluate`` subcommand."""
    parser = subparsers.add_parser(
        "evaluate",
        help="score TREC runs against qrels (DCG@K, nDCG@K, ERR@K)",
        description=DESCRIPTION,
        epilog=EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    add_qrels_and_runs(parser)
    parser.add_argument(
        "--metric",
        "-m",
        dest="metrics",
        action="append",
        required=True,
        metavar="M",
        help="DCG@K, nDCG@K or ERR@K; repeat for several",
    )
    parser.add_argument(
        "--gain",
        choices=("exp", "linear"),
        default="exp",
        help="DCG/nDCG gain: exp = 2^y - 1 (default), linear = y (trec_eval's ndcg_cut)",
    )
    parser.add_argument(
        "--ymax",
        type=int,
        default=None,
        metavar="N",
        help="top grade of the scale (default: the largest grade in the qrels, at least 1); "
        "ERR depends on it, and gdeval's ERR uses 4",
    )
    parser.add_argument(
        "--gains",
        metavar="G0,G1,...",
        help="DCG/nDCG: a gain per grade 0..ymax instead of --gain (e.g. learned by learn-dcg)",
    )
    parser.add_argument(
        "--discounts",
        metavar="C1,C2,...",
        help="DCG/nDCG: a discount per position 1..K instead of 1/log2(i+1) (at least K values)",
    )
    parser.add_argument(
        "--judge",
        metavar="JUDGE_LABELS",
        help="a model judge's labels: print its judge-only value next to each value, and its agreement",
    )
    parser.set_defaults(handler=evaluate_command)


def _vector(text: str | None, option: str) -> tuple[float, ...] | None:
    """Comma-separated finite numbers, or None when the option is absent."""
    if text is None:
        return None
    try:
        values = tuple(float(part) for part in text.split(","))
    except ValueError:
        raise ValueError(f"{option} {text!r}: expected comma-separated numbers, e.g. 0,0.4,1") from None
    if not all(math.isfinite(value) for value in values):
        raise ValueError(f"{option} {text!r}: values must be finite")
    return values


def evaluate_command(args: argparse.Namespace, out: TextIO | None = None, err: TextIO | None = None) -> int:
    """Run the ``evaluate`` subcommand; file problems raise `InputFileError` (exit status 2)."""
    out = sys.stdout if out is None else out
    err = sys.stderr if err is None else err
    for text in args.metrics:
        Metric.parse(text)  # fail on a typo before reading any file
    qrels = read_qrels_fast(args.qrels)
    index = QrelsIndex(qrels)
    largest_grade = index.largest_grade
    y_max = max(largest_grade, 1) if args.ymax is None else args.ymax
    if y_max < largest_grade:
        raise ValueError(f"{args.qrels}: the qrels hold grade {largest_grade}, above --ymax {y_max}")
    metrics = [Metric.parse(text, gain=args.gain, y_max=y_max) for text in args.metrics]
    gains, discounts = _vector(args.gains, "--gains"), _vector(args.discounts, "--discounts")
    if gains is not None or discounts is not None:
        for metric in metrics:
            if metric.name == "ERR":
                raise ValueError(f"--gains and --discounts apply to DCG and nDCG only, not {metric}")
            if gains is not None and len(gains) != y_max + 1:
                raise ValueError(f"--gains needs {y_max + 1} values (grades 0..{y_max}), got {len(gains)}")
            if discounts is not None and len(discounts) < metric.cutoff:
                raise ValueError(
                    f"--discounts needs at least {metric.cutoff} values (positions 1..{metric.cutoff} "
                    f"of {metric}), got {len(discounts)}"
                )
        metrics = [replace(metric, gain_values=gains, discount_values=discounts) for metric in metrics]
    judged = None
    judged_index = None
    if args.judge:
        # Here, not at the top: the judges' modules load scipy, which plain evaluation never needs.
        from estimation.formats.judge_labels import read_judge_labels
        from estimation.judges.files import judge_qrels

        labels = read_judge_labels(args.judge, y_max=y_max)
        graded_by_judge = judge_qrels(labels, n_grades=y_max + 1)
        judged = {qid: graded_by_judge.get(qid, {}) for qid in qrels}
        judged_index = QrelsIndex(judged)
    means: dict[str, list[tuple[float, float]]] = {str(metric): [] for metric in metrics}
    # Only the documents the metrics see are kept of each run, one run at a time: memory is
    # bounded by one run's candidates, not by the collection (estimation.formats.run_top).
    depth = max(metric.cutoff for metric in metrics)
    for path in args.runs:
        run = read_run_top(path, depth)
        lines: list[str] = []
        for metric in metrics:
            evaluation = summarize_run(index, run, metric)
            judge_values = None if judged_index is None else summarize_run(judged_index, run, metric)
            for qid, value in evaluation.per_query.items():
                extra = "" if judge_values is None else f"\t{judge_values.per_query[qid]:.6f}"
                lines.append(f"{run.tag}\t{metric}\t{qid}\t{value:.6f}{extra}\n")
            extra = "" if judge_values is None else f"\t{judge_values.mean:.6f}"
            lines.append(f"{run.tag}\t{metric}\tall\t{evaluation.mean:.6f}{extra}\n")
            if judge_values is not None:
                means[str(metric)].append((evaluation.mean, judge_values.mean))
        out.write("".join(lines))  # one write per run
        err.write(
            f"{path}: run {run.tag}: mean over {evaluation.n_topics} qrels topics; "
            f"{evaluation.n_topics_without_relevant} have no relevant document and "
            f"{evaluation.n_topics_missing_from_run} are missing from the run (both count 0); "
            f"{evaluation.n_run_topics_without_qrels} run topics without qrels ignored\n"
        )
    if judged is not None:
        _report_judge(args.judge, qrels, judged, means, y_max, err)
    return 0


def _report_judge(
    path: str,
    qrels: dict[str, dict[str, int]],
    judged: dict[str, dict[str, int]],
    means: dict[str, list[tuple[float, float]]],
    y_max: int,
    err: TextIO,
) -> None:
    from estimation.judges.agreement import agreement, kendall_tau

    pairs = [(qid, docno) for qid, grades in qrels.items() for docno in grades if docno in judged[qid]]
    found = agreement(
        [qrels[qid][docno] for qid, docno in pairs],
        [judged[qid][docno] for qid, docno in pairs],
        n_grades=y_max + 1,
    )
    err.write(
        f"{path}: judge agrees with the qrels on {found.n_items} pairs both label: kappa {found.kappa:.3f}, "
        f"quadratic-weighted kappa {found.weighted_kappa:.3f}, binary kappa {found.binary_kappa:.3f}, "
        f"leniency {found.leniency:+.3f} grades (judge minus qrels), exact {found.exact:.3f}\n"
    )
    for name, pairs_of_means in means.items():
        if len(pairs_of_means) >= 2:
            tau = kendall_tau([human for human, _ in pairs_of_means], [model for _, model in pairs_of_means])
            err.write(
                f"{path}: {name}: Kendall's tau between the runs' order under the qrels and "
                f"under the judge: {tau:.3f}\n"
            )
