"""Input and output shapes of the side-by-side REST API (and its OpenAPI schema)."""

from __future__ import annotations

from typing import Any

from rest_framework import serializers

from labeling.models import Document
from labeling.serializers import LEASE_HELP, TopicOutputSerializer
from labeling.strict_json import StrictModelSerializer, StrictSerializer
from sxs.models import SxsAnswer, SxsSettings, SxsTask
from sxs.selectors import task_lists
from sxs.services import MAX_SECONDS, PREFERENCES
from sxs.services.judging import MAX_COMMENT
from sxs.services.setup import MAX_K, SETTING_FIELDS

# Characters of a document's text shown under its title (the page clamps it to two lines).
EXCERPT_CHARACTERS = 320


def excerpt(text: str) -> str:
    """The start of a text, cut at a word, with an ellipsis when cut."""
    flat = " ".join(text.split())
    if len(flat) <= EXCERPT_CHARACTERS:
        return flat
    return flat[:EXCERPT_CHARACTERS].rsplit(" ", 1)[0] + "…"


class SxsSettingsSerializer(StrictModelSerializer):
    k = serializers.IntegerField(min_value=1, max_value=MAX_K, required=False)

    class Meta:
        model = SxsSettings
        fields = [*SETTING_FIELDS, "prepared_at"]
        read_only_fields = ["prepared_at"]


class ResultSerializer(StrictSerializer):
    rank = serializers.IntegerField()
    docno = serializers.CharField()
    title = serializers.CharField()
    url = serializers.CharField()
    excerpt = serializers.CharField()


class SxsItemSerializer(StrictSerializer):
    task = serializers.IntegerField()
    kind = serializers.CharField(default="sxs")
    campaign = serializers.IntegerField()
    lease_expires_at = serializers.DateTimeField()
    lease = serializers.DateTimeField(help_text=LEASE_HELP)
    topic = TopicOutputSerializer()
    k = serializers.IntegerField()
    left = ResultSerializer(many=True, help_text="the list shown left, best first (system not named)")
    right = ResultSerializer(many=True, help_text="the list shown right, best first")

    @staticmethod
    def of(task: SxsTask, k: int) -> dict[str, Any]:
        left, right = task_lists(task)
        return SxsItemSerializer(
            {
                "task": task.pk,
                "kind": "sxs",
                "campaign": task.campaign_id,
                "lease_expires_at": task.lease_expires_at,
                "lease": task.leased_at,
                "topic": task.topic,
                "k": k,
                "left": _results(left),
                "right": _results(right),
            }
        ).data


def _results(documents: list[Document]) -> list[dict[str, Any]]:
    return [
        {
            "rank": rank,
            "docno": document.docno,
            "title": document.title,
            "url": document.url,
            "excerpt": excerpt(document.text),
        }
        for rank, document in enumerate(documents, start=1)
    ]


class SxsAnswerInputSerializer(StrictSerializer):
    preference = serializers.ChoiceField(
        choices=list(PREFERENCES),
        help_text="as displayed: -2 left much better, -1 left better, 0 about the same, "
        "1 right better, 2 right much better",
    )
    seconds = serializers.FloatField(min_value=0, max_value=MAX_SECONDS, required=False, allow_null=True)
    comment = serializers.CharField(max_length=MAX_COMMENT, required=False, allow_blank=True, default="")


class SxsAnswerOutputSerializer(StrictModelSerializer):
    preference = serializers.IntegerField(source="shown", help_text="as displayed (negative = left better)")
    preference_a = serializers.IntegerField(
        source="preference", help_text="about the systems: negative = system A better"
    )

    class Meta:
        model = SxsAnswer
        fields = ["id", "task", "preference", "preference_a", "seconds", "comment", "created_at"]


class SkipInputSerializer(StrictSerializer):
    reason = serializers.CharField(max_length=500)


def _floats(help_text: str) -> serializers.ListField:
    return serializers.ListField(
        child=serializers.FloatField(allow_null=True), allow_null=True, help_text=help_text
    )


