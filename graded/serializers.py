"""The graded mode's REST shapes: a graded item and its answer, the estimates and their history,
the sampling distribution, throughput and a new run's evaluation."""

from __future__ import annotations

from typing import Any

from rest_framework import serializers

from labeling.fields import NOTE_MAX_CHARS
from labeling.models import Campaign, Judgment, Task, Verdict
from labeling.serializers import LEASE_HELP, DocumentOutputSerializer, TopicOutputSerializer
from labeling.strict_json import PlainFloatField, StrictSerializer


class TaskOutputSerializer(StrictSerializer):
    task = serializers.IntegerField(source="pk")
    # A gold question is served as the grade item it looks like (graded.gold).
    kind = serializers.SerializerMethodField()
    campaign = serializers.IntegerField(source="campaign_id")
    lease_expires_at = serializers.DateTimeField()
    lease = serializers.DateTimeField(source="leased_at", help_text=LEASE_HELP)
    topic = TopicOutputSerializer()
    document = DocumentOutputSerializer()

    def get_kind(self, task: Task) -> str:
        return Task.Kind.GRADE.value

    @staticmethod
    def of(task: Task) -> dict[str, Any]:
        return _TASK_OUTPUT.to_representation(task)


class AnswerInputSerializer(StrictSerializer):
    grade = serializers.IntegerField(min_value=0)
    seconds = serializers.FloatField(min_value=0, required=False, allow_null=True)
    note = serializers.CharField(
        required=False, allow_blank=True, max_length=NOTE_MAX_CHARS, help_text="your note on this judgment"
    )


class JudgmentOutputSerializer(StrictSerializer):
    id = serializers.IntegerField()
    task = serializers.IntegerField(source="task_id")
    grade = serializers.IntegerField()
    seconds = serializers.FloatField(allow_null=True)
    created_at = serializers.DateTimeField()

    @staticmethod
    def of(judgment: Judgment) -> dict[str, Any]:
        return _JUDGMENT_OUTPUT.to_representation(judgment)


# One instance each serves every request on the judging path: binding a serializer's fields
# (a deep copy of the declared ones) costs more than the conversion, and to_representation
# keeps no state between calls.
_TASK_OUTPUT = TaskOutputSerializer()


_JUDGMENT_OUTPUT = JudgmentOutputSerializer()


class _IntervalFieldsSerializer(StrictSerializer):
    """How an estimate's interval was built and whether it can be trusted (rows and differences)."""

    interval = serializers.CharField(
        required=False, help_text="how low/high were built: skew_t, t, clt, hoeffding, bernstein, or any_n"
    )
    reliable = serializers.BooleanField(
        required=False,
        help_text="false below reliable_from distinct judged topics: low/high then hold the any-n bounds",
    )
    reliable_from = serializers.IntegerField(required=False)
    any_n_low = serializers.FloatField(
        required=False, allow_null=True, help_text="Hoeffding bound valid for any n, cut to the metric range"
    )
    any_n_high = serializers.FloatField(required=False, allow_null=True)


class EstimateRowSerializer(_IntervalFieldsSerializer):
    name = serializers.CharField()
    metric = serializers.CharField()
    value = serializers.FloatField(allow_null=True)
    se = serializers.FloatField(allow_null=True)
    low = serializers.FloatField(allow_null=True)
    high = serializers.FloatField(allow_null=True)
    n = serializers.IntegerField()
    judged = serializers.IntegerField(required=False)
    intervals = serializers.DictField(
        required=False, help_text="item level: clt, hoeffding, bernstein [low, high]"
    )
    reason = serializers.CharField(required=False, help_text="why the value is null")


class DifferenceSerializer(_IntervalFieldsSerializer):
    systems = serializers.ListField(child=serializers.CharField())
    metric = serializers.CharField()
    value = serializers.FloatField(allow_null=True)
    se = serializers.FloatField(allow_null=True)
    low = serializers.FloatField(allow_null=True)
    high = serializers.FloatField(allow_null=True)
    n = serializers.IntegerField()
    p_order_right = serializers.FloatField(allow_null=True)


