"""Forms of the coordinator pages and the keyboard settings: each validates input for exactly one
service call."""

from __future__ import annotations

import re
from typing import Any

from django import forms

from estimation.metrics.spec import Metric
from labeling.budgets import plain_decimal
from labeling.fields import GRADE_DESCRIPTION_MAX_CHARS, GUIDELINES_MAX_CHARS
from labeling.models import Campaign
from labeling.modes import field_choices, mode_choices, mode_named, mode_of, shortcut_actions
from labeling.shortcuts import Action, ShortcutsInvalid, grade_key_normalize, key_display

# A grade line is "name" or "key: name" (a single character key before a colon).
_GRADE_LINE = re.compile(r"^\s*(?:(?P<key>\S)\s*:\s*)?(?P<name>\S.*?)\s*$")
_RESERVED_KEYS = {"p", "u", "?", " "}


def parse_grade_lines(text: str) -> list[dict[str, str]]:
    """Grades from one line each, lowest first; keys default to the digits 0, 1, 2, ..."""
    grades: list[dict[str, str]] = []
    keys: list[str] = []  # as the judge pages match them (labeling.shortcuts)
    for number, line in enumerate(text.splitlines(), start=1):
        if not line.strip():
            continue
        match = _GRADE_LINE.match(line)
        if match is None:
            raise forms.ValidationError(f"line {number}: cannot read a grade from {line!r}")
        if len(grades) == 10:
            raise forms.ValidationError("at most ten grades: keys must be single keystrokes")
        key = match.group("key") or str(len(grades))
        try:
            pressed = grade_key_normalize(key)
        except ValueError as error:
            raise forms.ValidationError(f"line {number}: key {key!r}: {error}") from None
        if pressed in _RESERVED_KEYS:
            raise forms.ValidationError(f"line {number}: key {key!r} is reserved (P pause, U undo, ? help)")
        grades.append({"name": match.group("name"), "key": key})
        keys.append(pressed)
    if len(grades) < 2:
        raise forms.ValidationError("give at least two grades, one per line, lowest first")
    duplicates = sorted({key for key in keys if keys.count(key) > 1})
    if duplicates:
        raise forms.ValidationError(f"each grade needs its own key; repeated: {', '.join(duplicates)}")
    return grades


class PlainFloatField(forms.FloatField):
    """A number typed as plain ASCII decimal (``float`` alone takes ``"١٢"`` or ``"1_000"``)."""

    def to_python(self, value: Any) -> float | None:  # type: ignore[override]  # django-stubs types FloatField by IntegerField
        if isinstance(value, str) and value.strip():
            try:
                plain_decimal(value.strip())
            except ValueError as error:
                raise forms.ValidationError(str(error), code="invalid") from None
        return super().to_python(value)


