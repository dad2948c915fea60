"""One store for release verdicts (`Verdict`): each arrival's and each two-system campaign's
verdict moves from their own columns into a row with the plan it was read by; the campaign gains
the verdict's question and margin, and the sequential rule (the new default)."""

import django.db.models.deletion
from django.db import migrations, models


def verdicts_forward(apps, schema_editor):
    """A row per arrival (decided or not) and per decided two-system campaign, with the plan the
    old columns imply (the arrival's rule, or the campaign's; horizon: its planned draws)."""
    Arrival = apps.get_model("labeling", "Arrival")
    Campaign = apps.get_model("labeling", "Campaign")
    Verdict = apps.get_model("labeling", "Verdict")
    for arrival in Arrival.objects.select_related("campaign", "system", "reference"):
        Verdict.objects.create(
            campaign=arrival.campaign,
            arrival=arrival,
            first=arrival.system.name,
            second=arrival.reference.name if arrival.reference else "",
            rule=arrival.rule or arrival.campaign.verdict_rule,
            horizon=max(arrival.topup_draws, 1),
            budget=arrival.topup_budget,
            plan_fixed_at=arrival.created_at,
            outcome=arrival.verdict,
            decided_at=arrival.decided_at,
            low=arrival.decided_low,
            high=arrival.decided_high,
            returned=arrival.topup_returned,
        )
    for campaign in Campaign.objects.exclude(verdict=""):
        names = list(campaign.focus_systems or [])[:2] + ["", ""]
        Verdict.objects.create(
            campaign=campaign,
            first=names[0],
            second=names[1],
            rule=campaign.verdict_rule,
            horizon=max(campaign.budget, 1.0),
            budget=campaign.budget,
            plan_fixed_at=campaign.verdict_decided_at,
            outcome=campaign.verdict,
            decided_at=campaign.verdict_decided_at,
            low=campaign.verdict_low,
            high=campaign.verdict_high,
            returned=campaign.verdict_returned,
        )


def verdicts_backward(apps, schema_editor):
    """The rows back into the columns (outcomes the old columns cannot name are dropped)."""
    Arrival = apps.get_model("labeling", "Arrival")
    Campaign = apps.get_model("labeling", "Campaign")
    Verdict = apps.get_model("labeling", "Verdict")
    old = {"better", "worse", "not_settled"}
    for verdict in Verdict.objects.all():
        outcome = verdict.outcome if verdict.outcome in old else ""
        rule = verdict.rule if verdict.rule in ("fixed", "anytime") else "anytime"
        if verdict.arrival_id is not None:
            Arrival.objects.filter(pk=verdict.arrival_id).update(
                verdict=outcome,
                rule=rule if outcome else "",
                decided_at=verdict.decided_at if outcome else None,
                decided_low=verdict.low,
                decided_high=verdict.high,
                topup_returned=verdict.returned,
            )
        elif outcome:
            Campaign.objects.filter(pk=verdict.campaign_id).update(
                verdict=outcome,
                verdict_decided_at=verdict.decided_at,
                verdict_low=verdict.low,
                verdict_high=verdict.high,
                verdict_returned=verdict.returned,
            )
    Campaign.objects.filter(verdict_rule="sequential").update(verdict_rule="anytime")


