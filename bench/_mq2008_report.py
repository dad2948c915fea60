"""Tables, savings and the plot of the MQ2008 reproduction (reads the report dictionary)."""

from __future__ import annotations

from pathlib import Path

import numpy as np

METHOD_STYLE = {
    "passive": ("tab:gray", "o", "passive"),
    "active": ("tab:red", "s", "active"),
    "active_uniD": ("tab:blue", "^", "active$_{uniD}$"),
    "active_uniC": ("tab:green", "v", "active$_{uniC}$"),
}
ACTIVE_METHODS = ("active", "active_uniD", "active_uniC")


def equal_error_saving(
    budgets: np.ndarray, active: np.ndarray, passive_budgets: np.ndarray, passive: np.ndarray
) -> list[float | None]:
    """Per active budget b: ``1 - b / b'`` where passive reaches active's error at budget b'.

    The passive curve (which may extend past the largest active budget) is made
    non-increasing (a running minimum, against simulation noise) and interpolated linearly in
    log budget. None where active's error lies outside the passive curve's range: below
    passive's error at its largest budget, or above passive's error at its smallest budget.
    """
    passive = np.minimum.accumulate(passive)
    log_budgets = np.log(passive_budgets)
    savings: list[float | None] = []
    for budget, error in zip(budgets, active, strict=True):
        if error < passive[-1] or error > passive[0] or passive[0] == passive[-1]:
            savings.append(None)
            continue
        # np.interp needs increasing x: walk the passive curve from its smallest error up.
        matched = float(np.exp(np.interp(error, passive[::-1], log_budgets[::-1])))
        savings.append(1.0 - float(budget) / matched)
    return savings


def saving_at_largest_budget(budgets: np.ndarray, passive: np.ndarray, active: np.ndarray) -> float | None:
    """Sawade et al.'s headline: the share of the largest budget B active needs less at equal error.

    If active reaches passive's error at B within the grid, at budget b*, the saving is
    ``1 - b*/B`` (1 - b_0/B, a lower bound, if active is already better at the smallest
    budget b_0). If active is worse at B, the saving is negative: ``1 - B / b'`` with b' the
    passive budget matching active's error at B; None if no passive budget matches.
    """
    target = passive[-1]
    active_curve = np.minimum.accumulate(active)
    log_budgets = np.log(budgets)
    if active_curve[-1] <= target:
        if active_curve[0] <= target:
            return 1.0 - float(budgets[0]) / float(budgets[-1])
        needed = float(np.exp(np.interp(target, active_curve[::-1], log_budgets[::-1])))
        return 1.0 - needed / float(budgets[-1])
    passive_curve = np.minimum.accumulate(passive)
    if active[-1] > passive_curve[0]:
        return None
    matched = float(np.exp(np.interp(active[-1], passive_curve[::-1], log_budgets[::-1])))
    return 1.0 - float(budgets[-1]) / matched


def _curve(rows: list[dict], key: str) -> np.ndarray:
    return np.array([row[key]["mean"] for row in rows])


def _relative_se(rows: list[dict], key: str) -> np.ndarray:
    return np.array([row[key]["se"] / row[key]["mean"] if row[key]["mean"] > 0 else np.nan for row in rows])


def _loglog_slope(budgets: np.ndarray, errors: np.ndarray) -> float:
    """Least-squares slope of log error against log budget (about -1/2 for a mean absolute error)."""
    keep = errors > 0
    return float(np.polyfit(np.log(budgets[keep]), np.log(errors[keep]), 1)[0])


def saving_standard_error(saving: float | None, relative_se: float, slope: float) -> float | None:
    """Delta-method standard error of an equal-error saving ``s = 1 - b / b'``.

    A relative error ``r`` in the matched error level moves ``log b'`` by ``r / |slope|``
    (slope of the error curve in log-log), so ``se(s) = (1 - s) r / |slope|``; ``r`` combines
    the relative standard errors of both curves at the matched points.
    """
    if saving is None or not np.isfinite(relative_se) or slope >= 0:
        return None
    return float((1.0 - saving) * relative_se / abs(slope))


