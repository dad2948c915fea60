"""Uploads: topics, documents, runs, qrels and prior label probabilities (multipart)."""

from __future__ import annotations

from typing import Any

from labeling.api.common import ImportApi
from labeling.models import Campaign
from uploads.imports import documents_import, labels_import, qrels_import, topics_import
from uploads.run_imports import runs_import


class TopicsImportApi(ImportApi):
    """Import topics: TREC topic files or JSONL ({id, title, description, narrative})."""

    kind = "topics"

    def run_import(self, campaign: Campaign, files: list[tuple[str, Any]], file_format: str | None) -> Any:
        return topics_import(campaign=campaign, files=files, file_format=file_format)


class DocumentsImportApi(ImportApi):
    """Import documents: JSONL ({docno, title, text, url, length})."""

    kind = "documents"

    def run_import(self, campaign: Campaign, files: list[tuple[str, Any]], file_format: str | None) -> Any:
        return documents_import(campaign=campaign, files=files, file_format=file_format)


class RunsImportApi(ImportApi):
    """Import TREC runs (several files at once, plain or gzip); one system per file."""

    kind = "runs"

    many_files = True

    def run_import(self, campaign: Campaign, files: list[tuple[str, Any]], file_format: str | None) -> Any:
        return runs_import(campaign=campaign, files=files)


class QrelsImportApi(ImportApi):
    """Import TREC qrels (`qid 0 docno grade`), counted as already judged."""

    kind = "qrels"

    many_files = True

    def run_import(self, campaign: Campaign, files: list[tuple[str, Any]], file_format: str | None) -> Any:
        return qrels_import(campaign=campaign, files=files)


class LabelsImportApi(ImportApi):
    """Import prior grade probabilities (`qid docno p_0 .. p_ymax`) for the label model."""

    kind = "labels"

    many_files = True

    def run_import(self, campaign: Campaign, files: list[tuple[str, Any]], file_format: str | None) -> Any:
        return labels_import(campaign=campaign, files=files)
