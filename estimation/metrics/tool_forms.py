"""DCG gains and discounts written the way other tools take them (trec_eval, ir_measures, this
package's ``evaluate``), with the conventions each form keeps. One function, used by the
``learn-dcg`` command's report and by the side-by-side campaign's download."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

__all__ = ["CONVENTIONS", "numbers", "other_tools_text"]

CONVENTIONS = (
    "conventions: lists are each run's top K in trec_eval order; unjudged documents count "
    "grade 0; gains scaled so grade 0 = 0 and the top grade = 1; discount of position 1 = 1"
)


def numbers(values: Sequence[float] | np.ndarray, digits: int = 3) -> str:
    """Comma-separated, trailing zeros dropped (``0,0.35,1``)."""
    return ",".join(f"{value:.{digits}f}".rstrip("0").rstrip(".") if value else "0" for value in values)


def other_tools_text(
    gains: Sequence[float] | np.ndarray, discounts: Sequence[float] | np.ndarray, cutoff: int
) -> str:
    """The gains (and discounts where a tool takes them) for trec_eval, ir_measures and
    ``python -m estimation evaluate``, one indented line each, after a heading line."""
    trec_eval = ",".join(f"{grade}={value:.4g}" for grade, value in enumerate(gains))
    integer_gains = ", ".join(f"{grade}: {round(100 * value)}" for grade, value in enumerate(gains))
    return (
        "the gains in other tools (their discount stays 1/log2(i+1); only this tool takes the "
        "learned discounts)\n"
        f"  trec_eval: -M {cutoff} -m ndcg.{trec_eval}   (ndcg over the top {cutoff}; ndcg_cut takes "
        "no gains)\n"
        f"  ir_measures: nDCG(gains={{{integer_gains}}})@{cutoff}   (gains must be integers: x100 and "
        "rounded; nDCG is unchanged by scaling the gains)\n"
        f"  python -m estimation evaluate QRELS RUN --metric nDCG@{cutoff} "
        f"--gains {numbers(gains, 4)} --discounts {numbers(discounts, 4)}\n"
    )