class CampaignCreateForm(forms.Form):
    """What to measure, how to judge and how much to spend."""

    name = forms.CharField(max_length=200)
    metric = forms.CharField(
        max_length=32, initial="DCG@10", help_text="DCG@K, nDCG@K or ERR@K, e.g. DCG@10 or ERR@20."
    )
    goal = forms.ChoiceField(choices=Campaign.Goal.choices, initial=Campaign.Goal.ONE)
    goal_k = forms.IntegerField(
        label="k (leaderboard)",
        min_value=1,
        required=False,
        help_text="Only for a leaderboard: how many top systems must be ordered.",
    )
    # Choices from the modes that read it (`JudgingMode.field_choices`: the sampling strategies).
    strategy = forms.ChoiceField(
        initial="passive",
        help_text="What to judge next. Not sure? Create the campaign, upload the runs and press "
        "“Plan the budget” on its page: it replays campaigns on your runs and recommends one. "
        "Passive and active: Sawade et al. 2013; single documents: Schnabel et al. 2016.",
    )
    grades = forms.CharField(
        widget=forms.Textarea(attrs={"rows": 4}),
        initial="Not relevant\nSomewhat relevant\nRelevant\nHighly relevant",
        help_text="One grade per line, lowest first. Keys are 0, 1, 2, … unless a line starts with a "
        "key and a colon, e.g. “n: Not relevant”.",
    )
    budget = PlainFloatField(min_value=0.0, initial=1000)
    budget_unit = forms.ChoiceField(
        label="Budget unit", choices=Campaign.BudgetUnit.choices, initial=Campaign.BudgetUnit.JUDGMENTS
    )
    overlap = forms.IntegerField(
        min_value=1, max_value=20, initial=1, help_text="Judgments per item (2 or more to measure agreement)."
    )
    verdict_rule = forms.ChoiceField(
        label="Release verdicts",
        # Short names in the menu; what each does is the help text's (and docs/coordinators.md).
        choices=[(value, value.capitalize()) for value in Campaign.VerdictRule.values],
        initial=Campaign.VerdictRule.SEQUENTIAL,
        required=False,
        help_text="How a run that arrives (or, comparing two systems, the pair) gets better, worse or "
        "not settled: sequential reads after every label and stops early on a clear difference; "
        "anytime too, with no horizon (the budget may grow); fixed reads once, at the end. It cannot "
        "change once labels count.",
    )
    verdict_question = forms.ChoiceField(
        label="Question",
        choices=Campaign.VerdictQuestion.choices,
        initial=Campaign.VerdictQuestion.DIFFERENCE,
        required=False,
        help_text="Better or worse: is there a difference? Not worse by more than the margin: ship a "
        "cheaper ranker unless it loses more than the margin. Better by more than the margin: adopt "
        "a new ranker only if it gains at least that much.",
    )
    verdict_margin = forms.FloatField(
        label="Margin (metric points)",
        min_value=0.0,
        required=False,
        help_text="For “not worse” or “better by”: e.g. 0.5 DCG@10 points. Empty = 0.",
    )

    judging_mode = forms.ChoiceField(
        label="Judging",
        choices=mode_choices,
        initial="graded",
        required=False,
        help_text="Graded items with sampled estimates; pairs of documents (pairwise preferences or "
        "a top-k per topic); two result lists side by side; or training data for a ranker.",
    )

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        # The modes' own settings (e.g. top-k's k): form field name -> (setting name, field).
        self.setting_fields: dict[str, str] = {}
        for name, _ in mode_choices():
            for field, (setting, form_field) in mode_named(name).setting_form_fields().items():
                self.fields[field] = form_field
                self.setting_fields[field] = setting
        # Which modes each mode-specific field means something to ("graded sxs"): the page shows
        # a field only while one of them is chosen (all of them without JavaScript).
        modes = [mode_named(name) for name, _ in mode_choices()]
        self.field_modes = {
            field: " ".join(mode.name for mode in modes if field in mode.form_fields)
            for field in self.fields
            if any(field in mode.form_fields for mode in modes)
        }
        for field, choices in field_choices().items():
            self.fields[field].choices = choices  # type: ignore[attr-defined]

    def clean_metric(self) -> str:
        text = self.cleaned_data["metric"].strip()
        try:
            Metric.parse(text)
        except ValueError as error:
            raise forms.ValidationError(str(error)) from None
        return text

    def clean_grades(self) -> list[dict[str, str]]:
        return parse_grade_lines(self.cleaned_data["grades"])

    def clean(self) -> dict[str, Any]:
        data = super().clean() or {}
        if data.get("goal") == Campaign.Goal.LEADERBOARD and not data.get("goal_k"):
            self.add_error("goal_k", "a leaderboard needs k")
        data["judging_mode"] = data.get("judging_mode") or "graded"
        # Empty verdict fields keep the model's defaults (modes without verdicts hide them).
        for field in ("verdict_rule", "verdict_question", "verdict_margin"):
            if data.get(field) in (None, ""):
                data.pop(field, None)
        # The modes' own settings (labeling.modes) are stored by the mode, not on the campaign.
        given = {field: data.pop(field) for field in self.setting_fields if data.get(field) not in (None, "")}
        data["mode_settings"] = {}
        if given:
            try:
                mode = mode_named(data["judging_mode"])
            except ValueError as error:
                self.add_error("judging_mode", str(error))
                return data
            for field, value in given.items():
                if field in mode.setting_form_fields():
                    data["mode_settings"][self.setting_fields[field]] = value
                else:
                    setting = self.setting_fields[field]
                    self.add_error(field, f"{mode.label} take no {setting}; leave it empty.")
        for field in self.setting_fields:
            data.pop(field, None)
        return data

    def mode_setting_fields(self) -> list[tuple[forms.BoundField, str]]:
        """The modes' own setting fields with the modes they show for, for the template."""
        return [(self[field], self.field_modes.get(field, "")) for field in self.setting_fields]


