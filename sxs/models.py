"""Side-by-side (SxS) judging: a campaign's SxS settings, the (topic, system pair) tasks shown
to assessors with two top-K lists, their answers, skips, and the stored learned-DCG fits."""

from __future__ import annotations

from django.conf import settings
from django.core.validators import MaxValueValidator, MinValueValidator
from django.db import models

from labeling.models import Campaign, System, Topic
from sxs.validators import validate_grid, validate_optional_grid

DEFAULT_C_GRID = "0.1,1,10,100"
MIN_FOLDS, MAX_FOLDS = 2, 20
MAX_MUCH_BETTER_MARGIN = 10.0


class SxsSettings(models.Model):
    """How a campaign judges side by side (the overlap is the campaign's own `overlap`)."""

    class Unjudged(models.TextChoices):
        JUDGE = "judge", "Ask for a grade first (graded tasks mixed in)"
        ZERO = "zero", "Count as not relevant (grade 0)"

    class Selection(models.TextChoices):
        RANDOM = "random", "At random"
        MARGIN = "margin", "Closest to the learned metric's margin (SimpleMargin)"

    class FitMethod(models.TextChoices):
        LIKELIHOOD = "likelihood", "Likelihood of the five answers (ordered probit, recommended)"
        QP = "qp", "The paper's QP (DCGLearn, Zhou et al. 2014)"

    class TieCost(models.TextChoices):
        SEPARATE = "separate", "Chosen on its own, over the values of C"
        SAME = "same", "The same as C"
        CUSTOM = "custom", "Chosen on its own, over the values below"

    campaign = models.OneToOneField(Campaign, on_delete=models.CASCADE, related_name="sxs_settings")
    k = models.PositiveSmallIntegerField(default=10, help_text="results shown per list (1 to 20)")
    unjudged = models.CharField(
        max_length=8,
        choices=Unjudged.choices,
        default=Unjudged.JUDGE,
        help_text="documents of a list without a grade (from qrels or earlier judgments)",
    )
    selection = models.CharField(max_length=8, choices=Selection.choices, default=Selection.RANDOM)
    random_start = models.PositiveIntegerField(
        default=30, help_text="margin selection: answers chosen at random before it starts"
    )
    prepared_at = models.DateTimeField(null=True, blank=True, help_text="when the tasks were made")
    # How learned DCG is fitted (`estimation.learned_dcg.fit.learn_dcg`). Unlike the settings
    # above, these may change after answers came in: the next recompute refits with them.
    fit_method = models.CharField(
        max_length=12,
        choices=FitMethod.choices,
        default=FitMethod.LIKELIHOOD,
        help_text="How gains and discounts are learned from the answers. The likelihood reads all "
        "five answers, 'much better' as a stronger preference than 'better'; the paper's QP is the "
        "method of the original article, for comparison with it.",
    )
    c_grid = models.CharField(
        "values of C",
        max_length=200,
        default=DEFAULT_C_GRID,
        validators=[validate_grid],
        help_text="Numbers above 0, separated by commas. C sets how closely the fit follows the "
        "answers (larger: more closely; smaller: smoother gains and discounts); cross-validation "
        "over topics picks the best of these values. When the pick is the smallest or largest "
        "value even after the list is widened once, the dashboard warns: widen the list.",
    )
    c_tie = models.CharField(
        "cost of 'about the same' answers (C_t)",
        max_length=8,
        choices=TieCost.choices,
        default=TieCost.SEPARATE,
        help_text="The paper's QP only: how much it costs the fit to tell apart two lists an "
        "assessor called about the same.",
    )
    c_tie_grid = models.CharField(
        "values of C_t",
        max_length=200,
        blank=True,
        default="",
        validators=[validate_optional_grid],
        help_text="The paper's QP only, with 'chosen on its own, over the values below': numbers "
        "above 0, separated by commas.",
    )
    folds = models.PositiveSmallIntegerField(
        "cross-validation folds",
        default=5,
        validators=[MinValueValidator(MIN_FOLDS), MaxValueValidator(MAX_FOLDS)],
        help_text=f"The topics are split into this many groups ({MIN_FOLDS} to {MAX_FOLDS}; at most "
        "one per topic); each is held out in turn to pick C and to measure how well the metrics "
        "predict answers on topics the fit did not see.",
    )
    ties = models.BooleanField(
        "learn from 'about the same' answers",
        default=True,
        help_text="They say the two lists are worth about as much. Off: only answers that prefer "
        "one list are used.",
    )
    monotone_discounts = models.BooleanField(
        "discounts never grow down the list",
        default=False,
        help_text="Require each position to count no more than the one above it (not in the paper).",
    )
    much_better_margin = models.FloatField(
        "'much better' margin",
        default=1.0,
        validators=[MinValueValidator(1.0), MaxValueValidator(MAX_MUCH_BETTER_MARGIN)],
        help_text="The paper's QP only: the margin by which the preferred list must win a 'much "
        "better' answer, where 'better' asks 1 (1, as in the paper: both alike; at most 10). The "
        "likelihood reads the five answers directly.",
    )

    class Meta:
        verbose_name_plural = "side-by-side settings"

    def __str__(self) -> str:
        return f"side-by-side settings of campaign {self.campaign_id}"


