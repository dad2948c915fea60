"""`import estimation` and ``python -m estimation evaluate`` load only what they use: the public
names of `estimation/__init__.py` are found on first use, and a command imports its own module."""

from __future__ import annotations

import importlib
import subprocess
import sys

import pytest

import estimation
from estimation import _PUBLIC_MODULES


def test_every_public_name_is_the_object_of_its_module() -> None:
    assert sorted(name for names in _PUBLIC_MODULES.values() for name in names) == sorted(estimation.__all__)
    for module, names in _PUBLIC_MODULES.items():
        for name in names:
            assert getattr(estimation, name) is getattr(importlib.import_module(module), name)
    assert set(estimation.__all__) <= set(dir(estimation))


def test_an_old_module_path_of_a_public_name_leaves_the_public_name_alone() -> None:
    # `estimation.label_features` was the flat layout's module and is now a public function: the
    # old path still imports its module, and the package's name stays the function.
    old = importlib.import_module("estimation.label_features")
    assert old is importlib.import_module("estimation.label_models.features")
    assert estimation.label_features is old.label_features and callable(estimation.label_features)


def test_an_unknown_name_is_an_attribute_error() -> None:
    with pytest.raises(AttributeError, match="no attribute 'not_a_name'"):
        _ = estimation.not_a_name


def _loaded_after(script: str) -> set[str]:
    completed = subprocess.run(
        [sys.executable, "-c", f"{script}\nimport sys\nprint(' '.join(sorted(sys.modules)))"],
        capture_output=True,
        text=True,
        check=True,
    )
    return set(completed.stdout.split())


def test_import_estimation_loads_neither_numpy_nor_scipy() -> None:
    loaded = _loaded_after("import estimation")
    assert "numpy" not in loaded and "scipy" not in loaded


def test_the_evaluate_command_loads_no_scipy_and_no_other_command() -> None:
    loaded = _loaded_after(
        "from estimation.__main__ import build_parser\n"
        "build_parser('evaluate').parse_args(['evaluate', 'q', 'r', '-m', 'nDCG@10'])"
    )
    assert "estimation.cli.evaluate" in loaded
    assert "scipy" not in loaded
    assert not {"estimation.cli.simulate", "estimation.cli.plan", "estimation.cli.judge"} & loaded


def test_help_without_a_command_lists_every_command() -> None:
    completed = subprocess.run(
        [sys.executable, "-m", "estimation", "--help"], capture_output=True, text=True, check=True
    )
    for command in ("evaluate", "simulate", "plan", "judge", "learn-dcg", "select-training"):
        assert command in completed.stdout


# What a process that serves pages, runs a worker or a management command must not pay for at
# start: these take about two seconds of CPU together (estimation/distributions.py), and only
# the code that fits or tests loads them, on first use.
HEAVY_AT_START = ("scipy.stats", "scipy.optimize", "scipy.sparse", "qpsolvers", "lightgbm")


def test_a_django_process_starts_without_the_heavy_numeric_libraries() -> None:
    loaded = _loaded_after(
        "import os\n"
        "os.environ.setdefault('DJANGO_SETTINGS_MODULE', 'config.settings')\n"
        "from config.wsgi import application\n"
        "from django.urls import get_resolver\n"
        "get_resolver().url_patterns\n"
        "import config.celery\n"
    )
    assert {"graded.modes", "sxs.modes", "training.services", "estimation.sampling.verdicts"} <= loaded
    assert not set(HEAVY_AT_START) & loaded, set(HEAVY_AT_START) & loaded
