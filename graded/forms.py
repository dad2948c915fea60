"""The graded mode's forms."""

from __future__ import annotations

from typing import Any

from django import forms

from labeling.forms import PlainFloatField
from labeling.models import Campaign
from sampling import JudgeSetting, judge_kind, judge_kind_choices, judge_settings_all


class GoldForm(forms.Form):
    """Gold questions: share in each stream, qualification, threshold."""

    share = forms.FloatField(min_value=0, max_value=50, label="Gold share of each assessor's items (%)")
    qualification = forms.IntegerField(
        min_value=0, max_value=1000, label="Qualification: gold questions first"
    )
    min_accuracy = forms.FloatField(min_value=0, max_value=100, label="Pause below this accuracy (%)")
    min_answers = forms.IntegerField(min_value=1, max_value=1000, label="…after this many gold answers")


def _setting_field(setting: JudgeSetting) -> forms.Field:
    """The add-judge form's field of a kind's setting (`JudgeKind.settings`), optional: a blank
    keeps the default, or means none where the setting says so."""
    options: dict[str, Any] = {"required": False, "help_text": setting.help}
    if setting.label:
        options["label"] = setting.label
    if setting.choices is not None:
        return forms.ChoiceField(**options, choices=setting.choices())
    if setting.type == "text":
        return forms.CharField(**options, max_length=setting.max_length)
    if setting.type == "boolean":
        return forms.BooleanField(**options)
    if setting.type == "date":
        return forms.DateField(**options)
    if setting.default is not None:
        options["initial"] = setting.default
    bounds: dict[str, Any] = {"min_value": setting.minimum, "max_value": setting.maximum}
    if setting.type == "integer":
        return forms.IntegerField(**options, **bounds)
    return PlainFloatField(**options, **bounds)


class JudgeForm(forms.Form):
    """A model judge: where its labels come from (its kind: files, an OpenAI-compatible
    endpoint, the built-in lexical judge), its name and version (shown wherever its labels are
    used), and its kind's own settings (an endpoint's: how to ask it). The API key is never
    typed here: an endpoint judge names the environment variable of the worker that holds it."""

    kind = forms.ChoiceField(
        initial="upload",
        help_text="files you upload, an LLM the worker asks, or BM25 (weak, no network)",
    )
    name = forms.CharField(max_length=200)
    model = forms.CharField(
        max_length=200,
        required=False,
        help_text="e.g. gpt-4o-mini, llama3.1:8b, DeepSeek-V3 (as the endpoint names it)",
    )
    prompt = forms.CharField(
        required=False,
        max_length=100_000,
        widget=forms.Textarea(attrs={"rows": 3}),
        help_text="endpoint: a template with {query} {title} {description} {narrative} {document} "
        "{doc_title} {docno} {qid} {top_grade} ({{ for a literal brace); blank: the UMBRELA-style "
        "prompt. Upload: the prompt's name and hash",
    )
    notes = forms.CharField(required=False, max_length=10_000, widget=forms.Textarea(attrs={"rows": 2}))
    shares_model_with = forms.CharField(
        required=False,
        max_length=500,
        help_text="systems under evaluation built on the same model, comma-separated (a circularity warning)",
    )

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.fields["kind"].choices = judge_kind_choices()  # type: ignore[attr-defined]
        # Every kind's settings, after the model (the script shows those of the chosen kind).
        settings = {name: _setting_field(setting) for name, setting in judge_settings_all().items()}
        order = ["kind", "name", "model", *settings, "prompt", "notes", "shares_model_with"]
        self.fields.update(settings)
        self.order_fields(order)

    def judge_fields(self) -> dict[str, Any]:
        """The cleaned values as `judge_create` takes them: the chosen kind's settings only
        (`JudgeKind.settings`), and blank numbers keep the defaults (a blank cost cap: none)."""
        data = dict(self.cleaned_data)
        chosen = judge_kind(data["kind"])
        every = judge_settings_all()
        return {
            name: value
            for name, value in data.items()
            if name not in every
            or (
                (setting := chosen.setting(name)) is not None and (value is not None or setting.blank_is_none)
            )
        }


class JudgePromptForm(forms.Form):
    """An endpoint judge's edit: model and prompt (a change is a new version) and the settings
    that do not change its answers."""

    model = forms.CharField(max_length=200)
    prompt = forms.CharField(max_length=100_000, widget=forms.Textarea(attrs={"rows": 12}))
    concurrency = forms.IntegerField(min_value=1, max_value=64, required=False)
    cost_cap = forms.FloatField(min_value=0, required=False)
    shares_model_with = forms.CharField(max_length=500, required=False)

    def changes(self) -> dict[str, Any]:
        """The cleaned values for `judge_update` (a blank concurrency keeps the current one; a
        blank cost cap removes the cap)."""
        return {
            name: value
            for name, value in self.cleaned_data.items()
            if value is not None or name == "cost_cap"
        }


