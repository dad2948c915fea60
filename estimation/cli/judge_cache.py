"""The answer cache of ``python -m estimation judge --cache FILE``: run the command twice on the
same inputs and the second run asks nothing it was already answered.

One JSON line per answer (a label or a refusal; errors are asked again), appended and flushed as
each answer arrives, so a run killed half-way resumes where it stopped. A line is keyed by the
pair and by a fingerprint of everything that changes the answer (endpoint, model, template,
grade scale, log-probabilities, max tokens), as the app's cache is keyed by the judge's version:
another prompt or model asks again, and several fingerprints can share one file. A last line cut
short by a kill is ignored.
"""

from __future__ import annotations

import hashlib
import json
import math
import os
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any, TextIO

from estimation.judges.answers import JudgeAnswer


def answer_fingerprint(
    *, endpoint: str, model: str, template: str, n_grades: int, with_probabilities: bool, max_tokens: int
) -> str:
    """What the answers depend on, hashed: equal fingerprints may reuse each other's answers."""
    asked = json.dumps(
        [endpoint.rstrip("/"), model, template, n_grades, with_probabilities, max_tokens], ensure_ascii=True
    )
    return hashlib.sha256(asked.encode()).hexdigest()[:16]


@dataclass(frozen=True)
class CachedAnswer:
    """A stored answer and its price when it was asked."""

    answer: JudgeAnswer
    cost: float


class AnswerCache:
    """The cache file of one fingerprint: its answers by (qid, docno), and an append handle."""

    def __init__(self, path: str, fingerprint: str) -> None:
        self.path = path
        self.fingerprint = fingerprint
        self.answers: dict[tuple[str, str], CachedAnswer] = {}
        if os.path.exists(path):
            with open(path, encoding="utf-8") as handle:
                for line in handle:
                    self._read(line)
        self._handle: TextIO | None = None

    def _read(self, line: str) -> None:
        try:
            record = json.loads(line)
        except ValueError:
            return  # the last line of a killed run, cut short
        if not isinstance(record, dict) or record.get("fingerprint") != self.fingerprint:
            return
        grade = record.get("grade")
        answer = JudgeAnswer(
            (str(record["qid"]), str(record["docid"])),
            grade=grade if isinstance(grade, int) else None,
            probabilities=record.get("probs"),
            refusal=str(record.get("refusal") or ""),
            text=str(record.get("text") or ""),
            tokens_in=_count(record.get("tokens_in")),
            tokens_out=_count(record.get("tokens_out")),
            seconds=_number(record.get("seconds")),
            attempts=0,
        )
        if answer.outcome != "error":
            self.answers[answer.key] = CachedAnswer(answer, _number(record.get("cost")))

    def missing(self, pairs: Iterable[tuple[str, str]]) -> list[tuple[str, str]]:
        """The pairs without a cached answer, in the given order."""
        return [pair for pair in pairs if pair not in self.answers]

    def store(self, answer: JudgeAnswer, cost: float) -> None:
        """Append a label or a refusal at once (an error is not cached: it is asked again)."""
        if answer.outcome == "error":
            return
        if self._handle is None:
            self._handle = open(self.path, "a", encoding="utf-8")  # noqa: SIM115 (closed in close())
        qid, docno = answer.key
        record: dict[str, Any] = {
            "fingerprint": self.fingerprint,
            "qid": qid,
            "docid": docno,
            "grade": answer.grade,
            "probs": answer.probabilities,
            "refusal": answer.refusal,
            "text": answer.text,
            "tokens_in": answer.tokens_in,
            "tokens_out": answer.tokens_out,
            "seconds": round(answer.seconds, 3),
            "cost": cost,
        }
        self._handle.write(json.dumps(record) + "\n")
        self._handle.flush()
        self.answers[answer.key] = CachedAnswer(answer, cost)

    def close(self) -> None:
        if self._handle is not None:
            self._handle.close()
            self._handle = None


def _count(value: Any) -> int:
    return value if isinstance(value, int) and value >= 0 else 0


def _number(value: Any) -> float:
    return float(value) if isinstance(value, int | float) and math.isfinite(value) and value >= 0 else 0.0
