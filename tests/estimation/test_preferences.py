"""Agreement tables, Cohen's and Fleiss' kappa, and preferences inferred from grades."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from estimation.learned_dcg.preferences import (
    Preference,
    agreement_between,
    agreement_pooled,
    canonical_preference,
    cohen_kappa,
    fleiss_kappa,
    flip_outcome,
    preferences_from_grades,
)


def test_it_computes_cohens_kappa_of_the_textbook_example() -> None:
    # 50 proposals: both yes 20, A yes / B no 5, A no / B yes 10, both no 15.
    # p_o = 0.7, p_e = 0.5 * 0.6 + 0.5 * 0.4 = 0.5, kappa = 0.4.
    assert cohen_kappa(np.array([[20, 5], [10, 15]])) == pytest.approx(0.4)


def test_it_computes_fleiss_kappa_of_the_textbook_example() -> None:
    # Fleiss (1971)-style example: 10 subjects, 14 raters, 5 categories; kappa = 0.210.
    counts = np.array(
        [
            [0, 0, 0, 0, 14],
            [0, 2, 6, 4, 2],
            [0, 0, 3, 5, 6],
            [0, 3, 9, 2, 0],
            [2, 2, 8, 1, 1],
            [7, 7, 0, 0, 0],
            [3, 2, 6, 3, 0],
            [2, 5, 3, 2, 2],
            [6, 5, 2, 1, 0],
            [0, 2, 2, 3, 7],
        ]
    )
    assert fleiss_kappa(counts) == pytest.approx(0.2099, abs=5e-4)


def test_it_reduces_fleiss_to_scotts_pi_for_two_raters() -> None:
    table = np.array([[20, 5], [10, 15]])
    # Scott's pi: p_o = 0.7; pooled marginals (25 + 30) / 100 and (25 + 20) / 100.
    expected_agreement = 0.55**2 + 0.45**2
    scotts_pi = (0.7 - expected_agreement) / (1 - expected_agreement)
    items = np.repeat(np.array([[2, 0], [1, 1], [1, 1], [0, 2]]), table.ravel(), axis=0)
    assert fleiss_kappa(items) == pytest.approx(scotts_pi)


def test_it_rejects_tables_it_cannot_read() -> None:
    with pytest.raises(ValueError, match="square"):
        cohen_kappa(np.ones((2, 3)))
    with pytest.raises(ValueError, match="non-negative integers"):
        cohen_kappa(np.array([[1, -1], [0, 2]]))
    with pytest.raises(ValueError, match="two or more ratings"):
        fleiss_kappa(np.array([[1, 0], [0, 1]]))
    assert np.isnan(cohen_kappa(np.array([[5, 0], [0, 0]])))


def hand_worked_preferences() -> list[Preference]:
    # Canonical pairs (a,b) (a,c) (b,c) (c,d) (a,d); u1 rows, u2 columns:
    #   (a,b): >  vs >     (a,c): ~ vs ~     (b,c): > vs ~
    #   (c,d): < vs <      (a,d): > vs <  (u2 writes it as (d, a, left))
    return [
        Preference("q", "a", "b", "left", "u1"),
        Preference("q", "a", "b", "left", "u2"),
        Preference("q", "a", "c", "tie", "u1"),
        Preference("q", "c", "a", "tie", "u2"),
        Preference("q", "b", "c", "left", "u1"),
        Preference("q", "b", "c", "tie", "u2"),
        Preference("q", "c", "d", "right", "u1"),
        Preference("q", "d", "c", "left", "u2"),
        Preference("q", "a", "d", "left", "u1"),
        Preference("q", "d", "a", "left", "u2"),
        Preference("q", "x", "y", "left", "u1"),  # judged by u1 only: not counted
    ]


def test_it_tabulates_two_assessors_by_hand() -> None:
    agreement = agreement_between(hand_worked_preferences(), "u1", "u2")
    expected = np.array([[1, 1, 1], [0, 1, 0], [0, 0, 1]])
    np.testing.assert_array_equal(agreement.counts, expected)
    assert agreement.n_pairs == 5
    assert agreement.overall == pytest.approx(3 / 5)
    # Neither said tie on (a,b), (c,d), (a,d): 2 of 3 agree.
    assert agreement.ignoring_ties == pytest.approx(2 / 3)
    # p_o = 0.6; row marginals (3, 1, 1)/5, column marginals (1, 2, 2)/5:
    # p_e = (3 * 1 + 1 * 2 + 1 * 2) / 25 = 7/25.
    assert agreement.kappa == pytest.approx((0.6 - 7 / 25) / (1 - 7 / 25))
    np.testing.assert_allclose(agreement.row_normalised, expected / expected.sum(axis=1, keepdims=True))


def test_it_is_invariant_to_pair_orientation_and_transposes_with_the_assessors() -> None:
    preferences = hand_worked_preferences()
    flipped = [
        Preference(p.topic, p.second, p.first, flip_outcome(p.outcome), p.assessor) for p in preferences
    ]
    forward = agreement_between(preferences, "u1", "u2")
    np.testing.assert_array_equal(agreement_between(flipped, "u1", "u2").counts, forward.counts)
    backward = agreement_between(preferences, "u2", "u1")
    np.testing.assert_array_equal(backward.counts, forward.counts.T)
    assert backward.kappa == pytest.approx(forward.kappa)


def test_it_pools_every_ordered_pair_of_assessors() -> None:
    two = agreement_pooled(hand_worked_preferences())
    forward = agreement_between(hand_worked_preferences(), "u1", "u2").counts
    np.testing.assert_array_equal(two.counts, forward + forward.T)
    assert two.overall == pytest.approx(3 / 5)
    assert two.kappa_kind == "fleiss"


@settings(max_examples=60, deadline=None)
@given(
    answers=st.lists(
        st.tuples(st.sampled_from(["left", "tie", "right"]), st.sampled_from(["left", "tie", "right"])),
        min_size=1,
        max_size=30,
    )
)
def test_it_counts_each_shared_pair_once(answers) -> None:
    preferences = []
    for number, (first, second) in enumerate(answers):
        preferences.append(Preference("q", f"a{number}", f"b{number}", first, "u1"))
        preferences.append(Preference("q", f"b{number}", f"a{number}", flip_outcome(second), "u2"))
    agreement = agreement_between(preferences, "u1", "u2")
    assert agreement.counts.sum() == len(answers)
    assert agreement.overall == pytest.approx(np.mean([first == second for first, second in answers]))
    assert -1.0 <= agreement.kappa <= 1.0 or np.isnan(agreement.kappa)


def test_it_keeps_an_assessors_last_answer_to_a_pair() -> None:
    preferences = [
        Preference("q", "a", "b", "right", "u1"),
        Preference("q", "b", "a", "right", "u1"),  # changed their mind: a > b
        Preference("q", "a", "b", "left", "u2"),
    ]
    assert agreement_between(preferences, "u1", "u2").overall == 1.0


def test_it_infers_preferences_from_grades() -> None:
    judgments = [("q", "d1", 2, "u"), ("q", "d2", 0, "u"), ("q", "d3", 2, "u"), ("q", "d1", 1, "v")]
    inferred = preferences_from_grades(judgments)
    assert set(inferred) == {
        Preference("q", "d1", "d2", "left", "u"),
        Preference("q", "d1", "d3", "tie", "u"),
        Preference("q", "d2", "d3", "right", "u"),
    }


def test_it_measures_agreement_on_inferred_preferences() -> None:
    # u grades (d1, d2, d3) = (2, 1, 0), v grades (1, 1, 0): v ties (d1, d2), agrees on the rest.
    judgments = [("q", d, g, "u") for d, g in (("d1", 2), ("d2", 1), ("d3", 0))]
    judgments += [("q", d, g, "v") for d, g in (("d1", 1), ("d2", 1), ("d3", 0))]
    agreement = agreement_between(preferences_from_grades(judgments), "u", "v")
    assert agreement.overall == pytest.approx(2 / 3)
    assert agreement.ignoring_ties == 1.0
    assert agreement.counts[0, 1] == 1


def test_it_canonicalises_and_rejects_bad_rows() -> None:
    flipped = Preference("q", "b", "a", "right", "u")
    assert canonical_preference(flipped) == Preference("q", "a", "b", "left", "u")
    with pytest.raises(ValueError, match="outcome"):
        Preference("q", "a", "b", "better", "u")  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="itself"):
        Preference("q", "a", "a", "tie", "u")
    with pytest.raises(ValueError, match="row 1"):
        agreement_between([("q", "a", "b", "left")], "u1", "u2")
    with pytest.raises(ValueError, match="no pair in common"):
        agreement_between([("q", "a", "b", "left", "u1")], "u1", "u2")
    with pytest.raises(ValueError, match="not an integer"):
        preferences_from_grades([("q", "d", 1.5, "u")])
