"""Tests for the label model's item features (Sawade et al. 2013, Sect. 5.1)."""

from __future__ import annotations

import numpy as np

from estimation.label_models.features import default_item_priors, label_feature_names, label_features

NAN = np.nan


def _toy() -> dict:
    # One topic, four slots (slot 3 unused). System a ranks slots 0, 1; system b ranks 2, 0, 1.
    return {
        "rankings": np.array([[[0, 1, -1]], [[2, 0, 1]]]),
        "scores": np.array([[[3.0, 1.0, NAN, NAN]], [[1.0, 0.0, 2.0, NAN]]]),
        "lengths": np.array([[NAN, 0.0, np.e - 1.0, 5.0]]),
        "slot_used": np.array([[True, True, True, False]]),
    }


def test_it_computes_discounts_z_scores_top_k_counts_and_log_lengths_by_hand() -> None:
    toy = _toy()

    features = label_features(**toy, cutoff=2)[0]

    b_z = 1.0 / np.sqrt(2.0 / 3.0)  # b's scores 1, 0, 2: mean 1, standard deviation sqrt(2/3)
    expected = np.array(
        [
            # discount[a], score_z[a], discount[b], score_z[b], systems_in_top_k, log_length
            [1.0, 1.0, 1.0 / np.log2(3), 0.0, 2.0, 0.0],
            [1.0 / np.log2(3), -1.0, 0.5, -b_z, 1.0, 0.0],
            [0.0, 0.0, 1.0, b_z, 1.0, 1.0],
            [0.0] * 6,  # unused slot: all 0
        ]
    )
    np.testing.assert_allclose(features, expected)
    assert label_feature_names(["a", "b"], with_priors=False) == [
        "discount[a]",
        "score_z[a]",
        "discount[b]",
        "score_z[b]",
        "systems_in_top_k",
        "log_length",
    ]


def test_it_adds_the_expected_prior_grade_and_zero_where_no_prior() -> None:
    priors = np.array([[[0.0, 1.0, 0.0], [0.5, 0.0, 0.5], [NAN, NAN, NAN], [NAN, NAN, NAN]]])

    features = label_features(**_toy(), cutoff=2, priors=priors)

    np.testing.assert_allclose(features[0, :, -1], [1.0, 1.0, 0.0, 0.0])
    assert len(label_feature_names(["a", "b"], with_priors=True)) == features.shape[-1]


def test_it_is_invariant_to_an_affine_change_of_a_systems_scores() -> None:
    toy = _toy()
    shifted = {**toy, "scores": toy["scores"] * np.array([10.0, 0.5])[:, None, None] + 7.0}

    np.testing.assert_allclose(label_features(**shifted, cutoff=2), label_features(**toy, cutoff=2))


def test_it_permutes_the_system_columns_with_the_systems() -> None:
    toy = _toy()
    swapped = {**toy, "rankings": toy["rankings"][::-1], "scores": toy["scores"][::-1]}

    plain = label_features(**toy, cutoff=2)
    other = label_features(**swapped, cutoff=2)

    np.testing.assert_allclose(other[..., [2, 3, 0, 1, 4, 5]], plain)


def test_it_gives_zero_z_scores_when_a_topics_scores_do_not_spread() -> None:
    toy = _toy()
    toy["scores"] = np.array([[[2.0, 2.0, NAN, NAN]], [[1.0, 1.0, 1.0, NAN]]])

    features = label_features(**toy, cutoff=2)

    np.testing.assert_array_equal(features[0, :, [1, 3]], 0.0)


def test_it_takes_each_slots_own_prior_else_uniform() -> None:
    priors = np.array([[[0.2, 0.8], [NAN, NAN]]])
    slot_used = np.array([[True, True]])

    np.testing.assert_allclose(default_item_priors(priors, slot_used, 2), [[[0.2, 0.8], [0.5, 0.5]]])
    np.testing.assert_allclose(default_item_priors(None, slot_used, 4), np.full((1, 2, 4), 0.25))
