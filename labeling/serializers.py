"""REST API input and output shapes."""

from __future__ import annotations

from typing import Any

from drf_spectacular.utils import extend_schema_field
from rest_framework import serializers

from labeling.fields import GRADE_DESCRIPTION_MAX_CHARS, GUIDELINES_MAX_CHARS
from labeling.models import Campaign, Verdict
from labeling.modes import field_choices
from labeling.selectors import STATE_LABELS, Progress, verdict_summary
from labeling.strict_json import PlainFloatField, StrictModelSerializer, StrictSerializer


class CustomDcgSerializer(StrictSerializer):
    gains = serializers.ListField(
        child=serializers.FloatField(), help_text="gain per grade, lowest grade first; non-decreasing, >= 0"
    )
    discounts = serializers.ListField(
        child=serializers.FloatField(), help_text="discount per position 1..K (at least the cutoff); > 0"
    )
    source = serializers.CharField(  # type: ignore[assignment]  # a field named like DRF's Field.source
        max_length=500, required=False, default="", help_text="where they come from, shown beside the metric"
    )


class CampaignInputSerializer(StrictSerializer):
    name = serializers.CharField(max_length=200)
    metric = serializers.CharField(max_length=32, default="DCG@10")
    grades = serializers.ListField(
        child=serializers.JSONField(),
        required=False,
        help_text="grade names lowest first, or [{name, key, description}] (description optional)",
    )
    judging_mode = serializers.CharField(
        max_length=16,
        default="graded",
        help_text="a registered judging mode's name (graded by default; docs/modes/ has one page per mode)",
    )
    mode = serializers.CharField(
        max_length=16, source="judging_mode", required=False, help_text="as judging_mode"
    )
    k = serializers.IntegerField(
        min_value=1, max_value=1000, required=False, allow_null=True, help_text="top-k mode: k (default 10)"
    )
    goal = serializers.ChoiceField(Campaign.Goal.choices, default=Campaign.Goal.ONE)
    goal_k = serializers.IntegerField(min_value=1, max_value=10_000, required=False, allow_null=True)
    strategy = serializers.CharField(max_length=32, default="passive")
    budget = PlainFloatField(min_value=0)
    budget_unit = serializers.ChoiceField(Campaign.BudgetUnit.choices, default=Campaign.BudgetUnit.JUDGMENTS)
    overlap = serializers.IntegerField(min_value=1, max_value=20, default=1)
    pool_depth = serializers.IntegerField(min_value=1, max_value=100_000, required=False, allow_null=True)
    lease_seconds = serializers.IntegerField(min_value=10, max_value=86400, default=600)
    mix = serializers.FloatField(min_value=0.0, max_value=1.0, default=0.1)
    verdict_rule = serializers.ChoiceField(
        Campaign.VerdictRule.choices,
        default=Campaign.VerdictRule.SEQUENTIAL,
        help_text="how a run that arrives, or a two-system campaign, gets its verdict: sequential (read "
        "after every label, the error spread over the planned top-up; may stop it early), anytime (read "
        "after every label with no horizon; valid however far the budget grows) or fixed (read once, when "
        "the top-up is spent). Fixed once a label counts (docs/api.md, Release verdicts)",
    )
    verdict_question = serializers.ChoiceField(
        Campaign.VerdictQuestion.choices,
        default=Campaign.VerdictQuestion.DIFFERENCE,
        help_text="difference (better or worse), non_inferiority (not worse by more than the margin) or "
        "superiority (better by more than the margin)",
    )
    verdict_margin = serializers.FloatField(
        min_value=0.0,
        default=0.0,
        help_text="the margin of a non_inferiority or superiority question, in metric units (0 otherwise)",
    )
    focus_systems = serializers.ListField(child=serializers.CharField(max_length=200), required=False)
    prior_strength = serializers.FloatField(min_value=0.0, default=20.0)
    guidelines = serializers.CharField(
        required=False,
        allow_blank=True,
        max_length=GUIDELINES_MAX_CHARS,
        trim_whitespace=False,
        help_text="instructions for assessors in Markdown (raw HTML is shown as text)",
    )
    custom_dcg = CustomDcgSerializer(
        required=False,
        allow_null=True,
        help_text="DCG and nDCG with these gains and discounts (e.g. learned from a side-by-side "
        "campaign); null = 2^y - 1 and 1/log2(1+k)",
    )

    def validate(self, data: dict[str, Any]) -> dict[str, Any]:
        # `k` is a setting of the judging mode, stored by the mode (labeling.modes), not the campaign.
        k = data.pop("k", None)
        if k is not None:
            data["mode_settings"] = {"k": k}
        return data


