"""``python -m estimation learn-dcg``: DCG gains and discounts learned from side-by-side answers.

Reads the answers (``qid system_a system_b preference``), rebuilds the two lists each assessor
saw from the runs' top K (trec_eval order) graded by the qrels, and runs
`estimation.learned_dcg.fit.learn_dcg` with every fitting choice as a flag. Output (stdout) is
a short report: the conventions, the gains and discounts with bootstrap intervals (rows
``g<grade>`` and ``c<position>``: value, ``[low, high]``), ``σ₂/σ₁``, the test of the DCG form
(a line with its p-value), C and C_t (a line containing "edge" when one sits at its grid's
edge), the cross-validated accuracies, and the gains written for trec_eval, ir_measures and
``python -m estimation evaluate``.
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
from estimation.learned_dcg.fit import (
    DEFAULT_BOOTSTRAP,
    DEFAULT_C_GRID,
    LIKELIHOOD,
    METHODS,
    QP,
    SAME,
    SEPARATE,
    LearnedDCG,
    PreferenceData,
    learn_dcg,
)
from estimation.learned_dcg.fitters import METHOD_NAMES
from estimation.metrics.tool_forms import CONVENTIONS, other_tools_text

CONVENTIONS_SKIPPED = CONVENTIONS.replace(
    "unjudged documents count grade 0", "answers whose lists hold an unjudged document are left out"
)

PREFS_FIELDS = ("qid", "system_a", "system_b", "preference")
ZERO, SKIP = "zero", "skip"
UNJUDGED = -2
"""The grade `top_k_grades` gives an unjudged document when asked to mark them."""


def _grid_values(text: str) -> tuple[float, ...]:
    try:
        values = tuple(float(part) for part in text.split(",") if part.strip())
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected numbers separated by commas, got {text!r}") from None
    if not values or any(not value > 0 or value == float("inf") for value in values):
        raise argparse.ArgumentTypeError(f"expected finite numbers > 0, got {text!r}")
    return values


def _tie_grid(text: str) -> tuple[float, ...] | str:
    return text if text in (SAME, SEPARATE) else _grid_values(text)


DESCRIPTION = """\
Learn DCG gains and discounts from side-by-side answers (DCGLearn, Zhou et al. 2014).

PREFS: one answer per line, `qid system_a system_b preference`, whitespace-separated,
`#` comments allowed. preference is an integer in -2..2: negative means system_a's list
was better (-2 much better), 0 about the same, positive system_b's. Systems are named by
their run tags.

Lists: each run's top K for the topic in trec_eval's order (score descending, then docno
descending); grades from the qrels; unjudged documents count grade 0 (as in trec_eval), or
with --unjudged skip the answers whose lists hold one are left out. Answers whose two lists
have the same grade at every position carry no information and are dropped.

Fit: --method likelihood (default) models the five answers by an ordered probit of the
utility difference; --method qp is the paper's QP (DCGLearn). C (and the QP's tie cost C_t)
are chosen by cross-validation over topics (--folds); a choice at its grid's edge extends the
grid once, then warns. Intervals: 95 % BCa bootstrap over topics, each replicate repeating
the whole fit. The DCG form (gain x discount) is tested by a likelihood ratio against a free
weight per grade and position. Accuracies are on held-out topics (answers with a direction).
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
        "--method",
        choices=METHODS,
        default=LIKELIHOOD,
        help="likelihood: ordered probit of the answers (default); qp: the paper's QP (DCGLearn)",
    )
    parser.add_argument(
        "--c-grid",
        type=_grid_values,
        default=DEFAULT_C_GRID,
        metavar="C,C,...",
        help="values of C tried by cross-validation (default 0.1,1,10,100); the likelihood's "
        "ridge, the QP's cost of a strict answer",
    )
    parser.add_argument(
        "--c-ties",
        type=_tie_grid,
        default=SEPARATE,
        metavar="separate|same|C,C,...",
        help="QP only: the cost C_t of an 'about the same' answer: chosen over the C grid's values "
        "independently of C (separate, default), equal to C (same, one C as before), or over these values",
    )
    parser.add_argument(
        "--folds", type=int, default=5, metavar="F", help="cross-validation folds over topics (default 5)"
    )
    parser.add_argument(
        "--monotone-discounts",
        action="store_true",
        help="also require discounts that never grow down the list",
    )
    parser.add_argument(
        "--margin",
        type=float,
        default=1.0,
        metavar="M",
        help="QP only: the margin asked of a 'much better' answer (default 1: the paper ignores the "
        "magnitude; 2 asks twice the utility difference)",
    )
    parser.add_argument(
        "--unjudged",
        choices=(ZERO, SKIP),
        default=ZERO,
        help="unjudged documents in a list: grade 0 as trec_eval (zero, default) or leave the "
        "answer out (skip)",
    )
    parser.add_argument(
        "--seed", type=int, default=0, metavar="S", help="seed of folds and bootstrap (default 0)"
    )
    parser.add_argument(
        "--bootstrap",
        type=int,
        default=DEFAULT_BOOTSTRAP,
        metavar="B",
        help=f"bootstrap replicates over topics, each repeating the whole fit (default {DEFAULT_BOOTSTRAP})",
    )
    parser.set_defaults(handler=learn_dcg_command)


