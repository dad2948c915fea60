"""Downloads of a training-data campaign: the judged training set in LETOR format, its qrels,
and the selection log."""

from __future__ import annotations

import io
from collections.abc import Iterator

from labeling.csv_cells import CsvWriter
from labeling.models import Campaign
from training.models import TrainingSelection
from training.selectors import labeled_pool_rows


def letor_training_set(campaign: Campaign) -> Iterator[str]:
    """Every labeled pool row (uploaded labels and judgments) as `grade qid:Q 1:v ... # docid = D`."""
    pool, rows = labeled_pool_rows(campaign)
    queries = pool.query_of_row()
    for row in rows:
        values = " ".join(f"{index + 1}:{value:.6g}" for index, value in enumerate(pool.features[row]))
        qid, docid = pool.query_ids[queries[row]], pool.doc_ids[row]
        yield f"{pool.grades[row]} qid:{qid} {values} # docid = {docid}\n"


def training_qrels(campaign: Campaign) -> Iterator[str]:
    """The same labels as TREC qrels `qid 0 docid grade`."""
    pool, rows = labeled_pool_rows(campaign)
    queries = pool.query_of_row()
    for row in rows:
        yield f"{pool.query_ids[queries[row]]} 0 {pool.doc_ids[row]} {pool.grades[row]}\n"


SELECTION_FIELDS = (
    "round",
    "order",
    "qid",
    "docid",
    "strategy",
    "el_query",
    "el_doc",
    "inclusion_probability",
    "query_inclusion_probability",
    "document_inclusion_probability_given_query",
    "seed",
    "versions",
)


def selection_log(campaign: Campaign) -> Iterator[str]:
    """One line per selected item, in rounds and selection order."""
    buffer = io.StringIO()
    writer = CsvWriter(buffer, lineterminator="\n")
    writer.writerow(SELECTION_FIELDS)
    selections = TrainingSelection.objects.filter(round__campaign=campaign).select_related("round")
    for item in selections.order_by("round__number", "order").iterator(chunk_size=2000):
        versions = " ".join(f"{name}={version}" for name, version in sorted(item.round.versions.items()))
        writer.writerow(
            [
                item.round.number,
                item.order,
                item.qid,
                item.docid,
                item.round.strategy,
                "" if item.el_query is None else f"{item.el_query:.6g}",
                "" if item.el_doc is None else f"{item.el_doc:.6g}",
                *(
                    "" if value is None else f"{value:.6g}"
                    for value in (
                        item.inclusion_probability,
                        item.query_inclusion_probability,
                        item.document_inclusion_probability_given_query,
                    )
                ),
                item.round.seed,
                versions,
            ]
        )
    yield buffer.getvalue()
