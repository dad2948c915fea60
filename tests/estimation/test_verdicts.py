"""Release verdicts read after every label (estimation.sampling.sequences,
estimation.sampling.verdicts, estimation.simulation.verdicts): the sequential boundary and the
anytime sequence keep wrong verdicts at or under 5 % where a naive peek at the fixed interval
does not, on seeded terms and on real runs made equal; the checks of the normal approximation;
the questions with a margin."""

from __future__ import annotations

import functools
from pathlib import Path

import numpy as np
import pytest
from scipy.stats import t as student_t

from estimation.formats.trec import Run, read_qrels, read_run
from estimation.judges.calibration import no_calibration
from estimation.metrics.spec import Metric
from estimation.metrics.values import summarize_run
from estimation.sampling.arrivals import stratified_estimate
from estimation.sampling.sequences import (
    MIN_PEEKING_DRAWS,
    mixture_multiplier,
    obrien_fleming_spent,
    sequential_multipliers,
    spending_boundaries,
)
from estimation.sampling.verdicts import (
    Look,
    VerdictPlan,
    first_verdict,
    look_arrays,
    look_problem,
    read_look,
    readable,
    skewness_allowed,
    stratified_looks,
)
from estimation.simulation.arrivals import (
    ARRIVAL_STRATEGIES,
    ArrivalReplay,
    ArrivalStrategy,
    Draws,
    arrival_strategy,
    prepare_arrival_replay,
)
from estimation.simulation.judged import draw_until
from estimation.simulation.verdicts import (
    VERDICT_RULES,
    equal_twin,
    prefix_estimates,
    rare_large_terms,
    replay_campaign_verdicts,
    replay_term_verdicts,
    replay_verdicts,
)


def _slack(rate: float, runs: int) -> float:
    """A rate plus three Monte Carlo standard errors: what `runs` replays of a true `rate` stay
    under but about once in 700."""
    return rate + 3 * np.sqrt(rate * (1 - rate) / runs)


def test_the_sequence_is_wider_than_the_fixed_interval_and_narrowest_near_its_target() -> None:
    anytime, fixed = VerdictPlan(rule="anytime", horizon=50), VerdictPlan(rule="fixed", horizon=50)
    for draws in (25, 50, 200, 1000):
        assert anytime.multiplier(draws) > fixed.multiplier(draws)
    # Width in units of sigma / sqrt(t): smallest near t_opt among these.
    widths = {t: mixture_multiplier(t, 50) / np.sqrt(t) * np.sqrt(50) for t in (5, 50, 500)}
    assert widths[50] < widths[5] and mixture_multiplier(50, 50) < mixture_multiplier(500, 50)
    before = Look(1.0, 0.1, MIN_PEEKING_DRAWS - 1, skewness=0.0)
    assert look_problem(anytime, before).startswith("read from the 20th top-up draw on"), "burn-in"
    assert look_problem(anytime, Look(1.0, 0.1, MIN_PEEKING_DRAWS, skewness=0.0)) == ""
    assert look_problem(VerdictPlan(rule="sequential", horizon=10), Look(1.0, 0.1, 12, labels=10)) == ""
    assert fixed.multiplier(1) == np.inf
    with pytest.raises(ValueError, match="t_opt > 0"):
        mixture_multiplier(10, 0)


def test_prefix_estimates_are_the_stratified_estimate_after_each_draw() -> None:
    rng = np.random.default_rng(2)
    old, new = rng.normal(size=140), rng.exponential(size=40)
    value, error = prefix_estimates(old, new, 100)
    for k in (2, 7, 40):
        estimate = stratified_estimate([old[: 100 + k], new[:k]])
        assert value[k - 1] == pytest.approx(estimate.value)
        assert error[k - 1] == pytest.approx(estimate.standard_error)
    assert np.isnan(error[0])


