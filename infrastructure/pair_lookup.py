"""The stored rows of a batch of key pairs, one index probe per pair on both databases.

Batched uploads ask "which of these (topic, document) or (qid, docno) pairs are stored already?"
once per batch. Row values `(a, b) IN (VALUES ...)` looked like one index probe per pair, but
SQLite read every stored row of the campaign and looked each up in the list, and PostgreSQL,
planning from statistics that an upload in progress has outgrown (autovacuum has not analyzed
the rows it just wrote), estimated one stored row and chose a nested loop reading every stored
row of the campaign once per pair: a qrels batch took 0.5 s at 5,000 stored rows, growing with
every batch. Here the pairs are the outer side of the join, whatever the statistics say: a
LATERAL join on PostgreSQL (`OFFSET 0` keeps the planner from pulling the subquery up into a
plain join, which it then hashed, reading every stored row once per batch) and a CROSS JOIN on
SQLite, which takes its left side as the outer loop. Each pair probes the index once.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from django.db import connection

# What the keys and the condition's values are: ids and texts.
Key = int | str


@dataclass(frozen=True)
class PairLookup:
    """`SELECT columns FROM table WHERE condition AND (pair_columns) IN pairs`, as one statement.

    `condition` is SQL over the table's own columns with `%s` marks for `parameters`; it should
    pin the leading columns of a unique index whose last two columns are `pair_columns`."""

    table: str
    columns: Sequence[str]
    condition: str
    parameters: Sequence[Key]
    pair_columns: tuple[str, str]

    def rows(self, pairs: Sequence[tuple[Key, Key]]) -> list[tuple[Any, ...]]:
        """The stored rows of these pairs."""
        if not pairs:
            return []
        sql, arguments = self.statement(pairs)
        with connection.cursor() as cursor:
            cursor.execute(sql, arguments)
            return list(cursor.fetchall())

    def statement(self, pairs: Sequence[tuple[Key, Key]]) -> tuple[str, list[Key]]:
        """The statement `rows` runs on this connection's database, and its arguments."""
        quote = connection.ops.quote_name
        first, second = (quote(column) for column in self.pair_columns)
        selected = ", ".join(f"stored.{quote(column)}" for column in self.columns)
        wanted = f"WITH wanted (first_key, second_key) AS (VALUES {', '.join(['(%s, %s)'] * len(pairs))}) "
        if connection.vendor == "postgresql":
            joined = (
                f"CROSS JOIN LATERAL (SELECT * FROM {quote(self.table)} WHERE {self.condition} "
                f"AND {first} = wanted.first_key AND {second} = wanted.second_key OFFSET 0) AS stored"
            )
        else:
            joined = (
                f"CROSS JOIN {quote(self.table)} AS stored WHERE {self.condition} "
                f"AND stored.{first} = wanted.first_key AND stored.{second} = wanted.second_key"
            )
        arguments = [*(value for pair in pairs for value in pair), *self.parameters]
        return f"{wanted}SELECT {selected} FROM wanted {joined}", arguments
