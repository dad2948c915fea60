"""The shared data the arrival benchmarks replay (`bench_arrivals.py`, `bench_verdicts.py`):
where it is, the champion a run is compared with, and DL19's model judge with its DL23
calibration. Read from ``$SHARED_DATA_DIR`` or ``../shared/data``; nothing is copied."""

from __future__ import annotations

import os
import sys
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO_ROOT))

from estimation.formats.judge_labels import read_judge_labels  # noqa: E402
from estimation.formats.trec import Run  # noqa: E402
from estimation.judges.calibration import Calibration  # noqa: E402
from estimation.judges.files import external_calibration  # noqa: E402
from estimation.metrics.spec import Metric  # noqa: E402
from estimation.metrics.values import summarize_run  # noqa: E402

SHARED_DATA = Path(os.environ.get("SHARED_DATA_DIR", REPO_ROOT.parent / "shared" / "data"))
RESULTS = REPO_ROOT / "bench" / "results"
DL19 = SHARED_DATA / "llm_judges" / "dl19_mini"
DL23 = SHARED_DATA / "llm_judges" / "dl23_llmjudge"
ROBUST = SHARED_DATA / "robust03"


def champion(qrels: dict, runs: list[Run], metric: Metric) -> int:
    """The index of the run with the best mean metric on the qrels."""
    means = [summarize_run(qrels, run, metric).mean for run in runs]
    return max(range(len(runs)), key=means.__getitem__)


def dl19_judge(y_max: int) -> dict:
    """The UMBRELA DeepSeek-V3 judge's labels of DL19: (qid, docno) -> (grade, probabilities)."""
    judge = read_judge_labels(str(DL19 / "qrels" / "umbrela_bing_DSV3.txt"), y_max=y_max)
    return {pair: (line.grade, line.probs) for pair, line in judge.items()}


def dl23_calibration(metric: Metric) -> Calibration:
    """The same judge calibrated on the DL23 topics' NIST labels (an external calibration)."""
    return external_calibration(
        str(DL23 / "qrels" / "nist.txt"), str(DL23 / "qrels" / "farzi_zeroshot_bing_DSV3.txt"), metric=metric
    )