def form_errors_text(form: forms.Form) -> str:
    """A form's errors in words, each after its field's label."""
    parts = []
    for name, errors in form.errors.items():
        label = form.fields[name].label or name.replace("_", " ").capitalize() if name in form.fields else ""
        text = " ".join(str(error) for error in errors)
        parts.append(f"{label}: {text}" if label else text)
    return "; ".join(parts)


class ComparedSystemsForm(forms.Form):
    """Which pooled systems the sampling plans for: the one evaluated, the pair compared
    (first minus second), or the leaderboard's systems."""

    first = forms.ChoiceField(label="System", required=False)
    second = forms.ChoiceField(label="minus", required=False)
    systems = forms.MultipleChoiceField(label="Systems", required=False, widget=forms.CheckboxSelectMultiple)

    def __init__(self, *args: Any, names: list[str], goal: str, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.goal = goal
        choices = [(name, name) for name in names]
        for field in ("first", "second", "systems"):
            self.fields[field].choices = choices  # type: ignore[attr-defined]

    def clean(self) -> dict[str, Any]:
        data = super().clean() or {}
        if self.goal == Campaign.Goal.DIFFERENCE:
            if not data.get("first") or not data.get("second"):
                raise forms.ValidationError("choose both systems of the pair")
            if data["first"] == data["second"]:
                raise forms.ValidationError("choose two different systems: a system minus itself is 0")
            data["chosen"] = [data["first"], data["second"]]
        elif self.goal == Campaign.Goal.ONE:
            if not data.get("first"):
                raise forms.ValidationError("choose the system to evaluate")
            data["chosen"] = [data["first"]]
        else:
            if not data.get("systems"):
                raise forms.ValidationError("choose at least one system")
            data["chosen"] = list(data["systems"])
        return data


class VerdictDefaultsForm(forms.Form):
    """The campaign's release-verdict defaults (`Campaign.verdict_rule`, `verdict_question`,
    `verdict_margin`), checked by the campaign's services as the API's are."""

    verdict_rule = forms.ChoiceField(
        label="Rule", choices=[(value, value.capitalize()) for value in Campaign.VerdictRule.values]
    )
    verdict_question = forms.ChoiceField(label="Question", choices=Campaign.VerdictQuestion.choices)
    verdict_margin = forms.FloatField(label="Margin (metric points)", min_value=0.0, required=False)

    def __init__(self, *args: Any, campaign: Campaign, **kwargs: Any) -> None:
        kwargs.setdefault(
            "initial",
            {
                "verdict_rule": campaign.verdict_rule,
                "verdict_question": campaign.verdict_question,
                "verdict_margin": campaign.verdict_margin,
            },
        )
        super().__init__(*args, **kwargs)

    def clean_verdict_margin(self) -> float:
        return float(self.cleaned_data.get("verdict_margin") or 0.0)


class ArrivalForm(forms.Form):
    """A run that arrives with a human top-up (`sampling.arrival_add`): either the top-up in the
    campaign's budget unit or the interval width it should reach."""

    file = forms.FileField(label="Run")
    budget = PlainFloatField(label="Top-up", required=False, min_value=0.0)
    target_width = PlainFloatField(label="or the 95 % width to reach", required=False, min_value=0.0)
    reference = forms.ChoiceField(label="Compared with", required=False)
    rule = forms.ChoiceField(
        label="Verdict rule",
        choices=[(value, value.capitalize()) for value in Campaign.VerdictRule.values],
        required=False,
    )
    question = forms.ChoiceField(label="Question", choices=Campaign.VerdictQuestion.choices, required=False)
    margin = PlainFloatField(label="Margin (metric points)", required=False, min_value=0.0)

    def __init__(self, *args: Any, names: list[str], campaign: Campaign | None = None, **kwargs: Any) -> None:
        if campaign is not None:
            kwargs.setdefault(
                "initial",
                {
                    "rule": campaign.verdict_rule,
                    "question": campaign.verdict_question,
                    "margin": campaign.verdict_margin,
                },
            )
        super().__init__(*args, **kwargs)
        choices = [("", "the best certified run"), *((name, name) for name in names)]
        self.fields["reference"].choices = choices  # type: ignore[attr-defined]
