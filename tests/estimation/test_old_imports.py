"""The module paths of the flat layout keep working after the move into subpackages: an old
path is the same module as the new one, and the four flat modules whose names are now packages
still answer their names."""

from __future__ import annotations

import importlib
import subprocess
import sys

import pytest

from estimation._moved import FORWARDED, MOVED


@pytest.mark.parametrize(("old", "new"), sorted(MOVED.items()))
def test_an_old_module_path_is_the_module_at_its_new_place(old: str, new: str) -> None:
    if new == "estimation.training.ensembles":
        pytest.importorskip("lightgbm")
    assert importlib.import_module(old) is importlib.import_module(new)


@pytest.mark.parametrize(("package", "module"), sorted(FORWARDED.items()))
def test_a_package_answers_the_names_of_the_flat_module_it_replaced(package: str, module: str) -> None:
    source = importlib.import_module(module)
    public = [name for name in vars(source) if not name.startswith("_") and callable(getattr(source, name))]
    assert public, module
    for name in public:
        assert getattr(importlib.import_module(package), name) is getattr(source, name)
    with pytest.raises(AttributeError, match="no attribute 'not_a_name'"):
        _ = importlib.import_module(package).not_a_name


def test_old_from_imports_work_in_a_fresh_interpreter() -> None:
    """What a researcher's script of the flat layout does, before anything else is imported."""
    script = (
        "from estimation.trec import read_run, read_qrels\n"
        "from estimation.metrics import summarize_run, dcg\n"
        "from estimation.planner import plan_budgets\n"
        "from estimation.sampling import optimal_query_distribution\n"
        "import estimation.formats.trec as new\n"
        "assert read_run is new.read_run\n"
        "print('ok')\n"
    )
    result = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, check=False)
    assert result.returncode == 0 and result.stdout.strip() == "ok", result.stderr
