"""Writes: refit learned DCG from the answers (the worker's recompute), and hand the learned gains
and discounts to another campaign as its DCG.

`sxs_refit` runs in `labeling.recompute.recompute` (through `SxsMode.recompute`), which the
recompute pipeline coalesces: a burst of answers costs one refit. It fits, with the campaign's
fit settings (`fit_options`), only when the informative answers or those settings changed since
the last stored record (same answers, same grades of their lists, same choices: same fit);
otherwise it only brings the stored leaderboard up to date with grades given
since (and adds what a record stored by an older version lacks: the leaderboard's learned DCG,
the diagnostics). When the answers cannot support a fit yet, the record says why and how many
answers are still needed; a refit never raises for that.
"""

from __future__ import annotations

import hashlib
import json
import math
import time
from collections.abc import Callable
from typing import Any

import numpy as np
from django.conf import settings as django_settings
from django.db import transaction

from estimation.learned_dcg.budget import TimeBudget, TimeBudgetSpent, grid_points, refit_fits
from estimation.learned_dcg.diagnostics import answer_diagnostics, utility_differences
from estimation.learned_dcg.fit import DEFAULT_BOOTSTRAP, MIN_STRICT_PAIRS, MIN_TOPICS, learn_dcg
from estimation.learned_dcg.leaderboard import Flip, compare_leaderboards, dcg_table, disagreeing_answers
from estimation.learned_dcg.lists import standard_weights, transformed_weights
from labeling.models import Campaign
from labeling.services.campaigns import campaign_update, custom_dcg_problem
from sxs.models import SxsFit, SxsSettings
from sxs.selectors import (
    SxsAnswerArrays,
    known_grades,
    latest_fit,
    leaderboard_lists,
    preference_data,
    sxs_settings,
    sxs_settings_get,
)
from sxs.validators import grid_values

FITTED = "fitted"
INSUFFICIENT = "insufficient"
# No fit: the settings are above the operator's ceiling, or the time budget ran out first.
REFUSED = "refused"
# Bootstrap replicates of the whole fit for the intervals (the core's default; tests lower it).
BOOTSTRAP = DEFAULT_BOOTSTRAP
# The clock of a refit's time budget (tests replace it).
clock: Callable[[], float] = time.monotonic


def fit_options(settings: SxsSettings) -> dict[str, Any]:
    """The campaign's fit choices as `learn_dcg` keyword arguments."""
    custom = settings.c_tie == SxsSettings.TieCost.CUSTOM
    return {
        "method": settings.fit_method,
        "c_grid": grid_values(settings.c_grid),
        "c_tie_grid": grid_values(settings.c_tie_grid) if custom else settings.c_tie,
        "folds": settings.folds,
        "ties": settings.ties,
        "monotone_discounts": settings.monotone_discounts,
        "much_better_margin": settings.much_better_margin,
    }


def refit_work(settings: SxsSettings) -> tuple[int, str]:
    """About how many fits a refit with these settings makes, and the product in words."""
    options = fit_options(settings)
    tie = options["c_tie_grid"]
    c_values = len(options["c_grid"])
    tie_values = None if tie == SxsSettings.TieCost.SAME else c_values if isinstance(tie, str) else len(tie)
    qp = options["method"] == SxsSettings.FitMethod.QP
    points = grid_points(method=options["method"], c_values=c_values, c_tie_values=tie_values)
    fits = refit_fits(
        method=options["method"],
        c_values=c_values,
        c_tie_values=tie_values,
        folds=options["folds"],
        bootstrap=BOOTSTRAP,
    )
    grid = (
        f"{points} values of (C, C_t)" if qp and tie_values is not None else f"{points} values of C"
    ) + " after the grid's one widening"
    return fits, f"{grid} x {options['folds']} folds x ({BOOTSTRAP} bootstrap replicates + 2)"


