"""The coordinator's forms: grade lines, usernames."""

from __future__ import annotations

import pytest
from django import forms

from labeling.forms import AssignForm, parse_grade_lines


def test_it_numbers_grade_keys_by_position_unless_given() -> None:
    assert parse_grade_lines("Bad\n\n  Good  \nn: Perfect") == [
        {"name": "Bad", "key": "0"},
        {"name": "Good", "key": "1"},
        {"name": "Perfect", "key": "n"},
    ]


@pytest.mark.parametrize(
    ("text", "problem"),
    [
        ("Only one", "at least two"),
        ("a: Bad\nA: Good", "repeated"),
        ("p: Bad\nGood", "reserved"),
        ("\n".join(f"g{i}" for i in range(11)), "at most ten"),
    ],
)
def test_it_rejects_unusable_grade_scales(text: str, problem: str) -> None:
    with pytest.raises(forms.ValidationError, match=problem):
        parse_grade_lines(text)


def test_it_splits_usernames_on_commas_and_spaces_once_each() -> None:
    form = AssignForm({"usernames": "alice, bob;carol  alice"})
    assert form.is_valid()
    assert form.cleaned_data["usernames"] == ["alice", "bob", "carol"]