def savings_table(report: dict) -> list[dict]:
    """One row per (setting, metric, error measure, active method)."""
    budgets = np.asarray(report["protocol"]["budgets"], dtype=float)
    rows = []
    settings = [
        (f"one system ({system})", metric, entry, "mae")
        for metric, per_system in report["results"]["one_system"].items()
        for system, entry in per_system.items()
    ]
    for metric, entry in report["results"]["comparison"].items():
        settings.append(("difference", metric, entry, "mae"))
        settings.append(("difference", metric, entry, "selection_error"))
    for setting, metric, entry, key in settings:
        passive = _curve(entry["methods"]["passive"], key)
        extended_rows = entry["methods"]["passive"] + entry.get("passive_extension", [])
        extended_budgets = np.array([row["budget"] for row in extended_rows])
        extended = _curve(extended_rows, key)
        passive_slope = _loglog_slope(extended_budgets, extended)
        passive_rse = np.nanmean(_relative_se(extended_rows, key))
        for method in ACTIVE_METHODS:
            active = _curve(entry["methods"][method], key)
            active_rse = _relative_se(entry["methods"][method], key)
            per_budget = equal_error_saving(budgets, active, extended_budgets, extended)
            at_largest = saving_at_largest_budget(budgets, passive, active)
            rows.append(
                {
                    "setting": setting,
                    "metric": metric,
                    "error": key,
                    "method": method,
                    "per_budget": per_budget,
                    "per_budget_se": [
                        saving_standard_error(value, float(np.hypot(rse, passive_rse)), passive_slope)
                        for value, rse in zip(per_budget, active_rse, strict=True)
                    ],
                    "at_largest_budget": at_largest,
                    "at_largest_budget_se": saving_standard_error(
                        at_largest,
                        float(np.hypot(active_rse[-1], passive_rse)),
                        _loglog_slope(budgets, active),
                    ),
                }
            )
    return rows


def _percent(value: float | None) -> str:
    return "n/a" if value is None else f"{100 * value:+.0f} %"


def _error_table(lines: list[str], entry: dict, key: str, digits: int) -> None:
    methods = list(entry["methods"])
    lines.append("| budget | queries (passive / active) | " + " | ".join(methods) + " |")
    lines.append("|---:|---:|" + "---:|" * len(methods))
    for index, row in enumerate(entry["methods"]["passive"]):
        active_queries = entry["methods"]["active"][index]["distinct_queries"]
        queries = f"{row['distinct_queries']:.1f} / {active_queries:.1f}"
        cells = []
        for method in methods:
            value = entry["methods"][method][index][key]
            cells.append(f"{value['mean']:.{digits}f} ± {value['se']:.{digits}f}")
        lines.append(f"| {row['budget']:.0f} | {queries} | " + " | ".join(cells) + " |")
    lines.append("")
    if entry.get("passive_extension"):
        lines.append(
            "Passive beyond the grid (for the savings): "
            + ", ".join(
                f"{row['budget']:.0f}: {row[key]['mean']:.{digits}f} ± {row[key]['se']:.{digits}f} "
                f"({row['distinct_queries']:.0f} queries)"
                for row in entry["passive_extension"]
            )
            + "."
        )
        lines.append("")


def _coverage_table(lines: list[str], report: dict) -> None:
    """Share of repetitions whose 95 % CLT interval holds the truth, per budget."""
    budgets = report["protocol"]["budgets"]
    lines.append("## Coverage of the 95 % CLT interval")
    lines.append("")
    lines.append("| setting | metric | method | " + " | ".join(f"{b:g}" for b in budgets) + " |")
    lines.append("|---|---|---|" + "---:|" * len(budgets))
    entries = [
        (system, metric, entry)
        for metric, per_system in report["results"]["one_system"].items()
        for system, entry in per_system.items()
    ] + [("difference", metric, entry) for metric, entry in report["results"]["comparison"].items()]
    for setting, metric, entry in entries:
        for method, rows in entry["methods"].items():
            cells = " | ".join(f"{row['coverage']:.3f}" for row in rows)
            lines.append(f"| {setting} | {metric} | {method} | {cells} |")
    lines.append("")


def _rotation_table(lines: list[str], report: dict) -> None:
    """Noise-free savings when the rankers and the label model are fitted on another subset."""
    data = report["data"]
    this = {
        "fit_subsets": data["fit_subsets"],
        "pool_subsets": data["pool_subsets"],
        "truth": {
            metric: entry["truth_systems"] for metric, entry in report["results"]["comparison"].items()
        },
        "label_model_pool_loglik": report["label_model"]["pool_loglik_per_document"],
        "asymptotic_savings": report["asymptotic_savings"]["all_queries"],
    }
    lines.append("## Other fitting subsets (large-budget limit, all queries)")
    lines.append("")
    lines.append(
        "The same protocol with the rankers and the label model fitted on each subset in turn; the "
        "savings of active (uniD, uniC in brackets) in the large-budget limit, from the true values."
    )
    lines.append("")
    lines.append(
        "| fit | pool | label model log-lik. | metric | truth ridge / pairwise | one system (ridge) "
        "| one system (pairwise) | difference | oracle difference |"
    )
    lines.append("|---|---|---:|---|---|---:|---:|---:|---:|")
    for rotation in [this, *report["other_rotations"]]:
        for metric, (ridge, pairwise) in rotation["truth"].items():
            savings = rotation["asymptotic_savings"]

            def cell(setting: str, savings: dict = savings, metric: str = metric) -> str:
                row = savings[setting][metric]
                return (
                    f"{_percent(row['active'])} ({_percent(row['active_uniD'])}, "
                    f"{_percent(row['active_uniC'])})"
                )

            lines.append(
                f"| {'+'.join(rotation['fit_subsets'])} | {'+'.join(rotation['pool_subsets'])} | "
                f"{rotation['label_model_pool_loglik']:.4f} | {metric} | {ridge:.4f} / {pairwise:.4f} | "
                f"{cell(data['systems'][0])} | {cell(data['systems'][1])} | {cell('difference')} | "
                f"{_percent(savings['difference'][metric]['oracle'])} |"
            )
    lines.append("")


