"""The uploads' own table: run lines checked and waiting to be published."""

from __future__ import annotations

from django.db import models


class StagedRunLine(models.Model):
    """A checked run line waiting to be published (`uploads.run_imports.runs_import`).

    A run is parsed, checked and written here in short transactions, then published into
    `RankingEntry` in short steps, so a large import never holds the database's write lock
    long enough to stall judging in other campaigns. Rows live only while their import runs
    (`import_key`); the import deletes them after publishing or on failure.
    """

    import_key = models.CharField(max_length=32)
    file_index = models.PositiveIntegerField()
    qid = models.CharField(max_length=64)
    docno = models.CharField(max_length=200)
    rank = models.IntegerField()
    score = models.FloatField()
    line = models.PositiveIntegerField()

    class Meta:
        db_table = "labeling_stagedrunline"  # the core's table, taken over with its name

    # No index but the primary key: publishing and deleting walk id ranges, and an index on
    # import_key would lead SQLite's planner to scan a file's every row for each range.

    def __str__(self) -> str:
        return f"{self.import_key}/{self.file_index}:{self.line}"