def test_checked_after_every_draw_the_sequence_holds_and_a_peek_does_not() -> None:
    """Importance-sampling-like terms (a third zero, the rest skewed), mean 0, checked at every
    draw from the burn-in to 200: the share of runs whose interval ever excludes 0."""
    rng = np.random.default_rng(7)
    runs, draws = 2000, 200
    terms = np.where(rng.random((runs, draws)) < 1 / 3, 0.0, rng.gamma(2.0, 1.5, (runs, draws))) - 2.0
    count = np.arange(1, draws + 1)
    mean = np.cumsum(terms, axis=1) / count
    spread = np.sqrt((np.cumsum(terms**2, axis=1) - count * mean**2) / np.maximum(count - 1, 1))
    se = spread / np.sqrt(count)
    # Each rule's half-width after every draw, in standard errors; read from its first look on.
    anytime = np.array([mixture_multiplier(t, draws) for t in count])
    peek = student_t.ppf(0.975, np.maximum(count - 1, 1))
    looks = {"anytime": count >= MIN_PEEKING_DRAWS, "peek": count >= 2}
    wrong = {
        rule: int(((np.abs(mean) > half * se) & looks[rule]).any(axis=1).sum())
        for rule, half in (("anytime", anytime), ("peek", peek))
    }
    # The plans the app reads give the half-widths used above.
    t = draws // 2
    assert VerdictPlan(rule="anytime", horizon=draws).multiplier(t) == pytest.approx(anytime[t - 1])
    assert VerdictPlan(rule="peek", horizon=draws).multiplier(t) == pytest.approx(peek[t - 1])
    assert wrong["anytime"] / runs <= 0.05 + 3 * np.sqrt(0.05 * 0.95 / runs), wrong  # 5 % + 3 MC se
    assert wrong["peek"] / runs >= 0.15, wrong


@pytest.mark.slow
def test_equal_runs_get_few_wrong_verdicts_on_real_data(shared_data: Path) -> None:
    robust = shared_data / "robust03"
    qrels = read_qrels(robust / "qrels.txt")
    runs = [read_run(path) for path in sorted((robust / "runs").iterdir())]
    metric = Metric.parse("DCG@10", y_max=2)
    pooled = runs[:8]
    champion = max(range(8), key=lambda index: summarize_run(qrels, pooled[index], metric).mean)
    twin = equal_twin(qrels, pooled[champion], pooled, 10, seed=4)
    replay = prepare_arrival_replay(qrels, pooled, twin, champion, metric, "leaderboard")
    assert replay.truth == pytest.approx(0.0, abs=1e-12) and replay.new.sum() > 100
    rows = {row.rule: row for row in replay_verdicts(replay, "items", 100, 40, 300, seed=11)}
    assert tuple(rows) == VERDICT_RULES
    # 300 campaigns: a true rate of 5 % reads at most about 8.8 % (3 standard errors).
    for rule in ("sequential", "anytime", "fixed"):
        assert rows[rule].wrong <= _slack(0.05, 300), rows[rule]
    peek = rows["peek"]
    assert peek.wrong >= 2 * rows["sequential"].wrong + 0.05, (peek, rows["sequential"])


def test_the_sequential_boundaries_spend_alpha_as_published() -> None:
    # Lan and DeMets' O'Brien-Fleming-shaped spending, two-sided 0.05, five equally spaced looks:
    # the published boundaries (Jennison and Turnbull 2000, table 7.6; DeMets and Lan 1994).
    five = spending_boundaries(np.arange(1, 6) / 5)
    assert five == pytest.approx([4.877, 3.357, 2.680, 2.290, 2.031], abs=0.01)
    assert obrien_fleming_spent(1.0) == pytest.approx(0.05) and obrien_fleming_spent(0.0) == 0
    # A look with no new information spends nothing; past the horizon nothing is left.
    repeated = spending_boundaries(np.array([0.5, 0.5, 1.0, 1.0]))
    assert np.isinf(repeated[1]) and np.isinf(repeated[3]) and np.isfinite(repeated[2])
    # A look after every one of 50 labels: the last boundary between the fixed 1.96 and the
    # continuous O'Brien-Fleming constant 2.24, each crossing no more likely than its share.
    every = spending_boundaries(np.arange(1, 51) / 50)
    assert 1.96 < every[-1] < 2.24
    rng = np.random.default_rng(4)
    paths = np.cumsum(rng.normal(0.0, np.sqrt(1 / 50), (40_000, 50)), axis=1) / np.sqrt(np.arange(1, 51) / 50)
    crossed = (np.abs(paths) >= every).any(axis=1).mean()
    assert crossed == pytest.approx(0.05, abs=3 * np.sqrt(0.05 * 0.95 / 40_000))
    # As Student's t at the same tail: wider with few draws, inf below two.
    assert sequential_multipliers(every[-3:], np.array([1, 5, 5000])).tolist()[0] == np.inf
    wide, near = sequential_multipliers(every[-2:], np.array([5, 5000]))
    assert wide > every[-2] and near == pytest.approx(every[-1], abs=0.01)
    with pytest.raises(ValueError, match="decrease"):
        spending_boundaries(np.array([0.6, 0.4]))


