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
