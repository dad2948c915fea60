"""The base of a model-judge kind (`sampling.judge_kinds`)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, ClassVar

if TYPE_CHECKING:
    from labeling.models import Campaign
    from sampling.models import Judge, JudgeRun


class JudgeKind:
    """What a kind of model judge provides; subclasses override what they do differently."""

    name: ClassVar[str]
    # The add-judge form's choice, and the words after "name:" in the API's help.
    label: ClassVar[str]
    api_help: ClassVar[str]
    # Whether the worker runs it over the pool (else its labels come as files).
    runs: ClassVar[bool] = True
    # Fields of the add-judge form (and `judge_create`) that mean something only to this kind:
    # the form shows them when the kind is chosen and drops them for the other kinds.
    own_fields: ClassVar[tuple[str, ...]] = ()
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