class EstimatesSerializer(StrictSerializer):
    freshness = serializers.JSONField(
        help_text="how current the worker's stored estimates are: {answers, counted (by its last recompute), "
        "behind, recomputed_at, age_seconds, stale_seconds (0 unless behind)}"
    )
    level = serializers.CharField()
    systems = EstimateRowSerializer(many=True)
    difference = DifferenceSerializer(allow_null=True)
    spent = serializers.FloatField()
    budget = serializers.FloatField()
    budget_unit = serializers.CharField()
    judgments = serializers.IntegerField()
    draws = serializers.IntegerField()
    estimand = serializers.JSONField(
        required=False,
        help_text="{topics, ranked_topics, left_out, rule, core_rule}: the topics the estimates average over",
    )
    exact = serializers.CharField(
        allow_null=True,
        help_text="once every pool item is judged, a sentence saying each row's `exact` is its value over "
        "the pool; null before",
    )


class SnapshotSerializer(StrictSerializer):
    id = serializers.IntegerField(
        help_text="increases with every snapshot: pass it as ?after= to get newer ones"
    )
    created = serializers.CharField()
    spent = serializers.FloatField()
    budget = serializers.FloatField()
    judgments = serializers.IntegerField()
    draws = serializers.IntegerField()
    level = serializers.CharField()
    systems = EstimateRowSerializer(many=True)
    difference = DifferenceSerializer(allow_null=True)


class SamplingTopicSerializer(StrictSerializer):
    topic = serializers.CharField()
    q = serializers.FloatField()
    cost = serializers.FloatField()
    expected = serializers.FloatField()


class AssessorThroughputSerializer(StrictSerializer):
    assessor = serializers.CharField()
    judgments = serializers.IntegerField()
    median_seconds = serializers.FloatField(allow_null=True)
    mean_seconds = serializers.FloatField(allow_null=True)
    per_hour = serializers.FloatField(allow_null=True)
    last = serializers.CharField()


class ThroughputSerializer(StrictSerializer):
    judgments = serializers.IntegerField()
    median_seconds = serializers.FloatField(allow_null=True)
    mean_seconds = serializers.FloatField(allow_null=True)
    per_hour = serializers.FloatField(allow_null=True)
    assessors = AssessorThroughputSerializer(many=True)


class RunEvaluationSerializer(StrictSerializer):
    system = serializers.CharField()
    metric = serializers.CharField()
    level = serializers.CharField()
    value = serializers.FloatField(allow_null=True)
    se = serializers.FloatField(allow_null=True)
    low = serializers.FloatField(allow_null=True)
    high = serializers.FloatField(allow_null=True)
    n = serializers.IntegerField()
    unreachable_mass = serializers.FloatField(allow_null=True)
    unreachable_share = serializers.FloatField(allow_null=True)
    warning = serializers.CharField(allow_null=True)


class ArrivalInputSerializer(StrictSerializer):
    """A run that arrives: multipart form fields."""

    file = serializers.FileField(help_text="the arriving run (TREC run format, plain or gzip)")
    budget = PlainFloatField(
        required=False,
        help_text="what the top-up spends on the arriving run, in the campaign's budget unit (give "
        "this or target_width)",
    )
    reference = serializers.CharField(
        required=False,
        max_length=200,
        help_text="the pooled run it is compared with (default: the best current estimate)",
    )
    target_width = PlainFloatField(
        required=False,
        help_text="the 95 % interval width of its difference with the reference that the top-up should "
        "reach, in the metric's units: the budget is planned for it from the label model and the stored "
        "draws (single-documents strategies; give this or budget)",
    )
    rule = serializers.ChoiceField(
        Campaign.VerdictRule.choices,
        required=False,
        help_text="how its verdict is read (default: the campaign's verdict_rule); fixed with it",
    )
    question = serializers.ChoiceField(
        Campaign.VerdictQuestion.choices,
        required=False,
        help_text="difference, non_inferiority or superiority (default: the campaign's verdict_question)",
    )
    margin = PlainFloatField(
        required=False,
        min_value=0.0,
        help_text="the margin of a non_inferiority or superiority question, in metric units (default: the "
        "campaign's verdict_margin)",
    )


class ArrivalNumbersSerializer(StrictSerializer):
    value = serializers.FloatField(allow_null=True)
    se = serializers.FloatField(allow_null=True)
    low = serializers.FloatField(allow_null=True)
    high = serializers.FloatField(allow_null=True)
    reliable = serializers.BooleanField(
        allow_null=True, help_text="false: too few topics or draws for an interval; low, high hold at any n"
    )
    reliable_from = serializers.IntegerField(
        allow_null=True, help_text="judged units from which it is reliable"
    )


class ArrivalDifferenceSerializer(ArrivalNumbersSerializer):
    exact = serializers.FloatField(
        allow_null=True,
        help_text="the difference itself once every document it weighs is judged and the verdict was "
        "read from it (no sampling error; value and interval stay the sample's estimate); else null",
    )


