"""``python -m estimation learn-dcg``: DCG gains and discounts learned from side-by-side answers.

Reads the answers (``qid system_a system_b preference``), rebuilds the two lists each assessor
saw from the runs' top K (trec_eval order) graded by the qrels, and runs
`estimation.learned_dcg.fit.learn_dcg`. Output (stdout) is a short report: the conventions, the
gains and discounts with bootstrap intervals, ``σ₂/σ₁``, C, the cross-validated accuracies,
and the gains written for trec_eval, ir_measures and ``python -m estimation evaluate``.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Iterable
from typing import TextIO

import numpy as np

from estimation.formats.trec import (
    InputFileError,
    Run,
    _content_lines,
    _integer,
    iter_lines,
    read_qrels,
    read_run,
)
from estimation.learned_dcg.fit import LearnedDCG, PreferenceData, learn_dcg
from estimation.metrics.tool_forms import CONVENTIONS, other_tools_text

PREFS_FIELDS = ("qid", "system_a", "system_b", "preference")

DESCRIPTION = """\
Learn DCG gains and discounts from side-by-side answers (DCGLearn, Zhou et al. 2014).

PREFS: one answer per line, `qid system_a system_b preference`, whitespace-separated,
`#` comments allowed. preference is an integer in -2..2: negative means system_a's list
was better (-2 much better), 0 about the same, positive system_b's. Systems are named by
their run tags.

Lists: each run's top K for the topic in trec_eval's order (score descending, then docno
descending); grades from the qrels, and unjudged documents count grade 0 (as in trec_eval).
Answers whose two lists have the same grade at every position carry no information and are
dropped. C is chosen by 5-fold cross-validation over topics; accuracies are on held-out
topics (answers with a direction only); intervals are 95 % bootstrap percentiles over topics.
"""

EPILOG = """\
example:
  python -m estimation learn-dcg --prefs answers.tsv --qrels qrels.txt --runs a.run b.run --cutoff 5
