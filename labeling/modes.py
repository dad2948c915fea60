"""Judging modes: the seam between the core and the ways of judging.

The core (`labeling`: campaigns, imports, access checks, leases, progress, the pages' frame and
the REST routes) never branches on a campaign's mode and never imports a mode's package. A
mode (graded items in `graded.modes`; pairwise preferences and HeapSort top-k in
`pairwise.modes`) is one class that registers an instance here from its app's `ready()` and
provides what differs: its own settings, the start check, next / answer / undo for an
assessor, progress, the judge page, its section of the campaign page, its dashboard and its
exports. The campaign stores only the mode's name (`Campaign.judging_mode`); a mode keeps
its own settings in its own tables.

How to add a mode: docs/architecture.md.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from datetime import datetime
from typing import TYPE_CHECKING, Any, ClassVar

from labeling.shortcuts import Action, actions_of

if TYPE_CHECKING:
    from django import forms
    from django.http import HttpRequest, HttpResponse
    from django.http.response import HttpResponseBase
    from rest_framework.request import Request
    from rest_framework.serializers import Serializer

    from estimation.learned_dcg.preferences import Preference
    from estimation.metrics.spec import Metric
    from labeling.models import Campaign
    from labeling.preflight import Problem
    from labeling.selectors import Progress, Throughput
    from labeling.token_access import TokenJudge


@dataclass(frozen=True)
class Export:
    """A file a campaign can be downloaded as: one entry feeds the URL, the API view and the links.

    `path` is relative to ``/api/campaigns/<id>/``; `produce(campaign)` returns the body (bytes
    or str) or, when `stream` is true, an iterable of chunks.
    """

    name: str  # the URL name, e.g. "api-export-judgments-csv"
    path: str
    suffix: str  # the file is called campaign-<id><suffix>
    label: str
    content_type: str
    produce: Callable[[Campaign], Any]
    stream: bool = True
    place: str = "campaign"  # where the link shows: "campaign" page or "dashboard"
    note: str = ""
    # Whether the link shows for this campaign (None: always), e.g. a judge export only where a
    # judge is; the download itself stays available either way.
    shown: Callable[[Campaign], bool] | None = None

    def filename(self, campaign: Campaign) -> str:
        """The download's file name."""
        return f"campaign-{campaign.pk}{self.suffix}"