class ArrivalBandSerializer(StrictSerializer):
    low = serializers.FloatField(allow_null=True)
    high = serializers.FloatField(allow_null=True)


class ArrivalSerializer(StrictSerializer):
    id = serializers.IntegerField()
    system = serializers.CharField()
    reference = serializers.CharField(allow_null=True)
    created = serializers.CharField()
    status = serializers.ChoiceField(
        ("labelling", "judging", "done"),
        help_text="labelling while the campaign's model judge labels its new documents (the top-up "
        "waits for them), judging while the top-up is spent, done after (or while paused)",
    )
    estimate = ArrivalNumbersSerializer(help_text="the arriving run's metric, 95 % interval")
    difference = ArrivalDifferenceSerializer(help_text="arriving run minus the reference, 95 % interval")
    order_right = serializers.FloatField(
        allow_null=True,
        help_text="probability that the estimated order of the two runs is the true one, read from the "
        "interval shown (above 0.975 exactly when the 95 % interval excludes 0)",
    )
    new_items = serializers.IntegerField(help_text="its top-K documents no pooled run had retrieved")
    new_judged = serializers.IntegerField(help_text="of those, judged so far")
    waiting_items = serializers.IntegerField(
        help_text="documents it or its reference ranks in groups that joined the pool late and that no "
        "draw has picked since: until none waits, its estimate and difference have no value (their "
        "uncertainty cannot be measured yet)"
    )
    topup_budget = serializers.FloatField(help_text="the top-up, in the campaign's budget unit")
    target_width = serializers.FloatField(
        allow_null=True, help_text="the 95 % width asked for, when the budget was planned for one"
    )
    planned_width = serializers.FloatField(
        allow_null=True,
        help_text="the width the planner predicted for topup_budget (larger than target_width when the "
        "planner's cap was reached)",
    )
    topup_judged = serializers.IntegerField(
        help_text="assessor judgments since it arrived (items drawn after it; at topic level also its "
        "documents on the topics drawn before)"
    )
    topup_spent = serializers.FloatField(help_text="what they spent, in the campaign's budget unit")
    report_at = serializers.CharField(
        allow_null=True,
        help_text="when these figures were computed (the worker refreshes an undecided arrival's at every "
        "recompute, a decided one's now and then); the verdict fields are as stored now",
    )
    reference_given = serializers.BooleanField(
        help_text="false when the submission named none and the best certified pooled run was taken"
    )
    rule = serializers.ChoiceField(
        Campaign.VerdictRule.choices,
        help_text="how its verdict is read, fixed when it arrived: sequential (after every label, the "
        "error spread over the planned top-up), anytime (after every label, no horizon) or fixed (once, "
        "when the top-up is spent)",
    )
    question = serializers.ChoiceField(Campaign.VerdictQuestion.choices)
    margin = serializers.FloatField(help_text="in metric units")
    horizon = serializers.FloatField(
        allow_null=True,
        help_text="the planned top-up in `horizon_unit`: the sequential rule spends its error over it",
    )
    horizon_unit = serializers.ChoiceField(
        ("labels", "topics"),
        help_text="what the horizon and the looks count: labels, or topics where whole topics are drawn",
    )
    verdict = serializers.ChoiceField(
        Verdict.Outcome.choices,
        allow_null=True,
        help_text="the arriving run against the reference (better/worse; not_worse/worse for "
        "non_inferiority; better/not_better for superiority; not_settled; unchanged when it ranks the "
        "same documents as the reference: no top-up); null until decided",
    )
    decided_at = serializers.DateTimeField(allow_null=True)
    decided_labels = serializers.IntegerField(
        allow_null=True, help_text="the top-up labels at the look the verdict was read at"
    )
    verdict_reason = serializers.CharField(
        allow_blank=True,
        help_text="why it is not settled, or why the current look is not read (too few informative labels, "
        "stored labels that disagree with the top-up, documents waiting for a draw)",
    )
    sequence = ArrivalBandSerializer(
        help_text="the interval the rule reads: its current band, or the one the verdict was read from "
        "(nulls while it cannot be read)"
    )
    topup_returned = serializers.FloatField(
        help_text="top-up budget taken off the campaign when the verdict came before the top-up was spent"
    )
    unreachable_share = serializers.FloatField(
        allow_null=True,
        help_text="share of its metric's weight on documents not drawn since they joined (0 once topped up)",
    )