class Migration(migrations.Migration):
    dependencies = [
        ("labeling", "0032_campaign_verdict"),
    ]

    operations = [
        migrations.AddField(
            model_name="arrival",
            name="reference_given",
            field=models.BooleanField(
                default=True,
                help_text="named by the submission (else the best certified pooled run was taken)",
            ),
        ),
        migrations.AddField(
            model_name="campaign",
            name="verdict_margin",
            field=models.FloatField(
                default=0.0,
                help_text="the margin of a non-inferiority or superiority question, in metric units",
            ),
        ),
        migrations.AddField(
            model_name="campaign",
            name="verdict_question",
            field=models.CharField(
                choices=[
                    ("difference", "Better or worse"),
                    ("non_inferiority", "Not worse by more than the margin"),
                    ("superiority", "Better by more than the margin"),
                ],
                default="difference",
                help_text="what the verdict answers about the difference (first run minus second)",
                max_length=16,
            ),
        ),
        migrations.AlterField(
            model_name="campaign",
            name="verdict_rule",
            field=models.CharField(
                choices=[
                    ("sequential", "Sequential: read after every label, spread over the planned top-up"),
                    ("anytime", "Anytime: read after every label, no horizon (the budget may grow)"),
                    ("fixed", "Fixed: read once, when the top-up is spent"),
                ],
                default="sequential",
                help_text="how a run that arrives, or a two-system campaign, gets its verdict",
                max_length=12,
            ),
        ),
        migrations.CreateModel(
            name="Verdict",
            fields=[
                (
                    "id",
                    models.BigAutoField(
                        auto_created=True, primary_key=True, serialize=False, verbose_name="ID"
                    ),
                ),
                (
                    "first",
                    models.CharField(
                        help_text="the run whose difference is read (minus the second)", max_length=200
                    ),
                ),
                ("second", models.CharField(help_text="what it is compared with", max_length=200)),
                (
                    "rule",
                    models.CharField(
                        choices=[
                            (
                                "sequential",
                                "Sequential: read after every label, spread over the planned top-up",
                            ),
                            ("anytime", "Anytime: read after every label, no horizon (the budget may grow)"),
                            ("fixed", "Fixed: read once, when the top-up is spent"),
                        ],
                        max_length=12,
                    ),
                ),
                (
                    "question",
                    models.CharField(
                        choices=[
                            ("difference", "Better or worse"),
                            ("non_inferiority", "Not worse by more than the margin"),
                            ("superiority", "Better by more than the margin"),
                        ],
                        default="difference",
                        max_length=16,
                    ),
                ),
                ("margin", models.FloatField(default=0.0, help_text="metric units")),
                (
                    "horizon",
                    models.FloatField(
                        help_text="the planned top-up, in labels: the sequential rule spends alpha over it"
                    ),
                ),
                (
                    "budget",
                    models.FloatField(
                        default=0.0,
                        help_text="the top-up (or budget) the plan was made for, in the budget unit",
                    ),
                ),
                ("alpha", models.FloatField(default=0.05)),
                (
                    "plan_fixed_at",
                    models.DateTimeField(
                        blank=True,
                        help_text="when a label first counted: the plan cannot change after",
                        null=True,
                    ),
                ),
                (
                    "outcome",
                    models.CharField(
                        blank=True,
                        choices=[
                            ("better", "Better"),
                            ("worse", "Worse"),
                            ("not_worse", "Not worse"),
                            ("not_better", "Not better"),
                            ("not_settled", "Not settled"),
                            ("unchanged", "Unchanged"),
                        ],
                        default="",
                        help_text="empty until decided",
                        max_length=12,
                    ),
                ),
                (
                    "decided_at",
                    models.DateTimeField(blank=True, help_text="when the reading was stored", null=True),
                ),
                (
                    "decided_draws",
                    models.PositiveIntegerField(
                        blank=True, help_text="top-up draws at the look read", null=True
                    ),
                ),
                (
                    "decided_labels",
                    models.PositiveIntegerField(
                        blank=True, help_text="top-up labels (documents judged) at the look read", null=True
                    ),
                ),
                ("value", models.FloatField(blank=True, help_text="the difference at that look", null=True)),
                (
                    "low",
                    models.FloatField(blank=True, help_text="the interval the rule read there", null=True),
                ),
                ("high", models.FloatField(blank=True, null=True)),
                (
                    "reason",
                    models.CharField(
                        blank=True, default="", help_text="why it is not settled", max_length=400
                    ),
                ),
                (
                    "returned",
                    models.FloatField(
                        default=0.0,
                        help_text="budget taken off when the verdict came before the top-up was spent",
                    ),
                ),
                (
                    "arrival",
                    models.OneToOneField(
                        blank=True,
                        null=True,
                        on_delete=django.db.models.deletion.CASCADE,
                        related_name="verdict_record",
                        to="labeling.arrival",
                    ),
                ),
                (
                    "campaign",
                    models.ForeignKey(
                        on_delete=django.db.models.deletion.CASCADE,
                        related_name="verdicts",
                        to="labeling.campaign",
                    ),
                ),
            ],
            options={
                "ordering": ("id",),
                "constraints": [
                    models.UniqueConstraint(
                        condition=models.Q(("arrival__isnull", True)),
                        fields=("campaign",),
                        name="one_campaign_verdict",
                    )
                ],
            },
        ),
        migrations.RunPython(verdicts_forward, verdicts_backward),
        migrations.RemoveField(
            model_name="arrival",
            name="decided_at",
        ),
        migrations.RemoveField(
            model_name="arrival",
            name="decided_high",
        ),
        migrations.RemoveField(
            model_name="arrival",
            name="decided_low",
        ),
        migrations.RemoveField(
            model_name="arrival",
            name="rule",
        ),
        migrations.RemoveField(
            model_name="arrival",
            name="topup_returned",
        ),
        migrations.RemoveField(
            model_name="arrival",
            name="verdict",
        ),
        migrations.RemoveField(
            model_name="campaign",
            name="verdict",
        ),
        migrations.RemoveField(
            model_name="campaign",
            name="verdict_decided_at",
        ),
        migrations.RemoveField(
            model_name="campaign",
            name="verdict_high",
        ),
        migrations.RemoveField(
            model_name="campaign",
            name="verdict_low",
        ),
        migrations.RemoveField(
            model_name="campaign",
            name="verdict_returned",
        ),
    ]
