"""How often the learned-DCG intervals held the truth in simulation, said next to every fit.

The intervals are BCa bootstrap intervals of a whole fit (`estimation.learned_dcg.fit`); their
coverage was measured by ``python bench/bench_learned_dcg_coverage.py`` (table and command in
``docs/benchmarks.md``): simulated side-by-side answers on a grid of truths and noise models,
20 simulated campaigns per condition. `MEASURED` holds, per fit method, the coverage of the
95 % intervals of g1 and c2..c5 under the doc's conditions (a DCG-form truth, probit noise,
Table 1's answer shares) at each number of answers, and the worst condition at the base size
(another noise model, careless answers). `coverage_note` reports the nearest measured size
for a fit, in words, with the shortfall when the intervals held the truth less than 90 % of
the time.
"""

from __future__ import annotations

NOMINAL = 0.95
SHORT_BELOW = 0.90
"""95 % less about twice the standard error of 100 simulated intervals (0.022): below this
the shortfall is more than simulation noise."""

MEASURED: dict[str, dict] = {
    "likelihood": {
        "by_answers": {500: 0.92, 1500: 0.94, 5000: 0.92},
        "worst": ("10 % careless answers", 0.86),
    },
    "qp": {
        "by_answers": {1500: 0.75, 5000: 0.71},
        "worst": ("logistic noise", 0.65),
    },
}
"""From ``bench/results/learned_dcg_coverage.json`` (a test checks they agree): the base
condition and its 500 / 5,000-answer variants, and the lowest row of each method."""


def coverage_note(method: str, n_answers: int) -> dict:
    """The measured coverage nearest this fit's size, in words and by how much it falls short."""
    measured = MEASURED.get(method)
    if measured is None:
        return {}
    sizes = sorted(measured["by_answers"])
    nearest = min(sizes, key=lambda size: abs(size - n_answers) / size)
    coverage = float(measured["by_answers"][nearest])
    shortfall = max(0.0, NOMINAL - coverage)
    worst_name, worst = measured["worst"]
    sentence = (
        f"In simulation with about {nearest:,} answers these 95 % intervals held the true gain or "
        f"discount {coverage:.0%} of the time"
    )
    if coverage < SHORT_BELOW:
        sentence += f", {shortfall * 100:.0f} points short: read them as about {coverage:.0%} intervals"
    if worst_name:
        sentence += f"; with {worst_name} {worst:.0%}"
    return {
        "sentence": sentence + ".",
        "simulated": coverage,
        "shortfall": shortfall if coverage < SHORT_BELOW else 0.0,
        "answers": nearest,
        "nominal": NOMINAL,
    }