class AccuracySerializer(StrictSerializer):
    learned = serializers.FloatField(
        allow_null=True,
        help_text="held-out accuracy of the learned DCG (gains x discounts), cross-validated over "
        "topics with C chosen without the held-out fold (nested); a fit stored before the core's "
        "likelihood version scored the full W here",
    )
    learned_full_w = serializers.FloatField(
        allow_null=True, help_text="the same of the full W (not a DCG); null for older fits"
    )
    learned_best_of_grid = serializers.FloatField(
        allow_null=True,
        help_text="the learned DCG at the C best on the held-out folds themselves: optimistic; "
        "null for older fits",
    )
    exp = serializers.FloatField(help_text="DCG@K with gain 2^y - 1, on the same answers")
    linear = serializers.FloatField(help_text="DCG@K with gain y, on the same answers")


class AccuracyPointSerializer(StrictSerializer):
    answers = serializers.IntegerField(help_text="training answers per fold")
    learned = serializers.FloatField(allow_null=True, help_text="held-out accuracy of the full W")
    exp = serializers.FloatField(help_text="DCG@K with gain 2^y - 1, on the same answers")
    linear = serializers.FloatField(help_text="DCG@K with gain y, on the same answers")


class FormTestSerializer(StrictSerializer):
    statistic = serializers.FloatField(allow_null=True, help_text="2 (loglik_full - loglik_rank_one)")
    df = serializers.IntegerField(help_text="(K - 1)(L - 2)")
    p_value = serializers.FloatField(
        allow_null=True, help_text="from chi2(df); null when the test does not apply"
    )
    loglik_full = serializers.FloatField(allow_null=True)
    loglik_rank_one = serializers.FloatField(allow_null=True)
    reason = serializers.CharField(allow_blank=True, help_text="why the test does not apply, else empty")
    sentence = serializers.CharField(help_text="the result in words")


class LeaderboardRowSerializer(StrictSerializer):
    system = serializers.CharField()
    learned_dcg = serializers.FloatField(
        allow_null=True,
        help_text="mean learned DCG over the topics: the rank-1 gains x discounts a campaign applies "
        "(null for a fit stored before this column, until the next recompute)",
    )
    rank_learned_dcg = serializers.IntegerField(allow_null=True)
    standard = serializers.FloatField(help_text="mean DCG@K, gain 2^y - 1, discount 1/log2(1+k)")
    rank_standard = serializers.IntegerField()
    utility = serializers.FloatField(
        help_text="mean learned utility over the topics: the sum of the full T(W), not a DCG"
    )
    rank_utility = serializers.IntegerField()


class DisagreementSerializer(StrictSerializer):
    first = serializers.CharField()
    second = serializers.CharField()
    learned_dcg_difference = serializers.FloatField(help_text="first - second, learned DCG")
    standard_difference = serializers.FloatField(help_text="first - second, standard DCG")


class UtilityDisagreementSerializer(StrictSerializer):
    first = serializers.CharField()
    second = serializers.CharField()
    utility_difference = serializers.FloatField(help_text="first - second, learned utility (full T(W))")
    standard_difference = serializers.FloatField(help_text="first - second, standard DCG")


class DisagreeingAnswersSerializer(StrictSerializer):
    count = serializers.IntegerField(
        help_text="answers where learned and standard DCG predict different winners"
    )
    learned_right = serializers.IntegerField(help_text="of those with a direction, the learned one agreed")
    standard_right = serializers.IntegerField(help_text="of those with a direction, standard DCG agreed")


def _by_metric(help_text: str) -> serializers.DictField:
    return serializers.DictField(child=serializers.FloatField(allow_null=True), help_text=help_text)


METRIC_KEYS = "learned_dcg (as applied), exp (DCG, gain 2^y - 1), linear (gain y), utility (full T(W))"


class DifferenceBinSerializer(StrictSerializer):
    low = serializers.FloatField(help_text="smallest |standard DCG difference| of the two lists in the bin")
    high = serializers.FloatField(help_text="largest")
    answers = serializers.IntegerField(help_text="answers with a direction in the bin")
    accuracy = _by_metric("share predicted right per metric: " + METRIC_KEYS)