"""


def register(subparsers: argparse._SubParsersAction) -> None:
    """Add the ``learn-dcg`` subcommand."""
    parser = subparsers.add_parser(
        "learn-dcg",
        help="learn DCG gains and discounts from side-by-side preferences",
        description=DESCRIPTION,
        epilog=EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("--prefs", required=True, metavar="PREFS", help="qid system_a system_b preference")
    parser.add_argument("--qrels", required=True, metavar="QRELS", help="qrels: qid iter docno grade")
    parser.add_argument(
        "--runs", required=True, nargs="+", metavar="RUN", help="TREC runs (tags name systems)"
    )
    parser.add_argument("--cutoff", type=int, default=10, metavar="K", help="list length K (default 10)")
    parser.add_argument(
        "--ties",
        action=argparse.BooleanOptionalAction,
        default=True,
        help="use 'about the same' answers as two-sided constraints (default: yes)",
    )
    parser.add_argument(
        "--seed", type=int, default=0, metavar="S", help="seed of folds and bootstrap (default 0)"
    )
    parser.add_argument(
        "--bootstrap",
        type=int,
        default=100,
        metavar="B",
        help="bootstrap replicates over topics (default 100)",
    )
    parser.set_defaults(handler=learn_dcg_command)


def read_preferences(
    lines: Iterable[str | bytes], filename: str, lists: dict[tuple[str, str], np.ndarray]
) -> PreferenceData:
    """Parse PREFS lines into answers over the lists ``(system, qid) -> grades`` (K,)."""
    systems = sorted({system for system, _ in lists})
    left, right, preference, groups = [], [], [], []
    for number, fields in _content_lines(lines, filename):
        if len(fields) != len(PREFS_FIELDS):
            raise InputFileError(
                filename, number, f"expected 4 fields ({' '.join(PREFS_FIELDS)}), found {len(fields)}"
            )
        qid, system_a, system_b, text = fields
        value = _integer(text, "preference", filename, number)
        if not -2 <= value <= 2:
            raise InputFileError(filename, number, f"preference {value} is outside -2..2")
        if system_a == system_b:
            raise InputFileError(filename, number, f"system {system_a!r} is compared with itself")
        for system in (system_a, system_b):
            if system not in systems:
                raise InputFileError(
                    filename, number, f"unknown system {system!r}; the runs' tags are {', '.join(systems)}"
                )
            if (system, qid) not in lists:
                raise InputFileError(filename, number, f"run {system!r} has no ranking for topic {qid!r}")
        left.append(lists[system_a, qid])
        right.append(lists[system_b, qid])
        preference.append(value)
        groups.append(qid)
    if not preference:
        raise InputFileError(filename, None, "no answers")
    return PreferenceData(np.array(left), np.array(right), np.array(preference), np.array(groups))


def top_k_grades(
    runs: list[Run], qrels: dict[str, dict[str, int]], cutoff: int
) -> dict[tuple[str, str], np.ndarray]:
    """(run tag, qid) -> grades of the run's top K (unjudged 0, -1 past the run's end)."""
    lists = {}
    for run in runs:
        for qid, ranking in run.rankings.items():
            judged = qrels.get(qid, {})
            grades = np.full(cutoff, -1, dtype=np.int64)
            top = ranking[:cutoff]
            grades[: len(top)] = [max(0, judged.get(doc, 0)) for doc in top]
            lists[run.tag, qid] = grades
    return lists


def learn_dcg_command(args: argparse.Namespace, out: TextIO | None = None) -> int:
    """Run the ``learn-dcg`` subcommand; file problems raise `InputFileError` (exit status 2)."""
    out = sys.stdout if out is None else out
    if args.cutoff < 1:
        raise ValueError(f"--cutoff must be >= 1, got {args.cutoff}")
    if args.bootstrap < 0:
        raise ValueError(f"--bootstrap must be >= 0, got {args.bootstrap}")
    qrels = read_qrels(args.qrels)
    runs = [read_run(path) for path in args.runs]
    tags = [run.tag for run in runs]
    for path, run in zip(args.runs, runs, strict=True):
        if tags.count(run.tag) > 1:
            raise InputFileError(path, None, f"run tag {run.tag!r} names more than one of the runs")
    n_grades = max([1, *(grade for grades in qrels.values() for grade in grades.values())]) + 1
    lists = top_k_grades(runs, qrels, args.cutoff)
    data = read_preferences(iter_lines(args.prefs), args.prefs, lists)
    result = learn_dcg(data, n_grades, ties=args.ties, bootstrap=args.bootstrap, seed=args.seed)
    write_report(result, len(data), out)
    return 0


def _row(name: str, value: float, low: float, high: float, indent: str = "  ") -> str:
    return f"{indent}{name}\t{value:.4f}\t[{low:.4f}, {high:.4f}]\n"


def write_report(result: LearnedDCG, n_answers: int, out: TextIO) -> None:
    """The human-readable report of one `learn_dcg` result."""
    k, top = result.cutoff, result.n_grades - 1
    out.write(
        f"learned DCG@{k}, grades 0..{top}: {n_answers} answers, {result.groups} topics with an "
        "informative answer; "
        f"{result.pairs} with a direction, {result.ties} about the same, "
        f"{result.dropped_identical} dropped (identical lists)\n"
        f"{CONVENTIONS}\n\n"
    )
    out.write("gain per grade (95% bootstrap interval over topics)\n")
    for grade in range(result.n_grades):
        out.write(_row(f"g{grade}", result.gains[grade], result.gains_low[grade], result.gains_high[grade]))
    out.write("discount per position\n")
    for i in range(k):
        out.write(_row(f"c{i + 1}", result.discounts[i], result.discounts_low[i], result.discounts_high[i]))
    out.write(
        _row("sigma2/sigma1", result.sigma_ratio, result.sigma_ratio_low, result.sigma_ratio_high, indent="")[
            :-1
        ]
        + "  (near 0: a DCG form c x g fits W; large: the gains depend on the position)\n"
        f"C\t{result.c:g}  (chosen by cross-validation over topics)\n"
        "held-out accuracy (answers with a direction; cross-validated over topics)\n"
    )
    for name, label in (("learned", "learned"), ("exp", "DCG, gain 2^y-1"), ("linear", "DCG, gain y")):
        out.write(f"  {label}\t{result.accuracy[name]:.4f}\n")
    out.write("\n" + other_tools_text(result.gains, result.discounts, k))
