"""The graded mode's forms."""

from __future__ import annotations

from django import forms


class GoldForm(forms.Form):
    """Gold questions: share in each stream, qualification, threshold."""

    share = forms.FloatField(min_value=0, max_value=50, label="Gold share of each assessor's items (%)")
    qualification = forms.IntegerField(
        min_value=0, max_value=1000, label="Qualification: gold questions first"
    )
    min_accuracy = forms.FloatField(min_value=0, max_value=100, label="Pause below this accuracy (%)")
    min_answers = forms.IntegerField(min_value=1, max_value=1000, label="…after this many gold answers")


class JudgeForm(forms.Form):
    """A model judge's name and version (shown wherever its labels are used)."""

    name = forms.CharField(max_length=200)
    model = forms.CharField(max_length=200, required=False, help_text="e.g. DeepSeek-V3, gpt-4o-2024-08-06")
    prompt = forms.CharField(
        required=False,
        max_length=100_000,
        widget=forms.Textarea(attrs={"rows": 3}),
        help_text="the prompt, or its name and hash",
    )
    version_date = forms.DateField(required=False, help_text="when the labels were made (YYYY-MM-DD)")
    notes = forms.CharField(required=False, max_length=10_000, widget=forms.Textarea(attrs={"rows": 2}))
    shares_model_with = forms.CharField(
        required=False,
        max_length=500,
        help_text="systems under evaluation built on the same model, comma-separated (a circularity warning)",
    )
