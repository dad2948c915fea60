"""The graded mode's forms."""

from __future__ import annotations

from typing import Any

from django import forms

from labeling.forms import PlainFloatField
from labeling.models import Campaign
from outbound import key_variables
from sampling import judge_kind, judge_kind_choices, judge_kind_own_fields


class GoldForm(forms.Form):
    """Gold questions: share in each stream, qualification, threshold."""

    share = forms.FloatField(min_value=0, max_value=50, label="Gold share of each assessor's items (%)")
    qualification = forms.IntegerField(
        min_value=0, max_value=1000, label="Qualification: gold questions first"
    )
    min_accuracy = forms.FloatField(min_value=0, max_value=100, label="Pause below this accuracy (%)")
    min_answers = forms.IntegerField(min_value=1, max_value=1000, label="…after this many gold answers")


KEPT_BLANK = ("cost_cap", "version_date")
"""Judge fields whose blank means something (no cap, no date) rather than "keep the default"."""


class JudgeForm(forms.Form):
    """A model judge: where its labels come from (files, an OpenAI-compatible endpoint, the
    built-in lexical judge), its name and version (shown wherever its labels are used) and, for
    an endpoint, how to ask it. The API key is never typed here: the judge names the
    environment variable of the worker that holds it."""

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
    base_url = forms.CharField(
        max_length=500,
        required=False,
        label="Endpoint base URL",
        help_text="endpoint: e.g. http://localhost:11434/v1 (Ollama), http://localhost:8000/v1 (vLLM), https://api.openai.com/v1",
    )
    api_key_variable = forms.ChoiceField(
        required=False,
        label="API key from",
        help_text="endpoint: the worker's environment variable holding the key (no key: e.g. a local server)",
    )
    prompt = forms.CharField(
        required=False,
        max_length=100_000,
        widget=forms.Textarea(attrs={"rows": 3}),
        help_text="endpoint: a template with {query} {title} {description} {narrative} {document} "
        "{doc_title} {docno} {qid} {top_grade} ({{ for a literal brace); blank: the UMBRELA-style "
        "prompt. Upload: the prompt's name and hash",
    )
    with_probabilities = forms.BooleanField(
        required=False,
        label="Answer with probabilities",
        help_text="endpoint: ask for log-probabilities (labels carry probs)",
    )
    concurrency = forms.IntegerField(
        min_value=1, max_value=64, initial=4, required=False, help_text="requests at once"
    )
    requests_per_minute = forms.FloatField(min_value=0, initial=0, required=False, help_text="0: no limit")
    price_in_per_1k = forms.FloatField(
        min_value=0, initial=0, required=False, label="Price per 1,000 prompt tokens"
    )
    price_out_per_1k = forms.FloatField(
        min_value=0, initial=0, required=False, label="Price per 1,000 answer tokens"
    )
    cost_cap = forms.FloatField(
        min_value=0, required=False, help_text="runs stop once the judge has cost this much"
    )
    version_date = forms.DateField(required=False, help_text="upload: when the labels were made (YYYY-MM-DD)")
    notes = forms.CharField(required=False, max_length=10_000, widget=forms.Textarea(attrs={"rows": 2}))
    shares_model_with = forms.CharField(
        required=False,
        max_length=500,
        help_text="systems under evaluation built on the same model, comma-separated (a circularity warning)",
    )

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        variables = [("", "no key")] + [(name, name) for name in key_variables()]
        self.fields["api_key_variable"].choices = variables  # type: ignore[attr-defined]
        self.fields["kind"].choices = judge_kind_choices()  # type: ignore[attr-defined]

    def judge_fields(self) -> dict[str, Any]:
        """The cleaned values as `judge_create` takes them: a kind's own fields only for that kind
        (`JudgeKind.own_fields`), and blank numbers keep the defaults (a blank cost cap: none)."""
        data = dict(self.cleaned_data)
        chosen = set(judge_kind(data["kind"]).own_fields)
        others = {name for fields in judge_kind_own_fields().values() for name in fields} - chosen
        return {
            name: value
            for name, value in data.items()
            if name not in others and (value is not None or name in KEPT_BLANK)
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