def write_markdown(report: dict, path: Path) -> None:
    data, protocol = report["data"], report["protocol"]
    model = report["label_model"]
    lines = [
        "# Active estimation on MQ2008 (LETOR 4.0): reproduction of Sawade et al. (2013), Sect. 5",
        "",
        f"Fit: {'+'.join(data['fit_subsets'])} ({data['fit_queries']} queries, "
        f"{data['fit_queries_without_relevant']} without a relevant document). "
        f"Pool: {'+'.join(data['pool_subsets'])} ({data['pool_queries']} queries, "
        f"{data['pool_queries_without_relevant']} without a relevant document: "
        f"{data['queries_without_relevant']}). "
        f"Systems: {', '.join(data['systems'])}; metrics DCG@{data['cutoff']} (gain 2^y - 1) and "
        f"ERR@{data['cutoff']} (y_max = {data['y_max']}).",
        "",
        f"Cost unit: {data['cost_unit']}. Mean query cost: "
        + ", ".join(
            f"{system} top {data['cutoff']} = {cost:.2f}"
            for system, cost in zip(data["systems"], data["mean_query_cost_one_system"], strict=True)
        )
        + f", union of both = {data['mean_query_cost_union']:.2f} documents; labelling the whole pool costs "
        f"{data['pool_cost_one_system'][0]:.0f} (one system) / {data['pool_cost_union']:.0f} (union).",
        "",
        f"Label model: cumulative logit, l2 = {model['l2']:g} (chosen on half of the fitting queries); "
        f"pool log-likelihood per document {model['pool_loglik_per_document']:.4f} vs "
        f"{model['grade_prior_pool_loglik_per_document']:.4f} for the fitting subset's grade frequencies.",
        "",
        f"{protocol['repetitions']} repetitions per method (seed {protocol['seed']}); all budgets of a "
        f"method share the same draws; defensive mixture {protocol['mix']}; {protocol['estimator']}. "
        "Entries: mean ± standard error over repetitions. 'queries' = distinct queries labelled (mean).",
        "",
    ]
    for metric, per_system in report["results"]["one_system"].items():
        for system, entry in per_system.items():
            lines.append(f"## One system: {system}, {metric}@{data['cutoff']} (truth {entry['truth']:.4f})")
            lines.append("")
            lines.append("Mean absolute error:")
            lines.append("")
            _error_table(lines, entry, "mae", 4)
    for metric, entry in report["results"]["comparison"].items():
        truth_a, truth_b = entry["truth_systems"]
        lines.append(
            f"## Two systems: {data['systems'][0]} - {data['systems'][1]}, {metric}@{data['cutoff']} "
            f"(truth {truth_a:.4f} - {truth_b:.4f} = {entry['truth']:+.4f})"
        )
        lines.append("")
        lines.append("Mean absolute error of the difference:")
        lines.append("")
        _error_table(lines, entry, "mae", 4)
        lines.append("Model-selection error (sign of the estimated difference wrong; a tie counts 1/2):")
        lines.append("")
        _error_table(lines, entry, "selection_error", 3)
    budgets = protocol["budgets"]
    _coverage_table(lines, report)
    lines.append("## Budget saved by active sampling at equal error")
    lines.append("")
    lines.append(
        "Per budget b: 1 - b / b', with b' the passive budget (log-linear interpolation over the passive "
        f"curve, simulated up to {max(protocol['passive_extension_budgets']):g}) whose error equals "
        "the method's error at b; n/a when outside the passive curve's range. 'at B' (B = the largest "
        "budget): Sawade et al.'s "
        "headline, the share of the largest budget saved while matching passive's error there "
        "(negative: active needs more), ± a delta-method standard error from the curves' standard errors "
        "(the per-budget cells carry similar uncertainty; they are in the JSON)."
    )
    lines.append("")
    lines.append(
        "| setting | metric | error | method | "
        + " | ".join(f"{b:g}" for b in budgets)
        + f" | at {budgets[-1]:g} |"
    )
    lines.append("|---|---|---|---|" + "---:|" * (len(budgets) + 1))
    for row in report["savings"]:
        cells = " | ".join(_percent(v) for v in row["per_budget"])
        at_largest = _percent(row["at_largest_budget"])
        if row["at_largest_budget_se"] is not None:
            at_largest += f" ± {100 * row['at_largest_budget_se']:.0f}"
        label = f"{row['setting']} | {row['metric']} | {row['error']} | {row['method']}"
        lines.append(f"| {label} | {cells} | {at_largest} |")
    lines.append("")
    lines.append("## Budget saved in the large-budget limit (no simulation noise)")
    lines.append("")
    lines.append(
        "1 - V(q)/V(p) with V(q) = [sum p^2 (L - R)^2 / q] [sum q lambda], computed from the true per-query "
        "values: the budget ratio at equal variance once many queries are drawn. 'oracle' is q* built "
        "from the true values instead of the label model (a perfect label model), mixed with p alike."
    )
    lines.append("")
    lines.append("| pool | setting | metric | active | active_uniD | active_uniC | oracle |")
    lines.append("|---|---|---|---:|---:|---:|---:|")
    for pool_name, per_setting in report["asymptotic_savings"].items():
        for setting, per_metric in per_setting.items():
            for metric, row in per_metric.items():
                cells = " | ".join(_percent(row[m]) for m in (*ACTIVE_METHODS, "oracle"))
                lines.append(f"| {pool_name.replace('_', ' ')} | {setting} | {metric} | {cells} |")
    lines.append("")
    if report.get("other_rotations"):
        _rotation_table(lines, report)
    lines.append(f"Runtime: {report['runtime_seconds']:.0f} s.")
    path.write_text("\n".join(lines) + "\n")


