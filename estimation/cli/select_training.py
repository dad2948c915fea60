"""``python -m estimation select-training``: which queries and documents to label for training.

Reads a LETOR / SVMlight pool (`estimation.formats.letor`), optional existing labels, and either fits
the bootstrap LightGBM ensemble or takes a team's scores; runs `select_training` and prints one
tab-separated line per selected item in selection order, after ``#`` header lines.
"""

from __future__ import annotations

import argparse
import math
import sys
from typing import TextIO

from estimation.formats.letor import apply_labels, read_letor
from estimation.formats.trec import iter_lines
from estimation.training.ensembles import BootstrapLightGBM, read_scores
from estimation.training.selection import (
    DEFAULT_DOCS_PER_QUERY,
    DEFAULT_EPSILON,
    NEEDS_SCORES,
    SELECTION_RULES,
    Selection,
    select_training,
)

DESCRIPTION = """\
Choose which (query, document) pairs to label next to train a ranker (ELO-DCG, Long et al. 2010).

POOL: LETOR / SVMlight lines `grade qid:Q 1:v 2:v ... # docid = D` (plain or .gz); grade -1 or
no grade = unlabeled. Without docids (MSLR-WEB) a document's id is its 1-based position within
its query. --labels adds existing labels: a qrels file (qid iter docid grade) or labeled LETOR
rows. Only unlabeled rows are selected; the budget counts labels.

Scores: by default an ensemble of N LightGBM regressions on bootstrap resamples of the labeled
queries (seeded, single-threaded, deterministic) predicts every row's grade. --scores takes a
team's own N models' scores instead, lines `qid docid s_1 ... s_N` covering every pool row; no
model is trained. The random strategies need neither.

Output: `qid docid el_query el_doc` per selected item, tab-separated, in selection order
(query strategies group a query's documents); with --draw a fifth column, the item's
inclusion probability, and for the two-stage rules (elo_qd, elo_q) two more: its query's
inclusion probability and its own given the query (the fifth is their product). EL is the
expected DCG@K loss of the ensemble (query: A1, document: A2); NaN when no scores were used.
"""

EPILOG = """\
example:
  python -m estimation select-training pool.svmlight --labels qrels.txt --strategy elo_qd --budget 300
"""