def refit_work_problem(settings: SxsSettings) -> str | None:
    """Why a refit with these fit settings is refused (above the operator's ceiling), or None."""
    ceiling = django_settings.SXS_REFIT_MAX_FITS
    fits, product = refit_work(settings)
    if fits <= ceiling:
        return None
    return (
        f"these fit settings need about {fits:,} fits per refit ({product}), above the operator's "
        f"ceiling SXS_REFIT_MAX_FITS = {ceiling:,}: try fewer values of C or C_t, C_t the same as C, "
        "or fewer folds"
    )


def _limits() -> dict[str, Any]:
    return {
        "max_fits": django_settings.SXS_REFIT_MAX_FITS,
        "seconds": django_settings.SXS_REFIT_SECONDS,
        "bootstrap": BOOTSTRAP,
    }


def _signature(data: SxsAnswerArrays, options: dict[str, Any]) -> str:
    """What a fit depends on: the answers used, their preferences, the grades of their lists and
    the fit's choices (changing one refits)."""
    digest = hashlib.sha256()
    for array in (data.answer_ids, data.preference, data.left, data.right):
        digest.update(np.ascontiguousarray(array, dtype=np.int64).tobytes())
    digest.update(f"{data.k}:{data.grade_levels}".encode())
    digest.update(json.dumps(options, sort_keys=True).encode())
    return digest.hexdigest()


def _plain(value: Any) -> Any:
    """JSON without NaN or infinities (PostgreSQL's jsonb refuses them): None instead."""
    if isinstance(value, dict):
        return {key: _plain(item) for key, item in value.items()}
    if isinstance(value, list | tuple):
        return [_plain(item) for item in value]
    if isinstance(value, np.ndarray):
        return _plain(value.tolist())
    if isinstance(value, np.generic):
        value = value.item()
    if isinstance(value, float) and not math.isfinite(value):
        return None
    return value


def _shortfall(data: SxsAnswerArrays) -> tuple[str, int] | None:
    """Why these answers cannot be learned from yet, and how many more informative answers are
    needed (at least); None when the core's minimum is met."""
    identical = np.all(data.left == data.right, axis=1)
    strict = (data.preference != 0) & ~identical
    n_strict = int(strict.sum())
    n_topics = int(np.unique(data.groups[strict]).size)
    if n_strict >= MIN_STRICT_PAIRS and n_topics >= MIN_TOPICS:
        return None
    needed = max(MIN_STRICT_PAIRS - n_strict, MIN_TOPICS - n_topics, 1)
    reason = (
        f"learning needs at least {MIN_STRICT_PAIRS} informative answers (one list better, the two "
        f"lists' grades not identical) over at least {MIN_TOPICS} topics; there are {n_strict} over "
        f"{n_topics} topic(s) among {data.preference.size} usable answers: at least {needed} more needed"
    )
    if data.skipped:
        reason += f" ({data.skipped} answered comparisons still wait for document grades)"
    return reason, needed


def applied_gains_discounts(result: dict[str, Any]) -> tuple[list[float], list[float]]:
    """A fit's gains and discounts as a campaign takes them (4 decimals, as the report prints
    them: rounding also clears solver noise such as a gain of -1e-12)."""
    return (
        [round(float(value), 4) + 0.0 for value in result["gains"]],
        [round(float(value), 4) + 0.0 for value in result["discounts"]],
    )


def _flips_json(flips: tuple[Flip, ...], name: str) -> list[dict[str, Any]]:
    return [
        {
            "first": flip.first,
            "second": flip.second,
            name: flip.learned_difference,
            "standard_difference": flip.standard_difference,
        }
        for flip in flips
    ]