class CampaignCloneSerializer(StrictSerializer):
    name = serializers.CharField(max_length=200, required=False, help_text="default: '<name> (copy)'")
    with_arrivals = serializers.BooleanField(
        default=False,
        help_text="true: the budget grown by the arrivals' top-ups and the arrived runs as ordinary pooled "
        "runs; default: the budget and runs as they were before any arrival",
    )


class CampaignArchiveSerializer(StrictSerializer):
    archived = serializers.BooleanField(default=True, help_text="false brings it back to the work lists")


class CampaignUpdateSerializer(CampaignInputSerializer):
    grade_descriptions = serializers.ListField(
        child=serializers.CharField(max_length=GRADE_DESCRIPTION_MAX_CHARS, allow_blank=True),
        required=False,
        help_text='one description per grade, lowest first ("" for none); may change while judging',
    )

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        kwargs["partial"] = True
        super().__init__(*args, **kwargs)


class ModeDefinedChoiceField(serializers.ChoiceField):
    """A choice among values the judging modes' packages define (`labeling.modes.field_choices`:
    the sampling strategies), read when the field is used: serializers are made when their
    modules load, before the modes register."""

    def __init__(self, field: str, **kwargs: Any) -> None:
        self.defined_by_modes = field
        super().__init__(choices=[], **kwargs)

    def _get_choices(self) -> dict[Any, Any]:
        return dict(field_choices().get(self.defined_by_modes, []))

    def _set_choices(self, choices: Any) -> None:
        """Nothing to keep: the modes say (`_get_choices`)."""

    choices = property(_get_choices, _set_choices)
    grouped_choices = property(_get_choices, _set_choices)

    def _choice_strings_to_values(self) -> dict[str, Any]:
        return {str(value): value for value in self.choices}

    choice_strings_to_values = property(_choice_strings_to_values, _set_choices)


class CampaignVerdictSerializer(StrictSerializer):
    """A two-system campaign's verdict and the plan it is read by (`labeling.models.Verdict`)."""

    verdict = serializers.CharField(allow_null=True, help_text="null until decided")
    rule = serializers.CharField()
    question = serializers.CharField()
    margin = serializers.FloatField()
    horizon = serializers.FloatField(
        help_text="the planned labels (documents judged) the rule spends its error over"
    )
    plan_fixed_at = serializers.DateTimeField(allow_null=True, help_text="when a judgment fixed the plan")
    decided_at = serializers.DateTimeField(allow_null=True)
    decided_labels = serializers.IntegerField(
        allow_null=True, help_text="the labels at the look it was read at"
    )
    low = serializers.FloatField(allow_null=True)
    high = serializers.FloatField(allow_null=True)
    reason = serializers.CharField(allow_blank=True)
    returned = serializers.FloatField(help_text="budget taken off when it came before the budget was spent")