def test_a_plan_names_its_question_and_refuses_what_it_cannot_read() -> None:
    plan = VerdictPlan(rule="sequential", horizon=40, question="non_inferiority", margin=0.5)
    assert plan.threshold == -0.5 and plan.verdict_names == ("not_worse", "worse")
    assert VerdictPlan(question="superiority", margin=0.5).verdict_names == ("better", "not_better")
    assert VerdictPlan().threshold == 0 and VerdictPlan().verdict_names == ("better", "worse")
    for wrong, message in (
        ({"rule": "peeking"}, "unknown rule"),
        ({"question": "faster"}, "unknown question"),
        ({"margin": 0.5}, "needs a question that reads it"),
        ({"question": "non_inferiority", "margin": -1.0}, "margin"),
        ({"question": "non_inferiority", "margin": float("nan")}, "margin"),
        ({"horizon": 0.5}, "horizon"),
        ({"alpha": 1.0}, "alpha"),
    ):
        with pytest.raises(ValueError, match=message):
            VerdictPlan(**wrong)  # type: ignore[arg-type]


def test_stratified_looks_are_the_stratified_estimate_after_each_top_up_draw() -> None:
    rng = np.random.default_rng(3)
    old, middle, new = rng.exponential(size=60), rng.normal(size=30), rng.gamma(0.5, 2.0, size=12)
    looks = stratified_looks([old, middle, new], 48)
    assert [look.draws for look in looks] == list(range(1, 13))
    for look in looks:
        end = 48 + look.draws
        estimate = stratified_estimate([old[:end], middle[: end - 30], new[: look.draws]])
        assert look.value == pytest.approx(estimate.value)
        if look.draws >= 2:
            assert look.se == pytest.approx(estimate.standard_error)
            psi = np.zeros(end)
            for terms, start in ((old[:end], 0), (middle[: end - 30], 30), (new[: look.draws], 48)):
                psi[start:] += (terms - terms.mean()) / terms.size
            assert look.skewness == pytest.approx(np.sum(psi**3) / np.sum(psi**2) ** 1.5)
            before, during = old[:48], old[48:end]
            gap = abs(before.mean() - during.mean())
            spread = np.sqrt(before.var(ddof=1) / 48 + during.var(ddof=1) / during.size)
            assert look.agreement == pytest.approx(gap / spread)
    # A stratum without a draw yet gives no value.
    early = stratified_looks([old, middle, new], 40)
    assert all(np.isnan(look.value) for look in early[:8]) and np.isfinite(early[8].value)
    # An earlier arrival's stratum emptied (too few of its own draws) before a later one with
    # draws: no look has a value, as the stratified estimate has none (it raised before).
    emptied = stratified_looks([old, np.zeros(0), new], 48)
    assert len(emptied) == 12 and all(np.isnan(look.value) for look in emptied)
    assert np.isnan(stratified_estimate([old, np.zeros(0), new]).value)


def test_the_checks_hold_back_looks_the_normal_approximation_cannot_read() -> None:
    plan = VerdictPlan(rule="sequential", horizon=50)
    assert look_problem(plan, Look(1.0, 0.0, 10)).startswith("no spread")
    assert "disagree" in look_problem(plan, Look(1.0, 0.1, 10, skewness=0.0, agreement=4.0))
    allowed = skewness_allowed(0.05)
    # |gamma| (2 z^2 + 1) phi(z) / 6 = alpha / 2 at z = 1.96.
    assert allowed * (2 * 1.96**2 + 1) * 0.0584 / 6 == pytest.approx(0.025, rel=0.01)
    skewed = look_problem(plan, Look(1.0, 0.1, 25, skewness=2 * allowed))
    # The skewness falls like 1 / sqrt(n): four times the draws, so 75 more.
    assert "too few informative labels" in skewed and "about 75 more" in skewed
    assert look_problem(plan, Look(1.0, 0.1, 25, skewness=allowed / 2, agreement=1.0)) == ""
    held = read_look(plan, Look(5.0, 0.1, 40, skewness=0.0, agreement=9.0))
    assert held.verdict == "" and not held.band.finite and "disagree" in held.reason
    # The naive peek checks only the spread (it is what a pipeline without a rule does).
    assert look_problem(VerdictPlan(rule="peek", horizon=50), Look(1.0, 0.1, 10, agreement=9.0)) == ""