def register(subparsers: argparse._SubParsersAction) -> None:
    """Add the ``select-training`` subcommand."""
    parser = subparsers.add_parser(
        "select-training",
        help="choose training labels by expected DCG loss (ELO-DCG)",
        description=DESCRIPTION,
        epilog=EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("pool", metavar="POOL", help="LETOR / SVMlight feature pool (plain or .gz)")
    parser.add_argument("--labels", metavar="LABELS", help="existing labels: qrels or labeled LETOR rows")
    parser.add_argument(
        "--scores", metavar="SCORES", help="qid docid s_1 ... s_N: your own ensemble's scores"
    )
    parser.add_argument(
        "--strategy", choices=SELECTION_RULES, default="elo_qd", help="selection rule (default elo_qd)"
    )
    parser.add_argument("--budget", type=int, required=True, metavar="M", help="number of labels to select")
    parser.add_argument(
        "--docs-per-query",
        type=int,
        default=DEFAULT_DOCS_PER_QUERY,
        metavar="D",
        help=f"per-query cap of elo_qd, random_qd, top_k (default {DEFAULT_DOCS_PER_QUERY})",
    )
    parser.add_argument(
        "--cutoff", type=int, default=10, metavar="K", help="K of DCG@K in EL; 0 = none (default 10)"
    )
    parser.add_argument("--ensemble", type=int, default=8, metavar="N", help="bootstrap members (default 8)")
    parser.add_argument("--max-grade", type=float, metavar="Y", help="top grade (default: the largest label)")
    parser.add_argument(
        "--seed", type=int, default=0, metavar="S", help="seed of ensemble and draws (default 0)"
    )
    parser.add_argument(
        "--draw",
        action="store_true",
        help="draw by EL with recorded inclusion probabilities (elo_qd, elo_q, elo_d) instead of the top",
    )
    parser.add_argument(
        "--epsilon",
        type=float,
        default=DEFAULT_EPSILON,
        metavar="E",
        help=f"uniform share mixed into drawn probabilities (default {DEFAULT_EPSILON})",
    )
    parser.set_defaults(handler=select_training_command)


def select_training_command(args: argparse.Namespace, out: TextIO | None = None) -> int:
    """Run the ``select-training`` subcommand; file problems raise `InputFileError` (status 2)."""
    out = sys.stdout if out is None else out
    if args.budget < 0:
        raise ValueError(f"--budget must be >= 0, got {args.budget}")
    if args.cutoff < 0:
        raise ValueError(f"--cutoff must be >= 0, got {args.cutoff}")
    if args.ensemble < 1:
        raise ValueError(f"--ensemble must be >= 1, got {args.ensemble}")
    pool = read_letor(args.pool)
    notes = []
    if args.labels:
        merged = apply_labels(iter_lines(args.labels), args.labels, pool)
        pool = merged.pool
        notes.append(f"labels: {merged.applied} applied, {merged.unknown} for pairs not in the pool")
    if args.max_grade is None and not pool.labeled.any():
        raise ValueError(
            "the pool holds no labeled row to infer the top grade from: give --max-grade "
            "(the scale's top grade, e.g. --max-grade 4 for grades 0-4)"
        )
    scores = None
    if args.scores:
        uploaded = read_scores(iter_lines(args.scores), args.scores, pool)
        scores = uploaded.scores
        notes.append(f"scores: {args.scores} ({uploaded.n_members} members; no model trained)")
    elif args.strategy in NEEDS_SCORES:
        scores = BootstrapLightGBM(n_members=args.ensemble).fit(
            pool.features, pool.grades, pool.query_offsets, args.seed
        )
        notes.append(f"scores: bootstrap LightGBM ensemble, {args.ensemble} members, seed {args.seed}")
    selection = select_training(
        pool,
        scores,
        strategy=args.strategy,
        budget=args.budget,
        max_grade=args.max_grade,
        docs_per_query=args.docs_per_query,
        cutoff=args.cutoff or None,
        seed=args.seed,
        draw=args.draw,
        epsilon=args.epsilon,
    )
    labeled = int(pool.labeled.sum())
    ids = "1-based positions within queries" if pool.doc_ids_from_position else "the files' docids"
    out.write(
        f"# select-training: strategy {selection.strategy}{' (drawn)' if selection.draw else ''}, "
        f"budget {selection.budget}, cutoff {args.cutoff or 'none'}, "
        f"docs per query {selection.docs_per_query}, seed {selection.seed}\n"
        f"# pool: {pool.n_queries} queries, {pool.n_docs} documents ({labeled} labeled); doc ids: {ids}\n"
    )
    for note in notes:
        out.write(f"# {note}\n")
    write_selection(selection, out)
    return 0


def _number(value: float) -> str:
    return "nan" if math.isnan(value) else f"{value:.6g}"


def write_selection(selection: Selection, out: TextIO) -> None:
    """``qid docid el_query el_doc`` per item, and with --draw the item's inclusion probability
    (two-stage: then also its query's and its own given the query), after a count and a column
    line."""
    probabilities = {
        "inclusion_probability": selection.inclusion_probability,
        "query_inclusion_probability": selection.query_inclusion_probability,
        "document_inclusion_probability_given_query": selection.document_inclusion_probability_given_query,
    }
    shown = {name: values for name, values in probabilities.items() if values is not None}
    columns = ["qid", "docid", "el_query", "el_doc", *shown]
    out.write(f"# {len(selection)} items selected\n# " + "\t".join(columns) + "\n")
    for index, ((qid, docid), el_query, el_doc) in enumerate(
        zip(selection.items, selection.el_query.tolist(), selection.el_doc.tolist(), strict=True)
    ):
        fields = [qid, docid, _number(el_query), _number(el_doc)]
        fields += [f"{values[index]:.6g}" for values in shown.values()]
        out.write("\t".join(fields) + "\n")