def read_preferences(
    lines: Iterable[str | bytes],
    filename: str,
    lists: dict[tuple[str, str], np.ndarray],
    *,
    skipped: list[int] | None = None,
) -> PreferenceData:
    """Parse PREFS lines into answers over the lists ``(system, qid) -> grades`` (K,).

    Answers whose lists hold an `UNJUDGED` position are left out, their line numbers appended
    to ``skipped``."""
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
        if np.any(lists[system_a, qid] == UNJUDGED) or np.any(lists[system_b, qid] == UNJUDGED):
            if skipped is not None:
                skipped.append(number)
            continue
        left.append(lists[system_a, qid])
        right.append(lists[system_b, qid])
        preference.append(value)
        groups.append(qid)
    if not preference:
        reason = (
            "no answers" if not skipped else f"no answers left: all {len(skipped)} hold an unjudged document"
        )
        raise InputFileError(filename, None, reason)
    return PreferenceData(np.array(left), np.array(right), np.array(preference), np.array(groups))


def top_k_grades(
    runs: list[Run], qrels: dict[str, dict[str, int]], cutoff: int, *, unjudged: int = 0
) -> dict[tuple[str, str], np.ndarray]:
    """(run tag, qid) -> grades of the run's top K (unjudged ``unjudged``: 0 as trec_eval, or
    `UNJUDGED` to mark them; -1 past the run's end; negative qrels grades count 0)."""
    lists = {}
    for run in runs:
        for qid, ranking in run.rankings.items():
            judged = qrels.get(qid, {})
            grades = np.full(cutoff, -1, dtype=np.int64)
            top = ranking[:cutoff]
            grades[: len(top)] = [max(0, judged[doc]) if doc in judged else unjudged for doc in top]
            lists[run.tag, qid] = grades
    return lists


def learn_dcg_command(args: argparse.Namespace, out: TextIO | None = None) -> int:
    """Run the ``learn-dcg`` subcommand; file problems raise `InputFileError` (exit status 2)."""
    out = sys.stdout if out is None else out
    if args.cutoff < 1:
        raise ValueError(f"--cutoff must be >= 1, got {args.cutoff}")
    if args.bootstrap < 0:
        raise ValueError(f"--bootstrap must be >= 0, got {args.bootstrap}")
    if args.folds < 2:
        raise ValueError(f"--folds must be >= 2, got {args.folds}")
    if not args.margin >= 1.0 or args.margin == float("inf"):
        raise ValueError(f"--margin must be a finite number >= 1, got {args.margin}")
    qrels = read_qrels(args.qrels)
    runs = [read_run(path) for path in args.runs]
    tags = [run.tag for run in runs]
    for path, run in zip(args.runs, runs, strict=True):
        if tags.count(run.tag) > 1:
            raise InputFileError(path, None, f"run tag {run.tag!r} names more than one of the runs")
    n_grades = max([1, *(grade for grades in qrels.values() for grade in grades.values())]) + 1
    lists = top_k_grades(runs, qrels, args.cutoff, unjudged=UNJUDGED if args.unjudged == SKIP else 0)
    skipped: list[int] = []
    data = read_preferences(iter_lines(args.prefs), args.prefs, lists, skipped=skipped)
    for flag, value, default in (("--c-ties", args.c_ties, SEPARATE), ("--margin", args.margin, 1.0)):
        if args.method != QP and value != default:
            out.write(f"note: {flag} applies to --method qp only; the likelihood fit ignores it\n")
    result = learn_dcg(
        data,
        n_grades,
        method=args.method,
        c_grid=args.c_grid,
        c_tie_grid=args.c_ties,
        folds=args.folds,
        ties=args.ties,
        monotone_discounts=args.monotone_discounts,
        much_better_margin=args.margin,
        bootstrap=args.bootstrap,
        seed=args.seed,
    )
    write_report(result, len(data), out, skipped_unjudged=len(skipped))
    return 0