def test_first_verdict_reads_each_rule_at_its_looks() -> None:
    looks = [Look(value, 0.1, draws, 0.0) for draws, value in enumerate([0.1, 0.3, 0.5, 0.6, 0.61], start=2)]
    sequential = first_verdict(VerdictPlan(rule="sequential", horizon=6), looks, over=False)
    assert sequential.verdict == "better" and sequential.look is not None
    assert sequential.band.low > 0 and sequential.look.value >= 0.5
    # The fixed rule is read once, at the end; before then it says nothing.
    fixed = VerdictPlan(rule="fixed", horizon=6)
    assert first_verdict(fixed, looks, over=False).verdict == ""
    ended = first_verdict(fixed, looks, over=True)
    assert ended.verdict == "better" and ended.look == looks[-1]
    flat = [Look(0.0, 0.1, draws, 0.0) for draws in range(2, 7)]
    assert first_verdict(VerdictPlan(horizon=6), flat, over=False).verdict == ""
    unsettled = first_verdict(VerdictPlan(horizon=6), flat, over=True)
    assert unsettled.verdict == "not_settled" and "held the threshold" in unsettled.reason
    # Not worse by more than 0.3: a difference of -0.1 with a tight interval clears -0.3.
    close = [Look(-0.1, 0.02, draws, 0.0) for draws in range(2, 30)]
    plan = VerdictPlan(rule="sequential", horizon=30, question="non_inferiority", margin=0.3)
    assert first_verdict(plan, close, over=False).verdict == "not_worse"
    assert first_verdict(VerdictPlan(horizon=30), close, over=False).verdict == "worse"


def _normal_readings(drift: float, runs: int, draws: int, seed: int) -> dict[str, np.ndarray]:
    """Each rule's verdict per run of `draws` normal terms of mean `drift` (sd 1), checked after
    every draw, and the draw it came at."""
    rng = np.random.default_rng(seed)
    said: dict[str, list[tuple[str, float]]] = {}
    for _ in range(runs):
        looks = stratified_looks([rng.normal(drift, 1.0, draws)])
        for rule in ("sequential", "anytime", "fixed", "peek"):
            reading = first_verdict(VerdictPlan(rule=rule, horizon=draws), looks, over=True)
            at = float(reading.look.draws) if reading.look is not None else np.nan
            said.setdefault(rule, []).append((reading.verdict, at))
    return {rule: np.array(values, dtype=object) for rule, values in said.items()}


def test_on_normal_terms_the_sequential_rule_errs_at_most_alpha_and_decides_early() -> None:
    """Equal runs (drift 0) and runs whose fixed test at the horizon has power about 0.8, 50
    draws, 1,500 runs each: the sequential rule is wrong at most 5 % (+3 Monte Carlo se) where the
    peek is wrong several times as often, and decides right at least 0.9 times as often as the
    fixed rule, at a median well before the horizon."""
    runs, draws = 1500, 50
    equal = _normal_readings(0.0, runs, draws, seed=5)
    wrong = {rule: float(np.mean(np.isin(said[:, 0], ["better", "worse"]))) for rule, said in equal.items()}
    for rule in ("sequential", "anytime", "fixed"):
        assert wrong[rule] <= _slack(0.05, runs), wrong
    assert wrong["peek"] >= 3 * wrong["sequential"], wrong
    drift = (1.96 + 0.84) / np.sqrt(draws)
    different = _normal_readings(drift, runs, draws, seed=6)
    right = {rule: float(np.mean(values[:, 0] == "better")) for rule, values in different.items()}
    assert right["sequential"] >= 0.9 * right["fixed"], right
    decided = different["sequential"][different["sequential"][:, 0] == "better", 1].astype(float)
    assert np.median(decided) <= 0.8 * draws, np.median(decided)


def test_non_inferiority_calls_a_run_not_worse_only_when_it_is_within_the_margin() -> None:
    """Normal terms, a margin of 0.5: a run 0.6 worse is called not_worse at most 2.5 % of the
    time (one side of the two-sided test, + 3 Monte Carlo se); one 0.2 worse (less than half the
    margin) is called not_worse by the sequential rule at least 0.9 times as often as by the
    fixed test."""
    runs, draws, margin = 1200, 60, 0.5

    def not_worse(truth: float, rule: str, seed: int) -> float:
        rng = np.random.default_rng(seed)
        plan = VerdictPlan(rule=rule, horizon=draws, question="non_inferiority", margin=margin)
        calls = 0
        for _ in range(runs):
            looks = stratified_looks([rng.normal(truth, 1.0, draws)])
            calls += first_verdict(plan, looks, over=True).verdict == "not_worse"
        return calls / runs

    for rule in ("sequential", "fixed", "anytime"):
        assert not_worse(-0.6, rule, seed=8) <= _slack(0.025, runs), rule
    assert not_worse(-0.2, "sequential", seed=9) >= 0.9 * not_worse(-0.2, "fixed", seed=9)


