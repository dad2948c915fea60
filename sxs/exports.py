"""Downloads of an SxS campaign: its answers as TSV and JSON Lines, and the learned DCG as JSON
and as the gains other tools take.

The TSV's first four columns are the core's PREFS.tsv (`qid system_a system_b preference`,
negative = system A better), so `grep -v '^#' answers.tsv | cut -f1-4` is a PREFS.tsv for
`python -m estimation learn-dcg`. The line starting with `#` names the columns.
"""

from __future__ import annotations

import json
from collections.abc import Iterator

from estimation.metrics.tool_forms import CONVENTIONS, numbers, other_tools_text
from labeling.models import Campaign
from sxs.selectors import answer_rows, learned_dcg_summary, sxs_settings

TSV_COLUMNS = (
    "topic",
    "system_a",
    "system_b",
    "preference",  # about the systems: -2 A much better .. 2 B much better
    "left_system",  # which system was shown on the left
    "answer",  # as displayed: -2 left much better .. 2 right much better
    "assessor",
    "seconds",
    "comment",
    "selection",  # random or margin
    "propensity",  # random: 1 / open tasks when it was chosen
    "margin",  # margin: |w^T d| under the fit that chose it
    "created_at",
)


def _cell(value: object) -> str:
    if value is None:
        return ""
    # A tab or line break in a comment would split the row.
    return " ".join(str(value).split()) if isinstance(value, str) else str(value)


def answers_tsv(campaign: Campaign) -> Iterator[str]:
    """One line per answer; the first four columns read as PREFS.tsv."""
    yield "# " + "\t".join(TSV_COLUMNS) + "\n"
    for row in answer_rows(campaign):
        yield "\t".join(_cell(row[column]) for column in TSV_COLUMNS) + "\n"


def answers_jsonl(campaign: Campaign) -> Iterator[str]:
    """One JSON object per answer (the TSV's columns plus the answer's label)."""
    for row in answer_rows(campaign):
        yield json.dumps(row, ensure_ascii=False) + "\n"


# What the numbers of learned_dcg.json mean (also printed at the top of the gains file).
LEARNED_CONVENTIONS = {
    "grades": "0 = the lowest grade of the campaign's scale, higher is better",
    "weights": "W, positions x grades: a list's utility is the sum over positions k of W[k, grade at k]",
    "transformed": "T(W) = W - W[:, :1]: the lowest grade is worth 0 at every position",
    "gains": "from the rank-1 part of T(W): the lowest grade 0, the top grade 1",
    "discounts": "from the rank-1 part of T(W): position 1 = 1",
    "sigma_ratio": "sigma2 / sigma1 of T(W): near 0, DCG's form (discount x gain) fits W",
    "intervals": "_low / _high: 95% percentile bootstrap over topics",
    "accuracy": "held-out share of answers with a direction predicted right, cross-validated over topics; "
    "exp = DCG@K with gain 2^y - 1, linear = gain y, both with discount 1/log2(1+k)",
    "lists": "the top K each comparison showed, fixed when the campaign started",
    "unjudged": "documents without a grade: 'zero' = grade 0; 'judge' = their answers wait for the grades",
    "leaderboard": "each system's mean over its topics under learned_dcg (the rank-1 gains x discounts, "
    "4 decimals: exactly what a campaign measures when it takes them), under standard DCG@K (2^y - 1, "
    "1/log2(1+k)) and under utility (the full T(W): what the fit scores answers with, not a DCG); "
    "ungraded documents count 0 there",
    "kendall_tau": "Kendall's tau-b between the learned DCG and standard DCG orders; kendall_tau_utility: "
    "between the learned utility and standard DCG orders",
    "disagreements": "system pairs that learned DCG and standard DCG order differently "
    "(utility_disagreements: the learned utility against standard DCG)",
    "diagnostics": "in sample (scored on the answers the fit learned from: learned accuracies are "
    "optimistic): accuracy of learned_dcg, exp, linear and utility on answers with a direction, by "
    "quantile bins of the |DCG@K difference| (gain 2^y - 1) of the two lists (the paper's Figs. 4-5) "
    "and by answer strength (much better / better; mean_difference: mean |predicted difference|, "
    "each metric on its own scale); a predicted exact tie counts 1/2; "
    "tie_share: 'about the same' answers among those on distinct lists",
    "tie_curve": "per C_t (the slack cost of ties): cross-validated share of tie answers predicted as ties "
    "and accuracy on the answers with a direction; empty when the fit has none",
}


def learned_dcg_json(campaign: Campaign) -> str:
    """The latest fit with everything it holds, its counts and the conventions."""
    summary = learned_dcg_summary(campaign)
    fitted_at = summary["fitted_at"]
    body = {
        "campaign": campaign.name,
        **summary,
        "fitted_at": fitted_at.isoformat() if fitted_at else None,
        "conventions": LEARNED_CONVENTIONS,
    }
    return json.dumps(body, ensure_ascii=False, indent=2) + "\n"


def learned_dcg_gains_txt(campaign: Campaign) -> str:
    """The learned gains and discounts, and how to give them to trec_eval, ir_measures and
    `python -m estimation evaluate` (the `learn-dcg` command's text)."""
    summary = learned_dcg_summary(campaign)
    k = sxs_settings(campaign).k
    head = f"# learned DCG@{k} of side-by-side campaign '{campaign.name}'\n# {CONVENTIONS}\n"
    if summary["status"] != "fitted":
        return head + f"# no fit yet: {summary['reason']}\n"
    when = summary["fitted_at"].date().isoformat()
    names = summary["grade_names"]
    lines = [
        head,
        f"# {summary['answers']} answers, fitted {when}; sigma2/sigma1 = {summary['sigma_ratio']:.4f}\n\n",
        "gain per grade\t[95% bootstrap interval over topics]\n",
    ]
    for grade, value in enumerate(summary["gains"]):
        low, high = summary["gains_low"][grade], summary["gains_high"][grade]
        lines.append(f"  g{grade} {names[grade]}\t{value:.4f}\t[{_value(low)}, {_value(high)}]\n")
    lines.append("discount per position\n")
    for position, value in enumerate(summary["discounts"]):
        low, high = summary["discounts_low"][position], summary["discounts_high"][position]
        lines.append(f"  c{position + 1}\t{value:.4f}\t[{_value(low)}, {_value(high)}]\n")
    lines.append(f"gains: {numbers(summary['gains'], 4)}\ndiscounts: {numbers(summary['discounts'], 4)}\n\n")
    lines.append(other_tools_text(summary["gains"], summary["discounts"], k))
    return "".join(lines)


def _value(number: float | None) -> str:
    return "n/a" if number is None else f"{number:.4f}"
