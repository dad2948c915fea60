"""One undo log for every upload stored a batch per short transaction: topics, documents, qrels,
runs, a judge's labels and its calibration rows.

Why not one transaction per upload: on SQLite (IMMEDIATE transactions) it would hold the write
lock for the whole upload (an honest 1,000,000-line file: minutes), so every assessor's answer
would wait or fail with "database is locked". So each batch commits on its own and notes here
what it did: the rows it created (their ids), the rows it changed (their values before) and the
rows it deleted (their values). If the upload fails before its end (a lost connection, a full
disk: the checks before storing leave little else), the log takes everything back, latest step
first, each step its own short transaction. Row values wait in a temporary file, ids in arrays:
memory stays bounded however long the upload. Readers may see rows arrive during the upload.
"""

from __future__ import annotations

import json
import tempfile
from array import array
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from django.apps import apps
from django.db import transaction
from django.db.models import Model

UNDO_ROWS = 250
"""Rows per transaction while taking back."""

DeleteCreated = Callable[[type[Model], list[int]], None]


def delete_rows(model: type[Model], ids: list[int]) -> None:
    """The default way to take back created rows: delete them (and what cascades from them)."""
    model._base_manager.filter(pk__in=ids).delete()


@dataclass(frozen=True)
class _Step:
    """One logged step: `kind` "created" (ids), "changed" (fields and a file offset) or
    "deleted" (a file offset); or "call", a function that undoes what no row records."""

    kind: str
    label: str = ""
    ids: array | None = None
    fields: tuple[str, ...] = ()
    offset: int = -1
    call: Callable[[], None] | None = None


class UndoLog:
    """Use as a context manager around an upload's batches: leaving it with an exception takes
    back every step logged, then lets the exception go on. `delete_created` takes back created
    rows (default: `delete_rows`); an upload whose rows others may come to refer to meanwhile
    passes its own (the uploads keep such a topic or document as the stub a run would make)."""

    def __init__(self, delete_created: DeleteCreated = delete_rows) -> None:
        self.delete_created = delete_created
        self.steps: list[_Step] = []
        self.values = tempfile.TemporaryFile()

    def __enter__(self) -> UndoLog:
        return self

    def __exit__(self, kind: type[BaseException] | None, error: BaseException | None, trace: Any) -> None:
        try:
            if kind is not None:
                self.take_back()
        finally:
            self.values.close()

    def created(self, model: type[Model], ids: list[int]) -> None:
        """Rows created: deleted (with `delete_created`) on the way back."""
        if ids:
            self.steps.append(_Step("created", model._meta.label, ids=array("q", ids)))

    def changed(self, model: type[Model], fields: list[str], values: list[list[Any]]) -> None:
        """Rows about to change: `values` are (pk, *fields) as stored before; written back."""
        if values:
            offset = self._note(values)
            self.steps.append(_Step("changed", model._meta.label, fields=tuple(fields), offset=offset))

    def deleted(self, model: type[Model], rows: list[dict[str, Any]]) -> None:
        """Rows about to be deleted, each as {column attribute: value} with its id: put back."""
        if rows:
            self.steps.append(_Step("deleted", model._meta.label, offset=self._note(rows)))

    def call(self, undo: Callable[[], None]) -> None:
        """A step no row records (a clean-up that looks at the database as it is by then)."""
        self.steps.append(_Step("call", call=undo))

    def _note(self, values: object) -> int:
        offset = self.values.tell()
        self.values.write(json.dumps(values).encode() + b"\n")
        return offset

    def _read(self, offset: int) -> Any:
        self.values.seek(offset)
        return json.loads(self.values.readline())

    def take_back(self) -> None:
        """Undo every logged step, latest first, UNDO_ROWS rows per transaction."""
        self.values.flush()
        for step in reversed(self.steps):
            if step.call is not None:
                step.call()
                continue
            model = apps.get_model(step.label)
            if step.ids is not None:
                ids = step.ids.tolist()
                for start in range(0, len(ids), UNDO_ROWS):
                    with transaction.atomic():
                        self.delete_created(model, ids[start : start + UNDO_ROWS])
            elif step.kind == "changed":
                values = self._read(step.offset)
                for start in range(0, len(values), UNDO_ROWS):
                    rows = [
                        model(pk=pk, **dict(zip(step.fields, row, strict=True)))
                        for pk, *row in values[start : start + UNDO_ROWS]
                    ]
                    with transaction.atomic():
                        model._base_manager.bulk_update(rows, list(step.fields))
            else:
                rows = self._read(step.offset)
                for start in range(0, len(rows), UNDO_ROWS):
                    with transaction.atomic():
                        model._base_manager.bulk_create(
                            [model(**row) for row in rows[start : start + UNDO_ROWS]], ignore_conflicts=True
                        )
        self.steps.clear()
