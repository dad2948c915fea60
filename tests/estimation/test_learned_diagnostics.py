"""The paper's diagnostics of a learned DCG: accuracy by |standard DCG difference| bin (Zhou et al.
2014, Figs. 4-5) and by answer strength (Figs. 16 and 18), on hand-worked answers."""

from __future__ import annotations

import math

import numpy as np
import pytest

from estimation.learned_dcg.diagnostics import AnswerDiagnostics, answer_diagnostics, utility_differences
from estimation.learned_dcg.leaderboard import dcg_table
from estimation.learned_dcg.lists import PreferenceData, standard_weights

D2 = 1 / math.log2(3)  # standard discount of position 2
# K = 2, grades 0..2. Learned DCG: grades 1 and 2 worth the same, no discount (gains [0, 1, 1]).
LEARNED = dcg_table([0.0, 1.0, 1.0], [1.0, 1.0])
STANDARD = standard_weights(2, 3, "exp")  # [[0, 1, 3], [0, D2, 3 D2]]

# left, right, preference (negative: left better); |standard difference|; credit std / learned
ANSWERS = [
    ([1, 1], [2, 0], -1),  # |1 + D2 - 3| = 1.369; std says right: 0; learned 2 vs 1: 1
    ([2, 0], [0, 0], -2),  # 3;                       std 1;            learned 1 vs 0: 1
    ([1, 0], [0, 1], -1),  # 1 - D2 = 0.369;          std 1;            learned tie: 0.5
    ([2, 2], [2, 1], 1),  # 2 D2 = 1.262;            std says left: 0; learned tie: 0.5
    ([0, 0], [0, 0], 0),  # identical lists: left out
    ([1, 0], [2, 0], 0),  # a tie on distinct lists: not scored, counted
    ([0, 2], [1, 0], 2),  # 3 D2 - 1 = 0.893;        std says left: 0; learned tie: 0.5
]


def answers(rows: list = ANSWERS) -> PreferenceData:
    left, right, preference = (np.array([row[i] for row in rows]) for i in range(3))
    return PreferenceData(left, right, preference, np.arange(len(rows)) % 2)


def diagnose(data: PreferenceData, *, bins: int = 4, min_per_bin: int = 5) -> AnswerDiagnostics:
    differences = {"learned": utility_differences(LEARNED, data), "exp": utility_differences(STANDARD, data)}
    return answer_diagnostics(data, differences, 3, in_sample=True, bins=bins, min_per_bin=min_per_bin)


def test_it_scores_each_metric_by_bins_of_the_standard_dcg_difference() -> None:
    found = diagnose(answers(), bins=2, min_per_bin=1)
    # |differences| 0.369, 0.893, 1.262 | 1.369, 3: the median (inverted CDF) 1.262 splits them.
    assert [b.answers for b in found.by_difference] == [3, 2]
    low, high = found.by_difference
    assert (low.low, low.high) == pytest.approx((1 - D2, 2 * D2))
    assert (high.low, high.high) == pytest.approx((2 - D2, 3.0))
    # Close pairs: standard DCG right once in three, learned says "tie" on all three.
    assert low.accuracy == pytest.approx({"learned": 0.5, "exp": 1 / 3})
    # Clear pairs: learned right on both, standard on one.
    assert high.accuracy == pytest.approx({"learned": 1.0, "exp": 0.5})
    assert found.metrics == ("learned", "exp") and found.reference == "exp" and found.in_sample


def test_it_scores_each_metric_by_answer_strength_and_counts_ties() -> None:
    found = diagnose(answers())
    much, better = found.by_strength
    assert (much.strength, much.preference, much.answers) == ("much better", 2, 2)
    assert much.accuracy == pytest.approx({"learned": 0.75, "exp": 0.5})
    assert (better.strength, better.answers) == ("better", 3)
    assert better.accuracy == pytest.approx({"learned": 2 / 3, "exp": 1 / 3})
    # Fig. 18: mean |predicted difference|, learned |1|, |0| and |1|, |0|, |0|.
    assert much.mean_difference["learned"] == pytest.approx(0.5)
    assert better.mean_difference["learned"] == pytest.approx(1 / 3)
    assert (found.answers, found.identical, found.scored, found.ties) == (7, 1, 5, 1)
    assert found.tie_share == pytest.approx(1 / 6), "one tie among six answers on distinct lists"


def test_too_few_answers_make_fewer_bins_and_none_is_empty() -> None:
    found = diagnose(answers())  # 5 scored answers, at least 5 per bin: one bin
    assert len(found.by_difference) == 1 and found.by_difference[0].answers == 5
    assert found.by_difference[0].accuracy == pytest.approx({"learned": 0.7, "exp": 0.4})
    # Many answers on one pair of lists: a single |difference| value is a single bin.
    same = diagnose(answers([([1, 1], [2, 0], -1)] * 12), bins=4, min_per_bin=1)
    assert [b.answers for b in same.by_difference] == [12]


def test_it_is_the_same_with_the_sides_swapped() -> None:
    swapped = [(right, left, -preference) for left, right, preference in ANSWERS]
    for one, other in zip(
        diagnose(answers(), bins=2, min_per_bin=1).by_difference,
        diagnose(answers(swapped), bins=2, min_per_bin=1).by_difference,
        strict=True,
    ):
        assert (one.low, one.high, one.answers) == pytest.approx((other.low, other.high, other.answers))
        assert one.accuracy == pytest.approx(other.accuracy)


def test_it_takes_held_out_differences_and_says_so() -> None:
    data = answers()
    held_out = {"learned": np.array([1.0, 1.0, 1.0, -1.0, 0.0, 0.0, -1.0])}  # all five right
    found = answer_diagnostics(data, held_out, 3, in_sample=False, bins=2, min_per_bin=1)
    assert not found.in_sample and found.to_json()["in_sample"] is False
    assert [b.accuracy["learned"] for b in found.by_difference] == [1.0, 1.0]
    with pytest.raises(ValueError, match="7 finite numbers"):
        answer_diagnostics(data, {"learned": np.ones(6)}, 3, in_sample=False)
    with pytest.raises(ValueError, match="no metric"):
        answer_diagnostics(data, {}, 3, in_sample=False)


def test_a_difference_at_rounding_noise_is_a_predicted_tie() -> None:
    data = answers([([2, 1], [1, 2], -1), ([2, 0], [0, 2], -1)])
    # 0.1 + 0.2 - 0.3 = 5.6e-17: rounding noise of sums that are equal, against differences of ~1.
    found = answer_diagnostics(data, {"learned": np.array([0.1 + 0.2 - 0.3, 1.0])}, 3, in_sample=True)
    assert found.by_strength[1].accuracy["learned"] == pytest.approx((0.5 + 1.0) / 2)
    exact = answer_diagnostics(data, {"learned": np.array([1e-3, 1.0])}, 3, in_sample=True)
    assert exact.by_strength[1].accuracy["learned"] == pytest.approx(1.0), "a real difference is no tie"
