"""Helpers the tests of tests/estimation/ share."""

from __future__ import annotations

import numpy as np
from hypothesis import strategies as st


def query_pool(seed: int = 0, n_queries: int = 40) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Skewed metric values of two systems and their difference (m, 3), costs, q, p.

    q follows Sawade's shape ``p sqrt(E[(L - R)^2]) / sqrt(lambda)`` with a deliberately noisy
    moment (an imperfect label model), mixed with 10 % of p.
    """
    rng = np.random.default_rng(seed)
    metric_a = 3 * rng.beta(0.6, 1.5, n_queries)
    metric_b = np.clip(metric_a + rng.normal(0, 0.3, n_queries), 0, None)
    costs = rng.lognormal(0, 0.5, n_queries)
    costs /= costs.mean()
    p = np.full(n_queries, 1 / n_queries)
    guessed_spread = np.abs(metric_a - p @ metric_a) + 0.3 * rng.random(n_queries)
    optimal = p * guessed_spread / np.sqrt(costs)
    q = 0.9 * optimal / optimal.sum() + 0.1 * p
    return np.stack([metric_a, metric_b, metric_a - metric_b], axis=1), costs, q / q.sum(), p


def item_pool(
    seed: int = 0, n_queries: int = 20, n_slots: int = 8
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Labels u (m, n), Q over pairs (SQRT shape with a noisy prior, 10 % uniform), targets (3, m, n).

    Targets: P of two systems (discount of the slot's position in a random ranking, times
    p = 1/m) and their signed difference.
    """
    rng = np.random.default_rng(seed)
    grades = rng.choice(5, size=(n_queries, n_slots), p=[0.5, 0.25, 0.12, 0.08, 0.05])
    labels = grades / 4
    discount = 1 / np.log2(np.arange(2, n_slots + 2))
    systems = np.stack(
        [
            np.stack([discount[rng.permutation(n_slots)] for _ in range(n_queries)]) / n_queries
            for _ in range(2)
        ]
    )
    prior = np.clip(labels + rng.normal(0, 0.2, labels.shape), 0.05, 1)
    optimal = prior * np.sqrt((systems**2).sum(axis=0))
    q = 0.9 * optimal / optimal.sum() + 0.1 / labels.size
    targets = np.concatenate([systems, (systems[0] - systems[1])[None]])
    return labels, q / q.sum(), targets


ARRIVAL_HEADER = [
    "strategy",
    "budget",
    "topup",
    "arrival",
    "truth",
    "mean",
    "bias_se",
    "rmse",
    "coverage",
    "mean_width",
]


TOKEN = st.sampled_from(["1", "2", "10", "d1", "d2", "D-3", "doc#4", "tag", "é", "x\u00a0y", "1_0"])
SPACE = st.sampled_from([" ", "  ", "\t", " \t ", "\x0b", "\x1c", "\u2003"])
NUMBER = st.sampled_from(["0", "1", "-1", "3.5", "1e3", "-0.0", "nan", "inf", "1e400", "x", "9" * 25, "1_5"])


@st.composite
def run_line(draw: st.DrawFn) -> str:
    """A line that is usually a valid run line, sometimes a comment, blank or broken one."""
    kind = draw(st.sampled_from(["good"] * 8 + ["comment", "blank", "short", "long", "odd"]))
    qid = draw(st.sampled_from(["1", "2", "3", "#7", "q\u00e9"]))
    fields = [qid, "Q0", draw(TOKEN), draw(NUMBER), draw(NUMBER), draw(st.sampled_from(["r", "s"]))]
    if kind == "good":
        fields[3] = str(draw(st.integers(-3, 3000)))
        fields[4] = repr(draw(st.floats(allow_nan=False, allow_infinity=False, width=32)))
    elif kind == "comment":
        fields[0] = "#" + fields[0]
    elif kind == "blank":
        return draw(st.sampled_from(["", " ", "\t", "\r"]))
    elif kind == "short":
        fields = fields[: draw(st.integers(1, 5))]
    elif kind == "long":
        fields.append("extra")
    separator = draw(SPACE)
    return separator.join(fields)


@st.composite
def run_file(draw: st.DrawFn) -> bytes:
    lines = draw(st.lists(run_line(), min_size=0, max_size=40))
    ending = draw(st.sampled_from(["\n", "\r\n"]))
    text = ending.join(lines) + draw(st.sampled_from(["", ending]))
    if draw(st.booleans()):
        text = "\ufeff" + text
    data = text.encode("utf-8", "surrogatepass")
    if draw(st.integers(0, 9)) == 0:
        position = draw(st.integers(0, len(data)))
        data = data[:position] + draw(st.sampled_from([b"\x00", b"\xff", b"\xc3"])) + data[position:]
    return data