class CampaignOutputSerializer(StrictModelSerializer):
    strategy = ModeDefinedChoiceField("strategy", required=False)
    grades = serializers.SerializerMethodField()
    grade_scale = serializers.JSONField(source="grades")
    mode = serializers.CharField(source="judging_mode", read_only=True)
    k = serializers.SerializerMethodField(help_text="top-k mode: k; null in other modes")
    verdict = serializers.SerializerMethodField(
        help_text="a two-system campaign's verdict; null until decided"
    )
    verdict_decided_at = serializers.SerializerMethodField()
    verdict_low = serializers.SerializerMethodField()
    verdict_high = serializers.SerializerMethodField()
    verdict_returned = serializers.SerializerMethodField()
    verdict_plan = serializers.SerializerMethodField(
        help_text="a two-system campaign's verdict with its plan (null for other goals, or before Start)"
    )

    class Meta:
        model = Campaign
        fields = [
            "id",
            "name",
            "metric",
            "grades",
            "grade_scale",
            "judging_mode",
            "mode",
            "k",
            "goal",
            "goal_k",
            "strategy",
            "budget",
            "budget_unit",
            "overlap",
            "pool_depth",
            "lease_seconds",
            "status",
            "archived_at",
            "created_at",
            "mix",
            "verdict_rule",
            "verdict_question",
            "verdict_margin",
            "verdict",
            "verdict_decided_at",
            "verdict_low",
            "verdict_high",
            "verdict_returned",
            "verdict_plan",
            "focus_systems",
            "prior_strength",
            "custom_dcg",
            "guidelines",
        ]

    def get_grades(self, campaign: Campaign) -> list[str]:
        return [grade["name"] for grade in campaign.grades]

    def get_k(self, campaign: Campaign) -> int | None:
        from labeling.modes import mode_of

        return mode_of(campaign).settings_of(campaign).get("k")

    def _own_verdict(self, campaign: Campaign) -> Verdict | None:
        """The campaign's own verdict, read once for the six fields that show it."""
        read: dict[int, Verdict | None] = self.__dict__.setdefault("_own_verdicts", {})
        if campaign.pk not in read:
            read[campaign.pk] = Verdict.objects.filter(campaign=campaign, arrival__isnull=True).first()
        return read[campaign.pk]

    def get_verdict(self, campaign: Campaign) -> str | None:
        own = self._own_verdict(campaign)
        return own.outcome or None if own is not None else None

    def get_verdict_decided_at(self, campaign: Campaign) -> str | None:
        own = self._own_verdict(campaign)
        return own.decided_at.isoformat() if own is not None and own.decided_at else None

    def get_verdict_low(self, campaign: Campaign) -> float | None:
        own = self._own_verdict(campaign)
        return own.low if own is not None else None

    def get_verdict_high(self, campaign: Campaign) -> float | None:
        own = self._own_verdict(campaign)
        return own.high if own is not None else None

    def get_verdict_returned(self, campaign: Campaign) -> float:
        own = self._own_verdict(campaign)
        return own.returned if own is not None else 0.0

    @extend_schema_field(CampaignVerdictSerializer(allow_null=True))
    def get_verdict_plan(self, campaign: Campaign) -> dict[str, Any] | None:
        return verdict_summary(self._own_verdict(campaign))


class UploadSerializer(StrictSerializer):
    file = serializers.ListField(child=serializers.FileField(), allow_empty=False)
    format = serializers.ChoiceField([("trec", "trec"), ("jsonl", "jsonl")], required=False)


class ImportReportSerializer(StrictSerializer):
    files = serializers.IntegerField()
    lines = serializers.IntegerField()
    created = serializers.IntegerField()
    updated = serializers.IntegerField()
    unchanged = serializers.IntegerField()
    systems = serializers.ListField(child=serializers.CharField())
    notes = serializers.ListField(child=serializers.CharField())


class ErrorItemSerializer(StrictSerializer):
    file = serializers.CharField()
    line = serializers.IntegerField(allow_null=True)
    message = serializers.CharField()


class ErrorsSerializer(StrictSerializer):
    errors = ErrorItemSerializer(many=True)  # type: ignore[assignment]  # a field named like Serializer.errors


class ProblemSerializer(StrictSerializer):
    kind = serializers.CharField(help_text="e.g. topics_missing, documents_without_text, runs_with_ties")
    count = serializers.IntegerField()
    examples = serializers.ListField(child=serializers.CharField(), help_text="at most five")
    message = serializers.CharField(help_text="what assessors would miss and what to do")
    blocking = serializers.BooleanField(help_text="Start refuses until this is fixed (kind cannot_start)")