class JudgingMode:
    """What a judging mode provides; subclasses override what they do differently."""

    name: ClassVar[str]
    label: ClassVar[str]
    # The `kind` of the items /next/ serves, and the field that marks an answer to one of them
    # (POST /api/tasks/{id}/answer/ serves every mode: the field names the kind, the unit's
    # campaign the mode; see `item_mode`). Modes of one kind share their units' implementation.
    task_kind: ClassVar[str]
    answer_field: ClassVar[str]
    # Modes that draw with a sampling strategy and estimate metrics (graded) set this; the
    # sampling services leave the others alone.
    uses_sampling: ClassVar[bool] = False
    # The upload kinds this mode takes: the campaign page shows those registered
    # (`labeling.import_reports.register_upload`); "labels" (prior grade probabilities) comes
    # through the API only.
    uploads: ClassVar[tuple[str, ...]] = ("topics", "documents", "runs")
    # The mode's own settings that the campaign API takes and shows (e.g. "k" of top-k).
    setting_names: ClassVar[tuple[str, ...]] = ()
    # The fields of the New campaign form that mean something to this mode beyond the ones every
    # mode takes (name, budget, overlap): the form shows only these once the mode is chosen.
    form_fields: ClassVar[tuple[str, ...]] = ()
    exports: ClassVar[tuple[Export, ...]] = ()
    # The mode's judge pages, each with what it offers of the core's keyboard actions
    # (`labeling.shortcuts`: EVERY, NOTE, GRADES), and the mode's own actions.
    shortcut_pages: ClassVar[Mapping[str, tuple[str, ...]]] = {}
    shortcut_actions: ClassVar[tuple[Action, ...]] = ()

    def answer_preferences(self, campaign: Campaign) -> list[Preference]:
        """The preferences the mode's answers state (pair modes: every comparison), for the
        assessor agreement every campaign reports (`labeling.agreement.campaign_agreement`);
        grades' inferred preferences are the core's own."""
        return []

    def setting_form_fields(self) -> dict[str, tuple[str, forms.Field]]:
        """The New campaign form's fields that set this mode's own settings, as form field name
        -> (setting name, field); the form adds them and shows each only while its mode is
        chosen (list the field name in `form_fields` too)."""
        return {}

    def field_choices(self) -> dict[str, list[tuple[str, str]]]:
        """The choices of the New campaign form's fields whose values this mode's packages define
        (graded: the sampling strategies), as (value, label) per field name."""
        return {}

    # -- settings and life cycle ---------------------------------------------------------------
    def configure(self, campaign: Campaign, settings: Mapping[str, Any]) -> None:
        """Create or change the mode's own settings of a saved campaign; ValueError if invalid."""
        unknown = set(settings) - set(self.setting_names)
        if unknown:
            raise ValueError(f"the {self.name} mode has no setting(s) {', '.join(sorted(unknown))}")

    def settings_of(self, campaign: Campaign) -> dict[str, Any]:
        """The mode's settings as the campaign API shows them (every name of `setting_names`)."""
        return {}

    def describe(self, campaign: Campaign) -> str:
        """One line saying what the campaign measures, for lists and the campaign page."""
        return self.label

    def validate(self, campaign: Campaign, metric: Metric) -> None:
        """ValueError when the campaign's settings do not fit the mode (checked on every create
        and update, after the core's own checks): e.g. a sampling strategy that cannot estimate
        the metric."""

    def updated(self, campaign: Campaign, fields: set[str]) -> None:
        """After `fields` of the campaign changed (inside the update's transaction): e.g. trim the
        queued draws to a cut budget, refit for a new strategy."""

    def start_problem(self, campaign: Campaign) -> str | None:
        """Why the campaign cannot start yet (e.g. nothing imported), or None."""
        return None

    def started(self, campaign: Campaign) -> None:
        """Set-up once the campaign runs (inside the start transaction)."""

    def cloned(self, source: Campaign, clone: Campaign) -> None:
        """Copy the mode's own uploaded data to a clone (`services.campaign_clone` has copied the
        settings through `settings_of`/`configure` and the core's files already)."""

    def preflight_problems(self, campaign: Campaign) -> Iterable[Problem]:
        """What assessors of this mode would miss beyond the core's checks (labeling.preflight);
        unlike `start_problem`, these warn and Start asks for confirmation."""
        return ()

    def recompute(self, campaign: Campaign) -> None:
        """The mode's own recompute after answers (`labeling.recompute.recompute`, in the worker,
        coalesced): e.g. the sampling engine's refit and snapshot, a model fitted to the answers.
        Idempotent; runs outside any transaction."""

    # -- judging -------------------------------------------------------------------------------
    # What one answer is called on the pages ("judgments", "comparisons").
    judgments_word: ClassVar[str] = "judgments"

    def progress(self, campaign: Campaign) -> Progress:
        raise NotImplementedError

    def finished(self, campaign: Campaign, progress: Progress) -> bool:
        """Whether a running campaign has nothing left to judge, so the worker's recompute marks it
        done (`progress`: the mode's own counts, just read). Default: never by itself (the
        coordinator finishes it)."""
        return False

    def throughput(self, campaign: Campaign) -> list[Throughput]:
        """Each assessor's pace (labeling.selectors.throughput_of over the mode's answers)."""
        raise NotImplementedError

    def other_answers_by(self, campaign: Campaign, user_id: int) -> int:
        """How many answers other than graded judgments (`judgments_word`: comparisons, side by
        side answers) this user gave in the campaign: My judgments lists graded judgments and
        counts these. Default: none."""
        return 0

    def next_response(self, request: Request, campaign: Campaign) -> HttpResponseBase:
        """200 with the assessor's next item (`kind` = task_kind), 204 when nothing is left."""
        raise NotImplementedError

    def answer_response(self, request: Request, task_id: int) -> HttpResponseBase:
        """Store an answer to one of this mode's items."""
        raise NotImplementedError

    def undo_response(self, request: Request, campaign: Campaign) -> HttpResponseBase:
        """Take back the assessor's last answer; 200 with its item again, 409 if not allowed."""
        raise NotImplementedError

    def unit_campaign(self, unit_id: int) -> tuple[int, str] | None:
        """The campaign of one of the mode's units (an item of `task_kind`) and that campaign's
        judging mode, None when there is no such unit: `item_mode` routes answers, skips and
        lease reports by it, and the core checks that the user may judge there (a unit of a
        campaign the user cannot see is a 404)."""
        return None

    def lease_hold(
        self, unit_id: int, assessor: Any, state: str, stamp: datetime | None = None
    ) -> bool | None:
        """The holder's page is "active", "idle" (hidden) or "left" (closed): see
        `labeling.leases.lease_hold` (`stamp`: the lease the page was served, when it says).
        False when the assessor does not hold the unit (that lease); None when the mode keeps
        its units' leases otherwise (the page's report is ignored)."""
        return None

    def skip(self, unit_id: int, assessor: Any, reason: str, note: str) -> bool:
        """Pass a held unit of this mode (an item of `task_kind`) on with a reason (one of
        `labeling.models.Skip.Reason`) and a note: it goes back for someone else, never to this
        assessor again. False when the mode has no skip; LeaseConflict when the assessor does not
        hold the unit; ValueError on a bad reason or note."""
        return False

    def token_next(self, judge: TokenJudge) -> HttpResponse | None:
        """/next/ the short way for an API token holder who may judge (see labeling.token_access);
        None sends the request the full DRF way."""
        return None

    def token_answer(
        self, request: HttpRequest, token: str, task_id: int, payload: dict[str, Any]
    ) -> HttpResponse | None:
        """An answer the short way for an API token holder; None sends it the full DRF way."""
        return None

    def item_serializer(self) -> type[Serializer]:
        """The shape of one item /next/ serves (for the API schema)."""
        raise NotImplementedError

    def answer_serializer(self) -> type[Serializer]:
        """The shape of an answer (for the API schema)."""
        raise NotImplementedError

    # -- pages -----------------------------------------------------------------------------------
    def judge_page(self, request: HttpRequest, campaign: Campaign) -> HttpResponse:
        raise NotImplementedError

    def dashboard_page(self, request: HttpRequest, campaign: Campaign) -> HttpResponse:
        raise NotImplementedError

    def campaign_section(self, request: HttpRequest, campaign: Campaign) -> dict[str, Any] | None:
        """The mode's part of the campaign page: ``{"template": ..., **context}``, or None."""
        return None

    def campaign_panels(self, request: HttpRequest, campaign: Campaign) -> list[dict[str, Any]]:
        """Further panels of the campaign page, each ``{"template": ..., **context}``; one may also
        name a ``notice_template`` shown at the top of the page (e.g. assessors paused by gold)."""
        return []