def _row(name: str, value: float, low: float, high: float, indent: str = "  ") -> str:
    return f"{indent}{name}\t{value:.4f}\t[{low:.4f}, {high:.4f}]\n"


def write_report(result: LearnedDCG, n_answers: int, out: TextIO, *, skipped_unjudged: int = 0) -> None:
    """The human-readable report of one `learn_dcg` result."""
    k, top = result.cutoff, result.n_grades - 1
    unjudged = (
        f"; {skipped_unjudged} left out (a list holds an unjudged document)" if skipped_unjudged else ""
    )
    out.write(
        f"learned DCG@{k}, grades 0..{top}: {n_answers} answers, {result.groups} topics with an "
        "informative answer; "
        f"{result.pairs} with a direction, {result.ties} about the same, "
        f"{result.dropped_identical} dropped (identical lists){unjudged}\n"
        f"fit: {METHOD_NAMES[result.method]}\n"
        f"{CONVENTIONS if not skipped_unjudged else CONVENTIONS_SKIPPED}\n\n"
    )
    out.write(f"gain per grade (95% {result.interval_method})\n")
    for grade in range(result.n_grades):
        out.write(_row(f"g{grade}", result.gains[grade], result.gains_low[grade], result.gains_high[grade]))
    out.write("discount per position\n")
    for i in range(k):
        out.write(_row(f"c{i + 1}", result.discounts[i], result.discounts_low[i], result.discounts_high[i]))
    out.write(
        _row("sigma2/sigma1", result.sigma_ratio, result.sigma_ratio_low, result.sigma_ratio_high, indent="")[
            :-1
        ]
        + "  (0 when W has the DCG form c x g; noise alone makes it positive: read the test below)\n"
    )
    if result.coverage.get("sentence"):
        out.write(f"  {result.coverage['sentence']}\n")
    if result.widened:
        out.write(
            f"  widened to contain the estimate: {', '.join(result.widened)} (the estimate lies outside "
            "its bootstrap distribution)\n"
        )
    test = result.form_test
    if test:
        p_value = test.get("p_value")
        shown = f"{p_value:.4g}" if p_value is not None and p_value == p_value else "n/a"
        out.write(f"DCG form test p-value\t{shown}\t{test.get('sentence', '')}\n")
    out.write(f"choices\t{_choices_text(result.options)}\n")
    out.write(f"C\t{result.c:g}  (chosen by cross-validation over topics from {_grid_text(result.c_grid)})\n")
    if result.c_tie is not None:
        out.write(f"C_t\t{result.c_tie:g}  (from {_grid_text(result.c_tie_grid)})\n")
    for warning in result.grid_warnings:
        out.write(f"warning: {warning}\n")
    for note in result.grid_notes:
        out.write(f"note: {note}\n")
    out.write("held-out accuracy (answers with a direction; cross-validated over topics)\n")
    for name, label in (
        ("learned", "learned"),
        ("learned_full_w", "learned W, not of DCG form"),
        ("learned_best_of_grid", "learned, best C of the grid (optimistic)"),
        ("exp", "DCG, gain 2^y-1"),
        ("linear", "DCG, gain y"),
    ):
        out.write(f"  {label}\t{result.accuracy[name]:.4f}\n")
    out.write("\n" + other_tools_text(result.gains, result.discounts, k))


def _choices_text(options: dict) -> str:
    qp = options.get("method") == QP
    tie_cost = {SAME: "C_t = C", SEPARATE: "C_t chosen apart from C"}.get(
        options.get("c_tie", ""), "C_t from its grid"
    )
    parts = [
        f"method {options.get('method')}",
        f"{options.get('folds')} folds",
        "'about the same' answers used" if options.get("ties") else "'about the same' answers left out",
        "discounts non-increasing" if options.get("monotone_discounts") else "discounts free",
    ]
    if qp:
        parts += [tie_cost, f"'much better' margin {options.get('much_better_margin'):g}"]
    return ", ".join(parts)


def _grid_text(grid: list[float]) -> str:
    return ", ".join(f"{value:g}" for value in grid)