def leaderboard_json(campaign: Campaign, result: dict[str, Any], grades: dict, data: SxsAnswerArrays) -> dict:
    """The leaderboards of the campaign's systems, as stored with a fit (`result`: its weights,
    gains and discounts): under learned DCG (the rank-1 gains and discounts exactly as "use in a
    campaign" applies them), under the learned utility (the full T(W), not a DCG) and under
    standard DCG, with Kendall's τ of each learned order against the standard one."""
    settings = sxs_settings(campaign)
    weights = np.asarray(result["weights"], dtype=float)
    gains, discounts = applied_gains_discounts(result)
    lists = leaderboard_lists(campaign, grades, settings.k)
    board = (
        compare_leaderboards(weights, lists.grades, gains=np.array(gains), discounts=np.array(discounts))
        if lists.grades
        else None
    )
    answers = disagreeing_answers(dcg_table(gains, discounts), data.left, data.right, data.preference)
    rows = []
    if board is not None:
        for index, system in enumerate(board.systems):
            rows.append(
                {
                    "system": system,
                    "learned_dcg": float(board.learned[index]),
                    "rank_learned_dcg": int(board.rank_learned[index]),
                    "standard": float(board.standard[index]),
                    "rank_standard": int(board.rank_standard[index]),
                    "utility": float(board.utility[index]),
                    "rank_utility": int(board.rank_utility[index]),
                }
            )
        rows.sort(key=lambda row: (row["rank_learned_dcg"], row["system"]))
    return _plain(
        {
            "rows": rows,
            "kendall_tau": board.kendall_tau if board is not None else None,
            "kendall_tau_utility": board.kendall_tau_utility if board is not None else None,
            "disagreements": _flips_json(board.flips if board is not None else (), "learned_dcg_difference"),
            "utility_disagreements": _flips_json(
                board.utility_flips if board is not None else (), "utility_difference"
            ),
            "disagreeing_answers": {
                "count": answers.count,
                "learned_right": answers.learned_right,
                "standard_right": answers.standard_right,
            },
            "ungraded": lists.ungraded,
            "unjudged": settings.unjudged,
        }
    )


# The metrics the diagnostics score, in the order the dashboard shows them.
DIAGNOSED = ("learned_dcg", "exp", "linear", "utility")


def diagnostics_json(
    result: dict[str, Any], data: SxsAnswerArrays, heldout: dict[str, np.ndarray] | None = None
) -> dict:
    """Accuracy by |standard DCG difference| and by answer strength (the paper's Figs. 4-5 and
    16) of learned DCG (as applied), the two standard DCGs and the learned utility. With the
    fit's ``heldout`` differences (each answer predicted by the fold that held its topic out)
    the learned metrics are scored held out; without (a record stored by an older version), in
    sample on the answers the fit learned from (optimistic)."""
    core = data.core()
    gains, discounts = applied_gains_discounts(result)
    tables = {
        "learned_dcg": dcg_table(gains, discounts),
        "exp": standard_weights(data.k, data.grade_levels, "exp"),
        "linear": standard_weights(data.k, data.grade_levels, "linear"),
        "utility": transformed_weights(np.asarray(result["weights"], dtype=float)),
    }
    differences = {name: utility_differences(tables[name], core) for name in DIAGNOSED}
    if heldout:
        differences.update(heldout)
    diagnostics = answer_diagnostics(core, differences, data.grade_levels, in_sample=not heldout)
    return _plain(diagnostics.to_json())