_MODES: dict[str, JudgingMode] = {}
CORE_EXPORTS: list[Export] = []
CampaignPanel = Callable[["HttpRequest", "Campaign"], "dict[str, Any] | None"]
_CAMPAIGN_PANELS: list[CampaignPanel] = []


def register(mode: JudgingMode) -> JudgingMode:
    """Make a mode available (called from its app's ready()); a name registers once."""
    existing = _MODES.get(mode.name)
    if existing is not None and type(existing) is not type(mode):
        raise ValueError(f"two judging modes are called {mode.name!r}")
    _MODES[mode.name] = mode
    return mode


def register_export(export: Export) -> Export:
    """A download every campaign offers whatever its mode (the configuration, say)."""
    if all(known.name != export.name for known in CORE_EXPORTS):
        CORE_EXPORTS.append(export)
    return export


def register_campaign_panel(panel: CampaignPanel) -> CampaignPanel:
    """A panel of every campaign's page whatever its mode, from an app above the core (the
    webhooks'): called with the request and the campaign, it returns ``{"template": ...,
    **context}`` or None (nothing to show). Call once, from the app's ready()."""
    if panel not in _CAMPAIGN_PANELS:
        _CAMPAIGN_PANELS.append(panel)
    return panel


def campaign_panels(request: HttpRequest, campaign: Campaign) -> list[dict[str, Any]]:
    """The campaign page's panels: its mode's, then the apps' (`register_campaign_panel`)."""
    apps = [panel(request, campaign) for panel in _CAMPAIGN_PANELS]
    return mode_of(campaign).campaign_panels(request, campaign) + [panel for panel in apps if panel]


def all_modes() -> list[JudgingMode]:
    """Every registered mode, in registration order."""
    return list(_MODES.values())


def mode_named(name: str) -> JudgingMode:
    """The mode called `name`; ValueError naming the known ones otherwise."""
    try:
        return _MODES[name]
    except KeyError:
        known = ", ".join(_MODES) or "none registered"
        raise ValueError(f"unknown judging mode {name!r}; available: {known}") from None


def mode_of(campaign: Campaign) -> JudgingMode:
    """The campaign's judging mode."""
    return mode_named(campaign.judging_mode)


def campaign_preflight(campaign: Campaign) -> list[Problem]:
    """Why Start would refuse (a blocking problem, the mode's `start_problem`), then what assessors
    would miss: the core's checks and the campaign's mode's own."""
    from labeling.preflight import Problem, core_preflight

    refusal = mode_of(campaign).start_problem(campaign)
    blocking = [Problem("cannot_start", 1, (), f"Start refuses: {refusal}", blocking=True)] if refusal else []
    return blocking + core_preflight(campaign) + list(mode_of(campaign).preflight_problems(campaign))


