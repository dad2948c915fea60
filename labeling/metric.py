"""A campaign's metric: the numeric core's `Metric` on the campaign's grade scale (with its
custom gains and discounts), and the metric in words for the pages."""

from __future__ import annotations

from dataclasses import replace

from estimation.metrics.spec import Metric
from labeling.models import Campaign


def campaign_metric(campaign: Campaign, name: str | None = None) -> Metric:
    """The campaign's metric (or another at its cutoff) on its grade scale: exponential gain and
    1/log2(1+k), or, for DCG and nDCG, the campaign's custom gains and discounts (`custom_dcg`,
    e.g. learned from a side-by-side campaign; ERR keeps its own definition)."""
    metric = Metric.parse(name or campaign.metric, y_max=max(1, campaign.grade_count - 1))
    custom = campaign.custom_dcg
    if custom and metric.name in ("DCG", "nDCG"):
        metric = replace(
            metric,
            gain_values=tuple(float(g) for g in custom["gains"]),
            discount_values=tuple(float(c) for c in custom["discounts"]),
        )
    return metric


def campaign_metric_label(campaign: Campaign) -> str:
    """The metric in words: "DCG@10", or with the custom gains and discounts and their source."""
    custom = campaign.custom_dcg
    if not custom:
        return campaign.metric
    gains = ", ".join(f"{float(g):.2f}" for g in custom["gains"])
    source = f"; {custom['source']}" if custom.get("source") else ""
    return f"{campaign.metric} with custom gains [{gains}] and discounts{source}"
