"""What every upload shares, whichever app reads the file: `ImportFailed` (every file's error,
nothing stored), the `ImportReport` an import returns, the upload as (name, stream) pairs, the
whole-file check that runs before anything is stored, and the registry of the upload boxes the
campaign page offers (`register_upload`). The readers and imports of topics, documents, runs and
qrels live in `uploads/`, which registers them; a mode's own uploads (judge labels, LETOR pools)
raise the same error, which the core's upload API turns into a 400 with every line."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from typing import BinaryIO

from estimation.formats.trec import InputFileError

BATCH_SIZE = 2000
"""Rows read or written per statement where no upload's write lock is at stake."""
UploadedFile = tuple[str, BinaryIO]


class ImportFailed(ValueError):
    """One or more files were malformed; nothing was stored. `errors` lists them all."""

    def __init__(self, errors: Sequence[InputFileError]) -> None:
        self.errors = list(errors)
        super().__init__("; ".join(str(error) for error in self.errors))


@dataclass
class ImportReport:
    """What an import did: rows `created`, `updated` (changed, or a stub filled in) and left
    `unchanged` (the same values were stored already, or an earlier qrels grade was kept),
    with `notes` saying why anything was left as it was."""

    files: int = 0
    created: int = 0
    updated: int = 0
    unchanged: int = 0
    lines: int = 0
    systems: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)


def batches(records: Iterable, size: int = BATCH_SIZE) -> Iterable[list]:
    """Records in lists of `size` (the last shorter): uploads insert a batch at a time."""
    batch: list = []
    for record in records:
        batch.append(record)
        if len(batch) >= size:
            yield batch
            batch = []
    if batch:
        yield batch


def uploads_check(
    files: Sequence[UploadedFile], records: Callable[[str, BinaryIO], Iterable[object]]
) -> None:
    """Read every file to its end with no transaction open, keeping nothing (bounded memory:
    the readers stream under the upload limits); ImportFailed naming each bad file's error."""
    if not files:
        raise ImportFailed([InputFileError("(no file)", None, "no file was uploaded")])
    errors: list[InputFileError] = []
    for name, stream in files:
        try:
            for _ in records(name, stream):
                pass
        except InputFileError as error:
            errors.append(error)
    if errors:
        raise ImportFailed(errors)


@dataclass(frozen=True)
class UploadKind:
    """An upload box of the campaign page: the kind the modes name (`JudgingMode.uploads`), what it
    is called, the help under it, the import it calls (campaign=, files=, and file_format= when it
    offers `formats`), whether it takes several files, and the formats offered as (value, label)."""

    kind: str
    label: str
    help: str
    service: Callable[..., ImportReport]
    multiple: bool = False
    formats: tuple[tuple[str, str], ...] = ()


_UPLOAD_KINDS: dict[str, UploadKind] = {}


def register_upload(upload: UploadKind) -> None:
    """Offer an upload box on the campaign page of every mode whose `uploads` name its kind (the
    uploads app's ready() registers topics, documents, runs and qrels)."""
    _UPLOAD_KINDS[upload.kind] = upload


def upload_kind(kind: str) -> UploadKind | None:
    return _UPLOAD_KINDS.get(kind)


__all__ = [
    "BATCH_SIZE",
    "ImportFailed",
    "ImportReport",
    "UploadKind",
    "UploadedFile",
    "batches",
    "register_upload",
    "upload_kind",
    "uploads_check",
]
