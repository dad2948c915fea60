"""What a metric is: its name, cutoff, gain convention and grade scale.

Metric names are values, as in ir_measures: ``DCG@10``, ``nDCG@10``, ``ERR@20``.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Literal

import numpy as np

MetricName = Literal["DCG", "nDCG", "ERR"]
GainKind = Literal["exp", "linear"]

_METRIC_PATTERN = re.compile(r"^(DCG|nDCG|ERR)@([1-9][0-9]*)$")


@dataclass(frozen=True)
class Metric:
    """A ranking metric at a cutoff, with its gain convention and grade scale.

    Parameters
    ----------
    name : {"DCG", "nDCG", "ERR"}
    cutoff : int
        K: only the first ``min(n, K)`` positions of a ranking count.
    gain : {"exp", "linear"}
        DCG gain ``2**y - 1`` (exponential, the default for estimation; ir_measures
        ``nDCG(dcg='exp-log2')``) or ``y`` (linear; trec_eval's ``ndcg_cut``). ERR always
        uses ``l(y) = (2**y - 1) / 2**y_max`` (Chapelle et al. 2009).
    y_max : int
        The campaign's top grade (never the per-query maximum). gdeval hard-codes 4.
    gain_values, discount_values : tuple of float, optional
        Custom gain per grade (length ``y_max + 1``) and discount per position (length
        >= cutoff), e.g. learned from side-by-side preferences. DCG only.
    """

    name: MetricName
    cutoff: int
    gain: GainKind = "exp"
    y_max: int = 4
    gain_values: tuple[float, ...] | None = None
    discount_values: tuple[float, ...] | None = None

    def __post_init__(self) -> None:
        if self.name not in ("DCG", "nDCG", "ERR"):
            raise ValueError(f"unknown metric {self.name!r}; expected DCG, nDCG or ERR")
        if self.cutoff < 1:
            raise ValueError(f"metric cutoff must be >= 1, got {self.cutoff}")
        if self.gain not in ("exp", "linear"):
            raise ValueError(f"gain must be 'exp' or 'linear', got {self.gain!r}")
        if self.y_max < 1:
            raise ValueError(f"y_max must be >= 1, got {self.y_max}")
        if self.gain_values is not None and len(self.gain_values) != self.y_max + 1:
            raise ValueError(f"gain_values needs {self.y_max + 1} entries (grades 0..{self.y_max})")
        if self.discount_values is not None and len(self.discount_values) < self.cutoff:
            raise ValueError(f"discount_values needs at least {self.cutoff} entries (the cutoff)")
        if self.name == "ERR" and (self.gain_values is not None or self.discount_values is not None):
            raise ValueError("custom gains and discounts apply to DCG only")

    @classmethod
    def parse(cls, text: str, *, gain: GainKind = "exp", y_max: int = 4) -> Metric:
        """Parse ``"DCG@10"``, ``"nDCG@10"`` or ``"ERR@10"``."""
        match = _METRIC_PATTERN.match(text.strip())
        if match is None:
            raise ValueError(f"cannot parse metric {text!r}; expected e.g. DCG@10, nDCG@10 or ERR@10")
        return cls(name=match.group(1), cutoff=int(match.group(2)), gain=gain, y_max=y_max)  # type: ignore[arg-type]  # the pattern only matches the literal metric names

    def __str__(self) -> str:
        return f"{self.name}@{self.cutoff}"

    @property
    def is_linear_in_labels(self) -> bool:
        """DCG is a sum over items (item-level sampling applies); ERR and nDCG are not."""
        return self.name == "DCG"

    def gain_table(self) -> np.ndarray:
        """Gain per grade, shape (y_max + 1,): g(y) for DCG/nDCG, l(y) for ERR."""
        grades = np.arange(self.y_max + 1, dtype=float)
        if self.name == "ERR":
            return (2.0**grades - 1.0) / 2.0**self.y_max
        if self.gain_values is not None:
            return np.asarray(self.gain_values, dtype=float)
        if self.gain == "linear":
            return grades
        return 2.0**grades - 1.0

    def value_bounds(self) -> tuple[float, float]:
        """(lowest, highest) value the metric can take on one topic, hence on a mean over topics.

        ERR and nDCG lie in [0, 1]; DCG@K between K documents of the lowest and of the highest
        gain: ``[min(0, g_min), max(0, g_max)] * sum of the K discounts``. A confidence interval
        may be cut to these bounds without losing coverage (the true value lies inside them).
        """
        if self.name in ("ERR", "nDCG"):
            return 0.0, 1.0
        gains, total_discount = self.gain_table(), float(self.discount_table().sum())
        return min(0.0, float(gains.min())) * total_discount, max(0.0, float(gains.max())) * total_discount

    def discount_table(self, length: int | None = None) -> np.ndarray:
        """Discount per position 1..min(length, K), shape (min(length, K),).

        DCG: ``1 / log2(i + 1)``; ERR: ``1 / i`` (the a_i of the ERR recurrence).
        """
        depth = self.cutoff if length is None else min(length, self.cutoff)
        positions = np.arange(1, depth + 1, dtype=float)
        if self.name == "ERR":
            return 1.0 / positions
        if self.discount_values is not None:
            return np.asarray(self.discount_values[:depth], dtype=float)
        return 1.0 / np.log2(positions + 1.0)
