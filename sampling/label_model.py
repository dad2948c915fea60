"""The campaign's label model theta and cost model, fitted from its judgments so far.

Label model (`estimation.label_models.ordinal`, a cumulative-logit model, Sawade et al. 2013 Sect. 5.1):
features per pool item are, for each pooled system, the rank discount ``1 / log2(1 + rank)``
(0 when the system does not rank it) and the within-topic z-scored score (0 when unranked),
the number of pooled systems ranking it in their top K, ``log(1 + length)`` (0 when unknown),
and, when a labels file was imported, the expected grade under the imported prior. It is
fitted on every judged item (assessor judgments and imported qrels; several judgments of one
item: the lower median grade) and shrunk toward the default prior with a pseudo-count:
``theta = (1 - w) model + w prior``, ``w = prior_strength / (prior_strength + N)``. The default
prior of an item is its imported prior, else uniform over the grades; before any label exists
theta is the default prior. A judged item's theta is its observed grade (one-hot).

Cost model (`estimation.sampling.costs`): ``c(z) = log(1 + length)`` (unknown lengths: the mean of the
known ones; no length known at all: every item costs the same), normalised to mean 1 over the
pool items. Once `MIN_TIMED_JUDGMENTS` assessor judgments with measured seconds of documents
of different lengths exist, ``seconds = a + b log(1 + length)`` fitted to them replaces it
(normalised the same way for the sampling distribution; in seconds for hour budgets).
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from estimation.label_models.features import default_item_priors, label_feature_names, label_features
from estimation.label_models.ordinal import fit_ordinal_model
from estimation.sampling.costs import fit_cost_model
from labeling.models import Campaign, Judgment
from sampling.pool_arrays import EMPTY, PoolArrays

MIN_TIMED_JUDGMENTS = 30
L2_PENALTY = 1.0
# Keeps every item cost > 0 (a query must cost something: estimation requires lambda(x) > 0).
MIN_RELATIVE_COST = 0.05


def feature_names(arrays: PoolArrays) -> list[str]:
    """Names of the columns `item_features` returns, in order."""
    return label_feature_names(arrays.system_names, with_priors=arrays.priors is not None)


def item_features(arrays: PoolArrays, cutoff: int) -> np.ndarray:
    """Feature vector of every slot, shape (m, n, d) (module docstring; 0 on unused slots)."""
    return label_features(
        arrays.rankings, arrays.scores, arrays.lengths, arrays.slot_used, cutoff, priors=arrays.priors
    )


def judged_grades(campaign: Campaign, arrays: PoolArrays) -> np.ndarray:
    """Grade of every slot, shape (m, n): the lower median of its judgments, -1 when unjudged."""
    rows = np.array(
        list(Judgment.objects.filter(campaign=campaign).values_list("topic_id", "document_id", "grade")),
        dtype=np.int64,
    ).reshape(-1, 3)
    grades = np.full(arrays.slot_used.shape, EMPTY, dtype=np.int64)
    if rows.size == 0:
        return grades
    topic, slot = arrays.locate(rows[:, 0], rows[:, 1])
    inside = topic >= 0
    flat = topic[inside] * arrays.n_slots + slot[inside]
    values = rows[inside, 2]
    order = np.lexsort((values, flat))
    flat, values = flat[order], values[order]
    starts = np.flatnonzero(np.r_[True, flat[1:] != flat[:-1]]) if flat.size else np.array([], dtype=np.int64)
    counts = np.diff(np.r_[starts, flat.size])
    grades.ravel()[flat[starts]] = values[starts + (counts - 1) // 2]
    return grades


def default_priors(arrays: PoolArrays, n_grades: int) -> np.ndarray:
    """Each slot's default prior, shape (m, n, G): its imported prior, else uniform."""
    return default_item_priors(arrays.priors, arrays.slot_used, n_grades)