class StrengthRowSerializer(StrictSerializer):
    strength = serializers.CharField(help_text="much better or better")
    preference = serializers.IntegerField(help_text="|preference|: 2 or 1")
    answers = serializers.IntegerField()
    accuracy = _by_metric("share predicted right per metric")
    mean_difference = _by_metric("mean |predicted difference| per metric, each on its own scale")


class DiagnosticsSerializer(StrictSerializer):
    metrics = serializers.ListField(child=serializers.CharField())
    reference = serializers.CharField(help_text="the standard DCG whose |difference| makes the bins")
    in_sample = serializers.BooleanField(
        help_text="true: scored on the answers the fit learned from (learned accuracies optimistic)"
    )
    by_difference = DifferenceBinSerializer(many=True)
    by_strength = StrengthRowSerializer(many=True)
    answers = serializers.IntegerField()
    identical = serializers.IntegerField(help_text="answers whose two lists hold the same grades (left out)")
    scored = serializers.IntegerField(help_text="answers with a direction on distinct lists")
    ties = serializers.IntegerField(help_text="'about the same' answers on distinct lists")
    tie_share = serializers.FloatField(allow_null=True, help_text="ties / answers on distinct lists")


class TieCurveRowSerializer(StrictSerializer):
    c_tie = serializers.FloatField(
        allow_null=True, help_text="C_t, the slack cost of the tie constraints (null: the likelihood fit)"
    )
    chosen = serializers.BooleanField(required=False, help_text="the C_t the fit chose")
    ties_predicted = serializers.FloatField(
        allow_null=True, help_text="cross-validated share of tie answers predicted as ties"
    )
    strict_accuracy = serializers.FloatField(
        allow_null=True, help_text="cross-validated accuracy on the answers with a direction"
    )