def plot_results(report: dict, path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    from matplotlib.ticker import FuncFormatter, LogLocator, NullLocator

    data = report["data"]
    systems = data["systems"]
    metric_names = list(report["results"]["comparison"])
    panels = []
    for metric in metric_names:
        row = [
            (report["results"]["one_system"][metric][s], "mae", f"{metric}@{data['cutoff']}, one system: {s}")
            for s in systems
        ]
        entry = report["results"]["comparison"][metric]
        row.append((entry, "mae", f"{metric}@{data['cutoff']}, difference {systems[0]} - {systems[1]}"))
        row.append((entry, "selection_error", f"{metric}@{data['cutoff']}, model-selection error"))
        panels.append(row)
    figure, axes = plt.subplots(len(panels), len(panels[0]), figsize=(18, 8.5), squeeze=False)
    for row_axes, row in zip(axes, panels, strict=True):
        for axis, (entry, key, title) in zip(row_axes, row, strict=True):
            for method, (color, marker, label) in METHOD_STYLE.items():
                rows = entry["methods"][method]
                budgets = [r["budget"] for r in rows]
                means = [r[key]["mean"] for r in rows]
                errors = [r[key]["se"] for r in rows]
                axis.errorbar(
                    budgets,
                    means,
                    yerr=errors,
                    color=color,
                    marker=marker,
                    markersize=4,
                    capsize=2,
                    linewidth=1.3,
                    label=label,
                )
            axis.set_xscale("log")
            axis.set_yscale("log")
            axis.yaxis.set_major_locator(LogLocator(base=10, subs=(1.0, 1.5, 2.0, 3.0, 5.0, 7.0)))
            axis.yaxis.set_major_formatter(FuncFormatter(lambda value, _: f"{value:g}"))
            axis.yaxis.set_minor_locator(NullLocator())
            axis.set_xticks(report["protocol"]["budgets"])
            axis.set_xticklabels([f"{b:g}" for b in report["protocol"]["budgets"]], fontsize=8)
            axis.minorticks_off()
            axis.set_title(title, fontsize=10)
            axis.set_xlabel("labelling budget (documents)")
            axis.set_ylabel("model-selection error" if key == "selection_error" else "mean absolute error")
            axis.grid(True, alpha=0.3)
    axes[0][0].legend(fontsize=9, loc="lower left")
    figure.suptitle(
        f"MQ2008: fit on {'+'.join(data['fit_subsets'])}, pool {'+'.join(data['pool_subsets'])} "
        f"({data['pool_queries']} queries), {report['protocol']['repetitions']} repetitions; "
        "error bars: ± 1 standard error",
        fontsize=11,
    )
    figure.tight_layout()
    figure.savefig(path, dpi=110)
    plt.close(figure)
