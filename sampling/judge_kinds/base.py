"""The base of a model-judge kind (`sampling.judge_kinds`)."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from datetime import date
from typing import TYPE_CHECKING, Any, ClassVar, Literal

from estimation.judges.answers import JudgeAnswer
from sampling.judge_calls import judge_answer_store

if TYPE_CHECKING:
    from labeling.models import Campaign
    from sampling.models import Judge, JudgeRun

COMMON_VERSIONED = ("model", "prompt")
"""What every judge is asked, whatever its kind: editing one makes a new version."""
COMMON_UNVERSIONED = ("notes", "shares_model_with")
"""What every judge has and editing changes nothing it answers."""


@dataclass(frozen=True)
class JudgeSetting:
    """One setting a kind's judges take beyond those every judge has (`COMMON_VERSIONED`,
    `COMMON_UNVERSIONED`): how it is typed in (the API's and the add-judge form's field), where
    it is kept, and whether editing it changes what the judge answers (a new version, recorded in
    the version's `asked_with`). The generic modules read these declarations: a kind with a
    setting of its own changes nothing outside its package."""

    name: str
    type: Literal["text", "integer", "number", "boolean", "date"]
    default: Any = None
    label: str = ""
    help: str = ""
    versioned: bool = False
    minimum: float | None = None
    maximum: float | None = None
    max_length: int = 500
    # Blank means none (no cap, no date) rather than "keep the default".
    blank_is_none: bool = False
    # The add-judge form's choices (e.g. the key variables the operator configured), read at
    # each form; the API takes any text and the kind's `settings_problems` checks it.
    choices: Callable[[], list[tuple[str, str]]] | None = None
    # Kept in the judge's column of this name (the built-in kinds' settings, columns since
    # before kinds were a seam); otherwise in the judge's `kind_settings`.
    column: bool = False

    def value(self, judge: Judge) -> Any:
        """The judge's value of this setting (the default when it was never set)."""
        if self.column:
            return getattr(judge, self.name)
        return (judge.kind_settings or {}).get(self.name, self.default)

    def json_value(self, judge: Judge) -> Any:
        """The judge's value as JSON carries it (a date as YYYY-MM-DD)."""
        value = self.value(judge)
        return value.isoformat() if isinstance(value, date) else value

    def assign(self, judge: Judge, value: Any) -> None:
        """Set the judge's value (saved with the judge)."""
        if isinstance(value, str):
            value = value.strip()
        if self.column:
            setattr(judge, self.name, value)
        else:
            judge.kind_settings = {**(judge.kind_settings or {}), self.name: value}

    def is_set(self, value: Any) -> bool:
        """Whether a value given for this setting says something (not blank, not the default)."""
        if value is None or (isinstance(value, str) and not value.strip()):
            return False
        return bool(value != self.default)


class JudgeKind:
    """What a kind of model judge provides; subclasses override what they do differently."""

    name: ClassVar[str]
    # The add-judge form's choice, and the words after "name:" in the API's help.
    label: ClassVar[str]
    api_help: ClassVar[str]
    # Whether the worker runs it over the pool (else its labels come as files).
    runs: ClassVar[bool] = True
    # The settings that mean something only to this kind: the API and the add-judge form take
    # them, the form shows them when the kind is chosen and drops them for the other kinds,
    # creation and edit refuse them on the other kinds, the judge's summary reports them.
    settings: ClassVar[tuple[JudgeSetting, ...]] = ()
    # What its step stores for each pair (`store` refuses another type).
    answer_type: ClassVar[type[JudgeAnswer]] = JudgeAnswer
    # What to do after adding a judge, and after Edit made a new version (the panel's message).
    following: ClassVar[str] = "run it next"
    edited: ClassVar[str] = "run it to label the pool with this version"
    # Edit on the panel refits the judge (a new version, nothing typed) rather than taking a
    # new model and prompt.
    edit_refits: ClassVar[bool] = False
    # The judges panel's templates: what the judge is (under its figures) and its own controls
    # (under its run's progress); "" for none.
    about_template: ClassVar[str] = ""
    manage_template: ClassVar[str] = ""

    def creation_defaults(self, campaign: Campaign, *, model: str, prompt: str) -> tuple[str, str]:
        """The model and prompt a new judge gets when the coordinator left them blank."""
        return model, prompt

    def settings_problems(self, fields: Mapping[str, Any]) -> list[str]:
        """What is wrong with the kind's own settings, in words (checked at creation and edit)."""
        return []

    def limit_problems(self, fields: Mapping[str, Any]) -> list[str]:
        """The kind's own spending rules beyond the operator's ceilings every judge has (checked
        again when a run starts: a judge saved under looser rules runs only within them)."""
        return []

    def step(self, run: JudgeRun, pending: list[tuple[str, str]]) -> str:
        """One step of a run over the `pending` pairs: "more", "done", "cancelled", "failed" or
        "cost_cap" (the run's status is already stored for all but "more")."""
        raise NotImplementedError(f"a {self.name} judge does not run")

    def warnings(self, judge: Judge) -> list[str]:
        """What the judges panel and the dashboard warn of for a judge of this kind."""
        return []

    def summary_extras(self, judge: Judge) -> dict[str, Any]:
        """What the judge's summary reports beyond its settings (read from the judge)."""
        return {}

    @classmethod
    def store(cls, run: JudgeRun, answer: JudgeAnswer, cost: float) -> None:
        """Store one answer of this kind's step (`judge_calls.judge_answer_store`); TypeError for
        an answer of another type than `answer_type` (the store's columns read its fields)."""
        if not isinstance(answer, cls.answer_type):
            raise TypeError(
                f"a {cls.name} judge answers with {cls.answer_type.__name__}, not {type(answer).__name__}"
            )
        judge_answer_store(run, answer, cost)

    @classmethod
    def setting(cls, name: str) -> JudgeSetting | None:
        return next((setting for setting in cls.settings if setting.name == name), None)

    @classmethod
    def versioned(cls) -> tuple[str, ...]:
        """What a judge of this kind is asked: editing one makes a new version."""
        return COMMON_VERSIONED + tuple(setting.name for setting in cls.settings if setting.versioned)

    @classmethod
    def editable(cls) -> tuple[str, ...]:
        """Every field `judge_update` takes for a judge of this kind."""
        return COMMON_VERSIONED + COMMON_UNVERSIONED + tuple(setting.name for setting in cls.settings)