def test_rare_large_terms_do_not_fool_the_offered_rules() -> None:
    """The synthetic scenario of `rare_large_terms` (a large term in one draw of seven, a small
    negative one otherwise, truth 0), read after every draw of 50, the small terms exact or
    blurred (then they look like a precise estimate until a large one comes): every offered rule
    errs at most 5 % (+3 Monte Carlo se) where the naive peek says worse in most runs."""
    runs = 1500
    for noise in (0.0, 0.25):
        terms = functools.partial(rare_large_terms, noise=noise)
        rows = {row.rule: row for row in replay_term_verdicts(terms, 50, runs, seed=3)}
        for rule in ("sequential", "anytime", "fixed"):
            assert rows[rule].wrong <= _slack(0.05, runs), (noise, rows[rule])
        assert rows["peek"].wrong >= 0.3, rows["peek"]


def test_the_batch_reading_and_the_reasons_apply_the_same_checks() -> None:
    rng = np.random.default_rng(12)
    plan = VerdictPlan(rule="sequential", horizon=30)
    looks = [
        Look(
            float(rng.normal()),
            float(rng.choice([0.0, 0.1, np.nan])),
            int(rng.integers(2, 40)),
            float(rng.choice([0.0, 0.2, 0.5, np.nan])),
            float(rng.choice([np.nan, 1.0, 3.0])),
        )
        for _ in range(300)
    ]
    passed = readable(plan, look_arrays(looks))
    assert passed.any() and not passed.all()
    assert [look_problem(plan, look) == "" for look in looks] == passed.tolist()


def _tiny_arrival() -> ArrivalReplay:
    """Three topics, two pooled runs and a run bringing one new document per topic."""
    qrels = {str(q): {f"d{q}-{d}": d % 3 for d in range(1, 9)} for q in (1, 2, 3)}

    def run(tag: str, documents: tuple[int, ...]) -> Run:
        rankings = {str(q): tuple(f"d{q}-{d}" for d in documents) for q in (1, 2, 3)}
        scores = {str(q): tuple(float(10 - rank) for rank in range(len(documents))) for q in (1, 2, 3)}
        return Run(tag=tag, rankings=rankings, scores=scores)

    pooled = [run("a", (1, 2, 3, 4, 5)), run("b", (3, 4, 5, 6, 7))]
    return prepare_arrival_replay(
        qrels, pooled, run("c", (8, 1, 6, 2, 5)), 0, Metric.parse("DCG@5", y_max=2), "leaderboard"
    )


def test_the_replays_ask_the_strategy_what_it_draws_and_needs(monkeypatch: pytest.MonkeyPatch) -> None:
    """A strategy replayed for arrivals is an `ArrivalStrategy`: a throwaway one registered beside
    items and judged is replayed by the verdict replays with no other change, and one that needs a
    judge is refused where the replay has none."""
    arrival = _tiny_arrival()
    with pytest.raises(ValueError, match="needs a judge's labels"):
        arrival_strategy("judged", arrival)
    with pytest.raises(ValueError, match="replayed for items, judged, not 'bogus'"):
        arrival_strategy("bogus")
    calls = {"stored": 0, "fresh": 0}

    def stored(replay: ArrivalReplay, budget: int, labelled: np.ndarray, rng: np.random.Generator):  # noqa: ANN202
        calls["stored"] += 1
        q = replay.old / replay.old.sum()
        draws = Draws()
        draws.add(draw_until(q, budget, labelled, rng), q, np.zeros(q.size))
        return draws, no_calibration(replay.n_grades)

    def fresh(replay: ArrivalReplay, labels: int, labelled: np.ndarray, rng: np.random.Generator) -> Draws:
        calls["fresh"] += 1
        ranked = replay.old | replay.new
        q = ranked / ranked.sum()
        draws = Draws()
        draws.add(draw_until(q, labels, labelled, rng), q, np.zeros(q.size))
        return draws

    monkeypatch.setitem(ARRIVAL_STRATEGIES, "uniform", ArrivalStrategy("uniform", stored, fresh))
    rows = replay_verdicts(arrival, "uniform", 6, 4, 3, seed=1)
    assert [row.rule for row in rows] == list(VERDICT_RULES) and calls["stored"] == 3
    assert all(row.n_repetitions == 3 and row.strategy == "uniform" for row in rows)
    replay_campaign_verdicts(arrival, "uniform", 6, 2, seed=1)
    assert calls["fresh"] == 2