def campaign_progress(campaign: Campaign) -> Progress:
    """Judgments, budget, spent and remaining for a campaign, and its state (its mode counts)."""
    return mode_of(campaign).progress(campaign)


def campaign_state_shown(campaign: Campaign) -> str:
    """The state a campaign list shows: the status, except that a running campaign the budget or
    the pool stopped says so (its mode's progress decides, as on the judge page). Only a stopped
    campaign costs the progress's queries: a list of many running ones stays cheap."""
    from labeling.models import Campaign  # the models import this module

    if campaign.status != Campaign.Status.RUNNING or not campaign.blocked:
        return str(campaign.status)
    return campaign_progress(campaign).state


def shortcut_actions() -> tuple[Action, ...]:
    """Every keyboard action of the judge pages: the core's and the registered modes' own
    (`labeling.shortcuts.actions_of`), for the settings page, the API and the key checks."""
    return actions_of((mode.shortcut_pages, mode.shortcut_actions) for mode in _MODES.values())


def shortcut_action(name: str) -> Action | None:
    """The keyboard action called `name`, or None."""
    return next((action for action in shortcut_actions() if action.name == name), None)


def mode_choices() -> list[tuple[str, str]]:
    """(name, label) of every mode, for model fields, forms and serializers."""
    return [(mode.name, mode.label) for mode in _MODES.values()]


def field_choices() -> dict[str, list[tuple[str, str]]]:
    """Per New-campaign field whose values the modes' packages define (the sampling strategy),
    the (value, label) choices every mode offers, in registration order."""
    offered: dict[str, dict[str, str]] = {}
    for mode in _MODES.values():
        for field, choices in mode.field_choices().items():
            offered.setdefault(field, {}).update(choices)
    return {field: list(labels.items()) for field, labels in offered.items()}


def modes_of_kind(kind: str) -> list[JudgingMode]:
    """The modes whose items are of `kind`, in registration order."""
    return [mode for mode in _MODES.values() if mode.task_kind == kind]


def item_mode(kind: str, unit_id: int) -> tuple[JudgingMode, int] | None:
    """The mode that serves unit `unit_id` of item kind `kind`, and the unit's campaign: the
    campaign's own mode when it serves that kind (a training campaign's graded task goes to the
    training mode), else the first registered mode of the kind (a side-by-side campaign's single
    documents are graded tasks). None when no mode serves the kind or there is no such unit."""
    serving = modes_of_kind(kind)
    if not serving:
        return None
    found = serving[0].unit_campaign(unit_id)
    if found is None:
        return None
    campaign_id, mode_name = found
    own = _MODES.get(mode_name)
    return (own if own is not None and own.task_kind == kind else serving[0]), campaign_id


def answer_kind(body: object) -> str | None:
    """The item kind an answer body is for: the kind whose answer field it carries (its "kind"
    names it when two kinds take the same field); None when it carries none, or the fields of
    two kinds of item (which item would it answer?)."""
    if not isinstance(body, Mapping):
        return None
    kinds = {mode.task_kind for mode in _MODES.values() if mode.answer_field in body}
    named = body.get("kind")
    if isinstance(named, str) and named in kinds:
        return named
    fields = {mode.answer_field for mode in _MODES.values() if mode.task_kind in kinds}
    return next(iter(kinds)) if len(kinds) == 1 and len(fields) == 1 else None


def exports_of(campaign: Campaign) -> list[Export]:
    """The downloads a campaign offers: those of every mode, then its mode's own."""
    return [*CORE_EXPORTS, *mode_of(campaign).exports]


def export_links(campaign: Campaign, place: str | None = None) -> list[dict[str, str]]:
    """{label, url, note} of the campaign's downloads (those shown at `place`, or all), for pages."""
    from django.urls import reverse

    return [
        {"label": export.label, "url": reverse(export.name, args=[campaign.pk]), "note": export.note}
        for export in exports_of(campaign)
        if (place is None or export.place == place) and (export.shown is None or export.shown(campaign))
    ]


def every_export() -> Iterable[Export]:
    """Every registered download once (for the URL table), core ones first."""
    seen: set[str] = set()
    for export in [*CORE_EXPORTS, *(export for mode in _MODES.values() for export in mode.exports)]:
        if export.name not in seen:
            seen.add(export.name)
            yield export
