"""What asking a model judge about one (topic, document) pair gives, whatever the judge is: an
endpoint's LLM, the built-in lexical judge, a kind a team adds. The app stores it
(`sampling.judge_kinds.base.JudgeKind.store`) and ``python -m estimation judge`` caches it."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class JudgeAnswer:
    """One pair's outcome: a grade (with probabilities when asked and given), a refusal, or an
    error after the retries; tokens and seconds as reported and measured (0 for a judge that
    sends nothing)."""

    key: Any
    grade: int | None = None
    probabilities: list[float] | None = None
    refusal: str = ""
    error: str = ""
    text: str = ""
    tokens_in: int = 0
    tokens_out: int = 0
    seconds: float = 0.0
    attempts: int = 1
    finished: bool = True
    """False: cut by the caller's stop or deadline before an answer or a final error (ask again)."""

    @property
    def outcome(self) -> str:
        return "label" if self.grade is not None else "refusal" if self.refusal else "error"
