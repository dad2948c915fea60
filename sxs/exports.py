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
    "sigma_ratio": "sigma2 / sigma1 of T(W): how far W is from DCG's form (discount x gain), 0 = exactly "
    "that form; no cut-off on it says the form fits: form_test does",
    "form_test": "likelihood-ratio test of the DCG form (gain x discount) against a free weight per grade "
    "and position, on the five answers: statistic = 2 (loglik_full - loglik_rank_one) on df = (K-1)(L-2) "
    "degrees of freedom, p_value from chi2(df) (small: the answers contradict the DCG form); p_value null "
    "with reason when the test does not apply; sentence: the result in words",
    "method": "likelihood = an ordered-probit likelihood of the five answers (the default); qp = the paper's "
    "QP (DCGLearn, Zhou et al. 2014); options: every choice the fit was made with",
    "c": "C chosen by cross-validation over topics (the likelihood's ridge cost, the QP's slack cost C_s); "
    "c_tie: C_t, the slack cost of 'about the same' answers (QP only, else null); c_grid / c_tie_grid: the "
    "values tried, after extending a grid once by a factor 10 when the choice sat at its edge",
    "grid_warnings": "sentences, each naming a chosen C or C_t that sits at the edge of its grid even after "
    "extending it once: a value beyond it might fit better, widen the grid; grid_notes: remarks that need "
    "no action (e.g. the likelihood's weakest penalty chosen: the answers need no shrinkage)",
    "intervals": "_low / _high: 95% intervals; interval_method says how (a BCa bootstrap over topics that "
    "repeats the whole fit); bootstrap: replicates that fitted, bootstrap_failed: those that did not, "
    "bootstrap_requested: those asked for (fewer were made when the refit's time budget ran out: then "
    "interval_method says so and the intervals are rough); "
    "widened: quantities (g1 = gain of grade 1, c2 = discount of position 2, sigma2/sigma1) whose interval "
    "was widened to contain the estimate (read those as rough); coverage, when present: how well such "
    "intervals cover, in coverage.sentence",
    "accuracy": "held-out share of answers with a direction predicted right, cross-validated over topics: "
    "learned = the learned DCG (gains x discounts, what a campaign applies) with C chosen without the "
    "held-out fold (nested); learned_full_w = the same of the full W (not a DCG); learned_best_of_grid = "
    "the learned DCG at the C best on the held-out folds themselves (optimistic); exp = DCG@K with gain "
    "2^y - 1, linear = gain y, both with discount 1/log2(1+k); accuracy_curve: the full W's",
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
    "diagnostics": "held out (in_sample false: each answer scored by the fold model that did not see "
    "its topic; records of earlier versions are in sample, the learned accuracies then optimistic): "
    "accuracy of learned_dcg, exp, linear and utility on answers with a direction, by "
    "quantile bins of the |DCG@K difference| (gain 2^y - 1) of the two lists (the paper's Figs. 4-5) "
    "and by answer strength (much better / better; mean_difference: mean |predicted difference|, "
    "each metric on its own scale); a predicted exact tie counts 1/2; "
    "tie_share: 'about the same' answers among those on distinct lists",
    "tie_curve": "per C_t (the slack cost of ties) at the chosen C: cross-validated share of tie answers "
    "predicted as ties and accuracy on the answers with a direction (the full W); chosen marks the fit's "
    "C_t; a likelihood fit has one row with c_tie null; empty when the fit has none",
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
        f"# {summary['answers']} answers, fitted {when}; sigma2/sigma1 = {summary['sigma_ratio']:.4f}\n",
    ]
    lines += [f"# {line}\n" for line in fit_lines(summary)]
    lines.append("\ngain per grade\t[95% interval over topics]\n")
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


def fit_lines(summary: dict) -> list[str]:
    """Which fit was made, its grid warnings and the test of the DCG form, a line each."""
    if not summary.get("method_words"):
        return []
    made = f"fitted by {summary['method_words']}: C = {summary['c']:g}"
    if summary.get("c_tie") is not None:
        made += f", C_t = {summary['c_tie']:g}"
    lines = [made]
    lines += [f"WARNING: {warning}" for warning in summary["grid_warnings"]]
    lines += summary["grid_notes"]
    if summary.get("form_test"):
        lines.append(summary["form_test"]["sentence"])
    return lines


def _value(number: float | None) -> str:
    return "n/a" if number is None else f"{number:.4f}"