class PreflightSerializer(StrictSerializer):
    problems = ProblemSerializer(many=True)
    ready = serializers.BooleanField(
        help_text="no problem listed: Start needs no confirmation (and none refuses it)"
    )


class UsernamesSerializer(StrictSerializer):
    usernames = serializers.ListField(child=serializers.CharField(), allow_empty=False)


class TopicOutputSerializer(StrictSerializer):
    id = serializers.CharField(source="qid")
    title = serializers.CharField()
    description = serializers.CharField()
    narrative = serializers.CharField()


class DocumentOutputSerializer(StrictSerializer):
    docno = serializers.CharField()
    title = serializers.CharField()
    text = serializers.CharField()
    url = serializers.CharField()
    is_stub = serializers.BooleanField()


LEASE_HELP = (
    "the lease this page was served the item with: send it back with the page's lease reports "
    "(POST /api/tasks/{task}/lease/), so that a report from a page reloaded since changes nothing"
)
"""The help of every judge item's `lease` (the `leased_at` it was served with)."""


class ProgressSerializer(StrictSerializer):
    judgments = serializers.IntegerField()
    budget = serializers.FloatField()
    budget_unit = serializers.CharField()
    spent = serializers.FloatField()
    remaining = serializers.FloatField()
    pool_size = serializers.IntegerField()
    prejudged = serializers.IntegerField()
    drawn = serializers.IntegerField()
    status = serializers.CharField()
    fraction = serializers.FloatField()
    state = serializers.CharField(
        help_text="running, paused, done, budget_spent, draft, next_round (training: the worker is "
        "selecting the next round) or refitting (the sampling draws again once the worker has refitted "
        "it, e.g. a model judge's calibration after its first stage)"
    )
    state_label = serializers.SerializerMethodField(help_text="the state in the pages' words")
    strategy = serializers.CharField()
    open_tasks = serializers.IntegerField()
    draws = serializers.IntegerField()
    message = serializers.SerializerMethodField()

    MESSAGES = {
        "budget_spent": "The budget is spent: judging has stopped. A coordinator can raise the budget.",
        "paused": "The campaign is paused.",
        "done": "Every item of the pool is judged: the campaign is done.",
        "draft": "The campaign has not started yet.",
        "next_round": "The next round is being selected: new items appear in a few seconds.",
        "refitting": "The sampling is being refitted on the answers so far (the model judge's calibration "
        "after its first stage): new items appear in a few seconds, or once colleagues answer the first "
        "stage's last items.",
    }

    def get_message(self, progress: Progress) -> str:
        return self.MESSAGES.get(progress.state, "")

    def get_state_label(self, progress: Progress) -> str:
        return STATE_LABELS.get(progress.state, progress.state)

    @staticmethod
    def of(progress: Progress) -> dict[str, Any]:
        return ProgressSerializer(progress).data


# Assessor agreement (labeling.agreement): every campaign's agreement export, the pair modes' API.
class AgreementTableSerializer(StrictSerializer):
    labels = serializers.ListField(child=serializers.CharField())
    counts = serializers.ListField(child=serializers.ListField(child=serializers.IntegerField()))
    row_normalised = serializers.ListField(
        child=serializers.ListField(child=serializers.FloatField(allow_null=True))
    )
    overall = serializers.FloatField(allow_null=True)
    ignoring_ties = serializers.FloatField(allow_null=True)
    kappa = serializers.FloatField(allow_null=True)
    kappa_kind = serializers.CharField()
    n_pairs = serializers.IntegerField()


class AgreementBetweenSerializer(AgreementTableSerializer):
    first = serializers.CharField()
    second = serializers.CharField()


class AgreementSetSerializer(StrictSerializer):
    pooled = AgreementTableSerializer()
    between = AgreementBetweenSerializer(many=True)


class AgreementSerializer(StrictSerializer):
    preferences = AgreementSetSerializer(allow_null=True)
    inferred_from_grades = AgreementSetSerializer(allow_null=True)