class SxsTask(models.Model):
    """One (topic, system pair) comparison slot (overlap slots per `unit`), leased to one assessor.

    `documents_a` / `documents_b` are the document ids of the two systems' top-K lists, fixed
    when the task is made, so what was shown is what is learned from. `a_on_left` is the side
    drawn for this task from the campaign's seed: system A is shown left when true.
    """

    campaign = models.ForeignKey(Campaign, on_delete=models.CASCADE, related_name="sxs_tasks")
    topic = models.ForeignKey(Topic, on_delete=models.CASCADE, related_name="+")
    system_a = models.ForeignKey(System, on_delete=models.CASCADE, related_name="+")
    system_b = models.ForeignKey(System, on_delete=models.CASCADE, related_name="+")
    unit = models.PositiveIntegerField(help_text="the (topic, pair) number; its overlap slots share it")
    slot = models.PositiveSmallIntegerField(default=0)
    documents_a = models.JSONField(help_text="document ids of system A's top K, best first")
    documents_b = models.JSONField(help_text="document ids of system B's top K, best first")
    a_on_left = models.BooleanField()
    assessor = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="sxs_tasks"
    )
    leased_at = models.DateTimeField(null=True, blank=True)
    lease_expires_at = models.DateTimeField(null=True, blank=True)
    answered_at = models.DateTimeField(null=True, blank=True)
    # How the task was chosen when it was last leased: "random" (propensity 1 / open tasks) or
    # "margin" (the SimpleMargin rule; `margin` is |w^T d| under the fit it used).
    selection_rule = models.CharField(max_length=8, blank=True)
    propensity = models.FloatField(null=True, blank=True)
    margin = models.FloatField(null=True, blank=True)

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["campaign", "unit", "slot"], name="sxs_task_unit_slot")
        ]
        indexes = [models.Index(fields=["campaign", "answered_at"], name="sxs_task_open")]

    def __str__(self) -> str:
        return f"side-by-side task {self.pk} (unit {self.unit}, slot {self.slot})"


class SxsAnswer(models.Model):
    """An assessor's answer to a task, as displayed (`shown`: -2 left much better .. 2 right much
    better) with the sides it was shown on; `preference` is the same answer about the systems:
    negative = system A better (the core's PREFS.tsv convention)."""

    campaign = models.ForeignKey(Campaign, on_delete=models.CASCADE, related_name="sxs_answers")
    task = models.OneToOneField(
        SxsTask, null=True, blank=True, on_delete=models.SET_NULL, related_name="answer"
    )
    topic = models.ForeignKey(Topic, on_delete=models.CASCADE, related_name="+")
    system_a = models.ForeignKey(System, on_delete=models.CASCADE, related_name="+")
    system_b = models.ForeignKey(System, on_delete=models.CASCADE, related_name="+")
    a_on_left = models.BooleanField()
    assessor = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, on_delete=models.SET_NULL, related_name="sxs_answers"
    )
    shown = models.SmallIntegerField(help_text="as displayed: -2 left much better .. 2 right much better")
    preference = models.SmallIntegerField(help_text="about the systems: -2 A much better .. 2 B much better")
    seconds = models.FloatField(null=True, blank=True, help_text="time spent, pauses excluded")
    comment = models.TextField(blank=True)
    selection_rule = models.CharField(max_length=8, blank=True)
    propensity = models.FloatField(null=True, blank=True)
    margin = models.FloatField(null=True, blank=True)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        indexes = [
            models.Index(fields=["campaign", "assessor", "created_at"], name="sxs_answer_assessor_time")
        ]
        ordering = ["campaign", "created_at", "id"]

    def __str__(self) -> str:
        return f"side-by-side answer {self.pk}: {self.shown:+d} as shown"


class SxsFit(models.Model):
    """One learned-DCG fit of the campaign's answers: `result` is the core's `LearnedDCG.to_json()`
    (weights, transformed, gains, discounts, sigma_ratio, c, intervals, accuracy, ...)."""

    campaign = models.ForeignKey(Campaign, on_delete=models.CASCADE, related_name="sxs_fits")
    created_at = models.DateTimeField(auto_now_add=True)
    answers = models.PositiveIntegerField(help_text="SxS answers the fit learned from")
    result = models.JSONField()

    class Meta:
        ordering = ["campaign", "-created_at", "-id"]
        get_latest_by = "created_at"

    def __str__(self) -> str:
        return f"learned DCG of campaign {self.campaign_id} at {self.answers} answers"