class GuidelinesForm(forms.Form):
    """The campaign's guidelines (Markdown) and one description per grade."""

    guidelines = forms.CharField(
        required=False,
        max_length=GUIDELINES_MAX_CHARS,
        strip=False,
        widget=forms.Textarea(attrs={"rows": 8, "placeholder": "# What counts as relevant\n..."}),
        help_text="Markdown: headings, lists, **bold**, links, tables. Raw HTML is shown as text.",
    )

    def __init__(self, *args: Any, campaign: Campaign, **kwargs: Any) -> None:
        initial = {"guidelines": campaign.guidelines}
        for value, grade in enumerate(campaign.grades):
            initial[f"grade_{value}"] = grade.get("description", "")
        kwargs["initial"] = initial
        super().__init__(*args, **kwargs)
        # Modes whose answers are not grades (pairwise, top-k) describe no grade.
        graded = "grades" in mode_of(campaign).form_fields
        for value, grade in enumerate(campaign.grades if graded else []):
            self.fields[f"grade_{value}"] = forms.CharField(
                required=False,
                max_length=GRADE_DESCRIPTION_MAX_CHARS,
                label=f"{grade['name']} ({grade['key']})",
            )
        self.grade_count = len(campaign.grades) if graded else 0

    def grade_fields(self) -> list[forms.BoundField]:
        return [self[f"grade_{value}"] for value in range(self.grade_count)]

    def changes(self) -> dict[str, Any]:
        """The campaign_update arguments."""
        data = self.cleaned_data
        if not self.grade_count:
            return {"guidelines": data["guidelines"]}
        return {
            "guidelines": data["guidelines"],
            "grade_descriptions": [data[f"grade_{value}"] for value in range(self.grade_count)],
        }


class BudgetForm(forms.Form):
    """A new total budget, in the campaign's unit."""

    budget = PlainFloatField(min_value=0.0, label="Total budget")


class AssignForm(forms.Form):
    """Usernames to add as assessors, separated by commas, spaces or new lines."""

    usernames = forms.CharField(
        label="Add assessors",
        max_length=10_000,
        widget=forms.TextInput(attrs={"placeholder": "alice, bob"}),
        help_text="Usernames separated by commas or spaces.",
    )

    def clean_usernames(self) -> list[str]:
        names = [name for name in re.split(r"[\s,;]+", self.cleaned_data["usernames"]) if name]
        if not names:
            raise forms.ValidationError("give at least one username")
        return list(dict.fromkeys(names))


class UploadForm(forms.Form):
    """One import: files (several for runs) and an optional format name."""

    format = forms.CharField(max_length=16, required=False)

    def __init__(self, *args: Any, multiple: bool = False, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.multiple = multiple

    def clean(self) -> dict[str, Any]:
        data = super().clean() or {}
        files = self.files.getlist("file") if self.files else []
        if not files:
            raise forms.ValidationError("choose a file to upload")
        if len(files) > 1 and not self.multiple:
            raise forms.ValidationError("upload one file at a time here")
        data["files"] = files
        data["format"] = data.get("format") or None
        return data


class ShortcutsForm(forms.Form):
    """An assessor's keyboard settings: the master switch and one key per action
    (labeling.modes.shortcut_actions); a blank key is the default (for a grade: the campaign's own)."""

    shortcuts_enabled = forms.BooleanField(
        required=False,
        label="Use single-key shortcuts",
        help_text="Off: no letter, digit or arrow key does anything on the judge pages; "
        "the buttons, Tab, Enter, Space on a focused button, Esc and Ctrl+Z still work.",
    )

    def __init__(self, *args: Any, enabled: bool, keys: dict[str, str], **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.fields["shortcuts_enabled"].initial = enabled
        self.fields["shortcuts_enabled"].widget.attrs["aria-describedby"] = "id_shortcuts_enabled_helptext"
        for action in shortcut_actions():
            grade = action.name.startswith("grade_")
            default = "the campaign's key" if grade else key_display(action.default)
            self.fields[f"key_{action.name}"] = forms.CharField(
                required=False,
                max_length=16,
                strip=False,
                label=action.label,
                initial=keys.get(action.name, "" if grade else action.default),
                help_text=f"Default: {default}"
                + (f" ({action.default} unless the campaign sets another)" if grade else ""),
                widget=forms.TextInput(
                    attrs={
                        "autocomplete": "off",
                        "size": 10,
                        "aria-describedby": f"id_key_{action.name}_helptext",
                        **({"placeholder": "campaign's key"} if grade else {}),
                    }
                ),
            )

    def groups(self) -> list[tuple[str, list[tuple[Action, forms.BoundField]]]]:
        """The key fields by section of the page, in the registry's order."""
        sections: dict[str, list[tuple[Action, forms.BoundField]]] = {}
        for action in shortcut_actions():
            sections.setdefault(action.group, []).append((action, self[f"key_{action.name}"]))
        return list(sections.items())

    def keys(self) -> dict[str, str]:
        """The typed keys by action name ("" for the default)."""
        return {
            action.name: self.cleaned_data.get(f"key_{action.name}") or "" for action in shortcut_actions()
        }

    def refused(self, error: ShortcutsInvalid) -> None:
        """Put the service's refusals next to their fields, joined to them for screen readers."""
        for name, message in error.errors.items():
            field = f"key_{name}" if f"key_{name}" in self.fields else None
            self.add_error(field, message)
            if field is not None:
                attrs = self.fields[field].widget.attrs
                attrs["aria-describedby"] = f"id_{field}_error {attrs['aria-describedby']}"
                attrs["aria-invalid"] = "true"