def label_model_fit(
    campaign: Campaign,
    arrays: PoolArrays,
    grades: np.ndarray,
    features: np.ndarray,
    *,
    judge_features: np.ndarray | None = None,
    judge_prior: np.ndarray | None = None,
) -> tuple[np.ndarray, dict[str, Any]]:
    """theta (m, n, G) and the model's parameters as JSON (for exports and offline recomputation).

    With a model judge (`sampling.judge_labels.judge_label_model_inputs`), its class joins the features
    (one column per class) and, where no prior was imported, its calibration set's P(y | f) is the
    prior: the active and item-level strategies then plan with the judge's information too."""
    n_grades = campaign.grade_count
    prior = default_priors(arrays, n_grades)
    names = feature_names(arrays)
    default_prior = "imported per item, else uniform" if arrays.priors is not None else "uniform"
    if judge_features is not None:
        features = np.concatenate([features, judge_features], axis=-1)
        names = names + [f"judge_class_{c}" for c in range(judge_features.shape[-1] - 1)] + ["judge_missing"]
    if judge_prior is not None:
        own = (
            np.isnan(arrays.priors).any(axis=-1)
            if arrays.priors is not None
            else np.ones(prior.shape[:2], bool)
        )
        prior = np.where(own[:, :, None], judge_prior, prior)
        default_prior = "imported per item, else the judge's calibration P(y | f)"
    judged = (grades >= 0) & arrays.slot_used
    n_labels = int(judged.sum())
    strength = float(campaign.prior_strength)
    parameters: dict[str, Any] = {
        "kind": "prior",
        "feature_names": names,
        "n_labels": n_labels,
        "prior_strength": strength,
        "l2": L2_PENALTY,
        "default_prior": default_prior,
    }
    theta = prior
    observed = grades[judged]
    if n_labels >= 2 and np.unique(observed).size >= 2:
        model = fit_ordinal_model(features[judged], observed, n_grades, l2=L2_PENALTY)
        weight = strength / (strength + n_labels)
        predicted = model.predict_proba(features.reshape(-1, features.shape[-1])).reshape(prior.shape)
        theta = (1.0 - weight) * predicted + weight * prior
        parameters.update(
            kind="ordinal",
            weights=model.weights.tolist(),
            thresholds=model.thresholds.tolist(),
            prior_weight=weight,
        )
    else:
        # One grade seen so far: the pseudo-count mixture of the empirical frequencies and the prior.
        counts = np.bincount(observed, minlength=n_grades).astype(float)
        if n_labels:
            weight = strength / (strength + n_labels)
            theta = (1.0 - weight) * (counts / n_labels) + weight * prior
            parameters.update(
                kind="frequencies", frequencies=(counts / n_labels).tolist(), prior_weight=weight
            )
    theta = np.array(theta, dtype=float)
    one_hot = np.eye(n_grades)[np.clip(grades, 0, n_grades - 1)]
    theta = np.where(judged[:, :, None], one_hot, theta)
    theta[~arrays.slot_used] = 0.0
    theta[~arrays.slot_used, 0] = 1.0
    return theta, parameters


def cost_model_fit(campaign: Campaign, arrays: PoolArrays) -> tuple[np.ndarray, dict[str, Any]]:
    """Item costs (m, n), mean 1 over the pool items, and the cost model as JSON."""
    lengths = arrays.lengths[arrays.slot_used]
    known = np.isfinite(lengths)
    model: dict[str, Any]
    if not known.any():
        model = {"kind": "constant", "a": 1.0, "b": 0.0, "default_length": 0.0}
    else:
        model = {"kind": "log_length", "a": 0.0, "b": 1.0, "default_length": float(lengths[known].mean())}
        timed = np.array(
            list(
                Judgment.objects.filter(
                    campaign=campaign,
                    source=Judgment.Source.ASSESSOR,
                    seconds__isnull=False,
                    document__length__isnull=False,
                ).values_list("document__length", "seconds")
            ),
            dtype=float,
        ).reshape(-1, 2)
        if timed.shape[0] >= MIN_TIMED_JUDGMENTS:
            try:
                fitted = fit_cost_model(timed[:, 0], timed[:, 1])
            except ValueError as error:
                model["fit_refused"] = str(error)
            else:
                model.update(
                    kind="fitted",
                    a=fitted.a,
                    b=fitted.b,
                    n_points=fitted.n_points,
                    rmse=fitted.rmse,
                    r_squared=None if math.isnan(fitted.r_squared) else fitted.r_squared,
                )
    filled = np.where(np.isfinite(arrays.lengths), arrays.lengths, model["default_length"])
    raw = model["a"] + model["b"] * np.log1p(filled)
    used_raw = raw[arrays.slot_used]
    mean = float(used_raw.mean()) if used_raw.size else 1.0
    if mean <= 0:
        raw, mean = np.ones_like(raw), 1.0
        model.update(kind="constant", a=1.0, b=0.0)
    raw = np.maximum(raw, MIN_RELATIVE_COST * mean)
    model["floor"] = MIN_RELATIVE_COST * mean
    model["scale"] = mean
    costs = np.where(arrays.slot_used, raw / mean, 0.0)
    return costs, model


def item_cost_units(cost_model: dict[str, Any], lengths: np.ndarray) -> np.ndarray:
    """Cost of labelling documents of these lengths (nan = unknown) in the campaign's cost unit."""
    if not cost_model:
        return np.ones(np.shape(lengths))
    lengths = np.asarray(lengths, dtype=float)
    filled = np.where(np.isfinite(lengths), lengths, cost_model.get("default_length", 0.0))
    raw = cost_model["a"] + cost_model["b"] * np.log1p(filled)
    return np.maximum(raw, cost_model.get("floor", 0.0)) / cost_model.get("scale", 1.0)


def item_seconds(cost_model: dict[str, Any], lengths: np.ndarray, mean_seconds: float) -> np.ndarray:
    """Predicted seconds per judgment: the fitted model, else the mean measured so far."""
    if cost_model.get("kind") == "fitted":
        return item_cost_units(cost_model, lengths) * cost_model["scale"]
    return np.full(np.shape(lengths), float(mean_seconds))