class LearnedDcgSerializer(StrictSerializer):
    """The latest learned-DCG fit of an SxS campaign (fields null while there is none)."""

    status = serializers.ChoiceField(
        choices=["waiting", "insufficient", "refused", "fitted"],
        help_text="waiting: no answer yet; insufficient: too few informative answers; refused: the fit "
        "settings are above the operator's ceiling SXS_REFIT_MAX_FITS, or the time budget "
        "SXS_REFIT_SECONDS ran out before cross-validation finished (reason says which); fitted",
    )
    reason = serializers.CharField(allow_blank=True, help_text="why there is no fit")
    needed = serializers.IntegerField(allow_null=True, help_text="informative answers still needed, at least")
    answers = serializers.IntegerField(help_text="answers the fit (or the attempt) used")
    fitted_at = serializers.DateTimeField(allow_null=True)
    k = serializers.IntegerField()
    grade_names = serializers.ListField(child=serializers.CharField())
    unjudged = serializers.CharField(help_text="the campaign's policy for ungraded documents")
    gains = _floats("per grade, worst 0, best 1")
    gains_low = _floats("95% bootstrap interval over topics, low end")
    gains_high = _floats("95% bootstrap interval over topics, high end")
    discounts = _floats("per position, position 1 = 1")
    discounts_low = _floats("95% bootstrap interval, low end")
    discounts_high = _floats("95% bootstrap interval, high end")
    sigma_ratio = serializers.FloatField(
        allow_null=True,
        help_text="sigma2/sigma1 of T(W): how far W is from the DCG form (form_test says whether the "
        "answers contradict that form)",
    )
    sigma_ratio_low = serializers.FloatField(allow_null=True)
    sigma_ratio_high = serializers.FloatField(allow_null=True)
    transformed = serializers.ListField(
        child=serializers.ListField(child=serializers.FloatField()),
        allow_null=True,
        help_text="T(W) = W - W[:, :1], positions x grades",
    )
    weights = serializers.ListField(
        child=serializers.ListField(child=serializers.FloatField()), allow_null=True, help_text="W"
    )
    c = serializers.FloatField(
        allow_null=True,
        help_text="C chosen by cross-validation: the likelihood's ridge cost, or the QP's slack cost C_s",
    )
    method = serializers.CharField(
        allow_null=True, help_text="likelihood or qp (the paper's QP); null for a fit stored before it"
    )
    method_words = serializers.CharField(allow_null=True, help_text="the method in words")
    c_tie = serializers.FloatField(allow_null=True, help_text="C_t chosen (the paper's QP only)")
    c_grid = _floats("the values of C tried (after extending the grid at an edge)")
    c_tie_grid = _floats("the values of C_t tried (the paper's QP only)")
    grid_warnings = serializers.ListField(
        child=serializers.CharField(),
        help_text="a chosen C or C_t at its grid's edge even after extending it",
    )
    grid_notes = serializers.ListField(child=serializers.CharField(), help_text="remarks on the choice of C")
    form_test = FormTestSerializer(
        allow_null=True, help_text="likelihood-ratio test of the DCG form (null for older fits)"
    )
    interval_method = serializers.CharField(allow_null=True, help_text="how the intervals were computed")
    bootstrap = serializers.IntegerField(allow_null=True, help_text="bootstrap replicates that succeeded")
    bootstrap_failed = serializers.IntegerField(allow_null=True, help_text="replicates whose fit failed")
    bootstrap_requested = serializers.IntegerField(
        allow_null=True,
        help_text="replicates asked for; fewer were made when the refit's time budget (SXS_REFIT_SECONDS) "
        "ran out, as interval_method says (null for fits stored before the budget)",
    )
    widened = serializers.ListField(
        child=serializers.CharField(),
        help_text="quantities (g1, c2, sigma2/sigma1, ...) whose interval was widened to hold the estimate",
    )
    options = serializers.JSONField(
        allow_null=True,
        help_text="the fit's choices: method, c_tie, folds, ties, monotone_discounts, much_better_margin",
    )
    coverage = serializers.JSONField(
        allow_null=True, help_text="{sentence, shortfall, ...}: how well the intervals cover, when checked"
    )
    accuracy = AccuracySerializer(allow_null=True)
    accuracy_curve = AccuracyPointSerializer(many=True, allow_null=True)
    pairs = serializers.IntegerField(allow_null=True, help_text="answers with a direction used")
    ties = serializers.IntegerField(allow_null=True, help_text="'about the same' answers used")
    dropped_identical = serializers.IntegerField(allow_null=True)
    groups = serializers.IntegerField(allow_null=True, help_text="topics with an informative answer")
    leaderboard = LeaderboardRowSerializer(many=True)
    kendall_tau = serializers.FloatField(
        allow_null=True, help_text="Kendall's tau between the learned DCG and standard DCG orders"
    )
    kendall_tau_utility = serializers.FloatField(
        allow_null=True,
        help_text="Kendall's tau between the learned utility (full T(W)) and standard DCG orders",
    )
    disagreements = DisagreementSerializer(
        many=True, help_text="system pairs whose order flips between learned and standard DCG"
    )
    utility_disagreements = UtilityDisagreementSerializer(
        many=True, help_text="system pairs whose order flips between the learned utility and standard DCG"
    )
    disagreeing_answers = DisagreeingAnswersSerializer(allow_null=True)
    diagnostics = DiagnosticsSerializer(
        allow_null=True, help_text="accuracy by |DCG difference| and by answer strength (null for older fits)"
    )
    tie_curve = TieCurveRowSerializer(
        many=True, help_text="per C_t of the fit's grid; empty when the fit has none"
    )
    ungraded = serializers.IntegerField(
        allow_null=True, help_text="listed documents without a grade (count 0 in the leaderboard)"
    )


class LearnedDcgApplyInputSerializer(StrictSerializer):
    campaign = serializers.IntegerField(
        help_text="the campaign to measure DCG with these gains and discounts"
    )


class LearnedDcgApplyOutputSerializer(StrictSerializer):
    campaign = serializers.IntegerField()
    custom_dcg = serializers.JSONField(help_text="{gains, discounts, source} now stored on that campaign")
    metric_label = serializers.CharField()
