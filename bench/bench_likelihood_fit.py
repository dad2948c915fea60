"""One learned-DCG procedure (`learn_dcg` with its defaults: the likelihood fit, C by 5-fold
cross-validation, 100 bootstrap replicates) at the conditions of the coverage test in
tests/estimation/test_learned_likelihood.py: 1,500 simulated answers on pools of 150 topics x 6
lists of depth 5, three grades, gains [0, .8, 1] and discounts 1/k^1.5. One BLAS thread.

Usage::

    .venv/bin/python bench/bench_likelihood_fit.py            # seconds of each seed's procedure
"""

from __future__ import annotations

import os

os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")

import argparse  # noqa: E402
import statistics  # noqa: E402
import sys  # noqa: E402
import time  # noqa: E402
from pathlib import Path  # noqa: E402

import numpy as np  # noqa: E402

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from estimation.learned_dcg.fit import learn_dcg  # noqa: E402
from estimation.learned_dcg.simulation import run_preferences  # noqa: E402

POSITIONS, GRADES = 5, 3


def answers(seed: int) -> object:
    lists = np.random.default_rng(seed).choice(GRADES, size=(150, 6, POSITIONS), p=[0.6, 0.25, 0.15])
    truth = np.outer(1.0 / np.arange(1, POSITIONS + 1) ** 1.5, [0.0, 0.8, 1.0])
    data, _ = run_preferences(lists, 1500, truth, np.random.default_rng(seed + 1))
    return data


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--seeds", type=int, default=3, help="procedures timed (the test's seeds)")
    args = parser.parse_args()
    seconds = []
    for index in range(args.seeds):
        data = answers(700 + 2 * index)
        started = time.process_time()
        learn_dcg(data, GRADES, seed=index, curve=False, form=False)
        seconds.append(time.process_time() - started)
        print(f"seed {700 + 2 * index}: {seconds[-1]:.2f} s of CPU", flush=True)
    print(f"median {statistics.median(seconds):.2f} s of CPU per procedure")


if __name__ == "__main__":
    main()
