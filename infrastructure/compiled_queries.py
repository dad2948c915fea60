"""ORM reads compiled once per process, for the judging hot path.

Django compiles a queryset's SQL each time it is evaluated; for a `select_related` read with a
few annotations that compilation costs more CPU than SQLite takes to run the statement, on
every request. A `CompiledQuery` is built from a function that makes the queryset out of
stand-in values; it compiles that queryset once per database vendor, remembers where the stand-ins
sit among the statement's parameters and the compiler's column layout, and thereafter runs the
same statement with the real values, turning rows into model instances (objects of
`select_related` and annotations included) or tuples exactly as Django would.

Only for querysets whose shape does not depend on the values (no `if` on them in the builder,
no `__in` with a list of varying length), and whose varying values are whole numbers or
strings: a stand-in must reach the parameters unchanged.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any, Generic, TypeVar

from django.db import connection, models
from django.db.models.query import QuerySet, get_related_populators
from django.db.models.sql.compiler import SQLCompiler

Row = TypeVar("Row", bound=models.Model)

# Stand-ins no real id or key takes: negative numbers past any id, and strings no client sends.
_INT_STANDIN = -7_300_000_000_000
_STR_STANDIN = "\x01compiled-standin-{}\x01"


@dataclass(frozen=True)
class _Compiled:
    sql: str
    params: tuple[Any, ...]
    positions: tuple[tuple[int, ...], ...]  # per value: where its stand-in sits among the params
    compiler: SQLCompiler
    db: str
    model_layout: tuple[Any, ...] | None  # (model, init_list, start, end, populators, annotations)
    # The columns' converters (SQLite's datetimes, booleans, JSON), found once: Django's
    # results_iter looks them up again for every execution.
    converters: dict[int, tuple[list[Any], Any]]


class CompiledQuery(Generic[Row]):
    """`build(*standins)` -> the queryset; `kinds` says each value's type (int or str)."""

    def __init__(self, build: Callable[..., QuerySet[Any]], kinds: tuple[type, ...]) -> None:
        self._build = build
        self._kinds = kinds
        self._compiled: dict[str, _Compiled] = {}
        self._lock = threading.Lock()

    def _standins(self) -> list[Any]:
        return [
            _INT_STANDIN - index if kind is int else _STR_STANDIN.format(index)
            for index, kind in enumerate(self._kinds)
        ]

    def _compile(self) -> _Compiled:
        key = connection.vendor
        found = self._compiled.get(key)
        if found is not None:
            return found
        with self._lock:
            standins = self._standins()
            queryset = self._build(*standins)
            compiler = queryset.query.get_compiler(using=queryset.db)
            sql, params = compiler.as_sql()
            positions = tuple(
                tuple(index for index, param in enumerate(params) if param == standin) for standin in standins
            )
            if any(len(found_at) == 0 for found_at in positions):
                raise ValueError(f"a stand-in did not reach the parameters of {sql!r}")
            layout = None
            if compiler.klass_info is not None and queryset._iterable_class.__name__ == "ModelIterable":
                select, klass_info = compiler.select, compiler.klass_info
                fields = klass_info["select_fields"]
                start, end = fields[0], fields[-1] + 1
                init_list = [column[0].target.attname for column in select[start:end]]
                layout = (
                    klass_info["model"],
                    init_list,
                    start,
                    end,
                    # django-stubs describe a later Django, whose populators take a fetch mode.
                    get_related_populators(klass_info, select, queryset.db),  # type: ignore[call-arg]
                    dict(compiler.annotation_col_map or {}),
                )
            columns = [column[0] for column in compiler.select[0 : compiler.col_count]]
            if compiler.has_composite_fields(columns):
                raise ValueError(f"composite fields are not supported: {sql!r}")
            converters = compiler.get_converters(columns)
            compiled = _Compiled(sql, tuple(params), positions, compiler, queryset.db, layout, converters)
            self._compiled[key] = compiled
            return compiled

    def _rows(self, values: tuple[Any, ...]) -> tuple[_Compiled, Iterator[Any]]:
        if len(values) != len(self._kinds):
            raise TypeError(f"expected {len(self._kinds)} values, got {len(values)}")
        compiled = self._compile()
        params = list(compiled.params)
        for value, kind, positions in zip(values, self._kinds, compiled.positions, strict=True):
            if not isinstance(value, kind):
                raise TypeError(f"expected {kind.__name__}, got {value!r}")
            for position in positions:
                params[position] = value
        with connection.cursor() as cursor:
            cursor.execute(compiled.sql, params)
            fetched = cursor.fetchall()
        if not compiled.converters:
            return compiled, iter(fetched)
        return compiled, compiled.compiler.apply_converters(fetched, compiled.converters)

    def objects(self, *values: Any) -> list[Row]:
        """The queryset's model instances for these values."""
        compiled, rows = self._rows(values)
        assert compiled.model_layout is not None, "a values() queryset: use tuples()"
        model, init_list, start, end, populators, annotations = compiled.model_layout
        found = []
        for row in rows:
            instance = model.from_db(compiled.db, init_list, row[start:end])
            for populator in populators:
                populator.populate(row, instance)
            for name, position in annotations.items():
                setattr(instance, name, row[position])
            found.append(instance)
        return found

    def first(self, *values: Any) -> Row | None:
        found = self.objects(*values)
        return found[0] if found else None

    def tuples(self, *values: Any) -> list[tuple[Any, ...]]:
        """The rows of a `values_list()` queryset for these values."""
        return [tuple(row) for row in self._rows(values)[1]]