def sxs_refit(*, campaign: Campaign) -> SxsFit | None:
    """Refit learned DCG when the informative answers changed since the last record; store the
    fit, or a record of why there is none. Returns the campaign's current record (None while no
    answer exists)."""
    if sxs_settings_get(campaign) is None:
        return None
    grades = known_grades(campaign)
    data = preference_data(campaign, grades=grades)
    fit_settings = sxs_settings(campaign)
    options = fit_options(fit_settings)
    signature = _signature(data, options)
    latest = latest_fit(campaign)
    if (
        latest is not None
        and latest.result.get("signature") == signature
        # A refusal stands only as long as the operator's limits it was made under.
        and (latest.result.get("status") != REFUSED or latest.result.get("limits") == _limits())
    ):
        if latest.result.get("status") == FITTED:
            # Same answers, but grades of other listed documents may have come in since; a
            # record stored by an older version lacks the diagnostics (same answers, same ones).
            update = {"leaderboard": leaderboard_json(campaign, latest.result, grades, data)}
            if "diagnostics" not in latest.result:
                update["diagnostics"] = diagnostics_json(latest.result, data)
            if any(latest.result.get(key) != value for key, value in update.items()):
                SxsFit.objects.filter(pk=latest.pk).update(result={**latest.result, **update})
                latest.refresh_from_db()
        return latest
    if latest is None and data.preference.size == 0 and not data.skipped:
        return None
    counts = {"signature": signature, "skipped": data.skipped, "k": data.k, "grade_levels": data.grade_levels}
    refused = refit_work_problem(fit_settings)
    if refused is not None:  # the ceiling may have been lowered since the settings were saved
        return _refusal(campaign, data, refused + " (in the side-by-side settings)", counts)
    short = _shortfall(data)
    if short is not None:
        reason, needed = short
        return SxsFit.objects.create(
            campaign=campaign,
            answers=int(data.preference.size),
            result={"status": INSUFFICIENT, "reason": reason, "needed": needed, **counts},
        )
    core = data.core()
    try:
        learned = learn_dcg(
            core,
            data.grade_levels,
            **options,
            bootstrap=BOOTSTRAP,
            seed=campaign.seed % 2**32,
            time_budget=TimeBudget(django_settings.SXS_REFIT_SECONDS, clock),
        )
    except TimeBudgetSpent:
        reason = (
            f"the refit's time budget (the operator's SXS_REFIT_SECONDS = "
            f"{django_settings.SXS_REFIT_SECONDS:g} s) ran out before its cross-validation finished: "
            "fewer values of C or C_t, or fewer folds, make each fit's search shorter"
        )
        return _refusal(campaign, data, reason, counts)
    except ValueError as error:  # e.g. every informative answer in one fold's topics
        return SxsFit.objects.create(
            campaign=campaign,
            answers=int(data.preference.size),
            result={"status": INSUFFICIENT, "reason": str(error), "needed": 1, **counts},
        )
    result = _plain(learned.to_json())
    result.update(
        status=FITTED,
        leaderboard=leaderboard_json(campaign, result, grades, data),
        diagnostics=diagnostics_json(result, data, learned.heldout_differences),
        **counts,
    )
    return SxsFit.objects.create(campaign=campaign, answers=int(data.preference.size), result=result)


def _refusal(campaign: Campaign, data: SxsAnswerArrays, reason: str, counts: dict[str, Any]) -> SxsFit:
    """A record of a refit the operator's limits stopped (no fit), with the limits it met."""
    return SxsFit.objects.create(
        campaign=campaign,
        answers=int(data.preference.size),
        result={"status": REFUSED, "reason": reason, "needed": None, "limits": _limits(), **counts},
    )


def learned_dcg_source(campaign: Campaign, fit: SxsFit) -> str:
    """How a campaign that takes these gains and discounts names where they came from."""
    return (
        f"learned from side-by-side campaign '{campaign.name}' "
        f"({fit.answers} answers, {fit.created_at.date().isoformat()})"
    )


def learned_custom_dcg(campaign: Campaign, fit: SxsFit) -> dict[str, Any]:
    """The fit's gains and discounts as a campaign's `custom_dcg` (`applied_gains_discounts`: the
    leaderboard's learned DCG scores with the very same numbers)."""
    gains, discounts = applied_gains_discounts(fit.result)
    return {"gains": gains, "discounts": discounts, "source": learned_dcg_source(campaign, fit)}


def apply_problem(target: Campaign, custom: dict[str, Any]) -> str | None:
    """Why `target` cannot measure DCG with these gains and discounts, or None."""
    return custom_dcg_problem(custom, target.grade_count, target.metric_cutoff)


@transaction.atomic
def learned_dcg_apply(*, campaign: Campaign, target: Campaign) -> Campaign:
    """Make `target` measure DCG (and nDCG) with the gains and discounts learned in `campaign`;
    ValueError with the reason when there is no fit or they do not fit the target."""
    fit = latest_fit(campaign)
    if fit is None or fit.result.get("status") != FITTED:
        raise ValueError("this campaign has no learned gains and discounts yet")
    custom = learned_custom_dcg(campaign, fit)
    problem = apply_problem(target, custom)
    if problem is not None:
        raise ValueError(f"campaign '{target.name}' cannot take them: {problem}")
    return campaign_update(campaign=target, custom_dcg=custom)
