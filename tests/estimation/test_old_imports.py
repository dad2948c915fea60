"""The module paths of the flat layout keep working after the move into subpackages: an old
path is the same module as the new one, and the four flat modules whose names are now packages
still answer their names."""

from __future__ import annotations

import importlib
import subprocess
import sys

import pytest

# Every flat module of the old layout and where the move into subpackages put it, as that
# commit renamed them (`git log --diff-filter=R --name-status -- estimation/`), not from the
# shim's own tables: an old path the shim forgets fails here.
FLAT_LAYOUT = {
    "estimation._dcg_solvers": "estimation.learned_dcg.solvers",
    "estimation.batch_kernels": "estimation.simulation.kernels",
    "estimation.bradley_terry": "estimation.topk.bradley_terry",
    "estimation.budget_loop": "estimation.sampling.budget_loop",
    "estimation.cli_evaluate": "estimation.cli.evaluate",
    "estimation.cli_learn_dcg": "estimation.cli.learn_dcg",
    "estimation.cli_plan": "estimation.cli.plan",
    "estimation.cli_select_training": "estimation.cli.select_training",
    "estimation.cli_simulate": "estimation.cli.simulate",
    "estimation.costs": "estimation.sampling.costs",
    "estimation.dcg_lists": "estimation.learned_dcg.lists",
    "estimation.dcg_tool_forms": "estimation.metrics.tool_forms",
    "estimation.draws": "estimation.sampling.draws",
    "estimation.elo_dcg": "estimation.training.elo_dcg",
    "estimation.ensembles": "estimation.training.ensembles",
    "estimation.estimators": "estimation.sampling.estimators",
    "estimation.inclusion": "estimation.sampling.inclusion",
    "estimation.intervals": "estimation.sampling.intervals",
    "estimation.item_estimators": "estimation.sampling.item_estimators",
    "estimation.item_sampling": "estimation.sampling.items",
    "estimation.kappa_metrics": "estimation.topk.kappa",
    "estimation.label_features": "estimation.label_models.features",
    "estimation.label_model": "estimation.label_models.ordinal",
    "estimation.learned_dcg": "estimation.learned_dcg.fit",
    "estimation.learned_leaderboard": "estimation.learned_dcg.leaderboard",
    "estimation.letor": "estimation.formats.letor",
    "estimation.metric_spec": "estimation.metrics.spec",
    "estimation.metrics": "estimation.metrics.values",
    "estimation.moments": "estimation.metrics.moments",
    "estimation.moments_err": "estimation.metrics.moments_err",
    "estimation.planner": "estimation.simulation.planner",
    "estimation.pool": "estimation.sampling.pool",
    "estimation.pool_build": "estimation.sampling.pool_build",
    "estimation.preferences": "estimation.learned_dcg.preferences",
    "estimation.results": "estimation.sampling.results",
    "estimation.run_blocks": "estimation.formats.run_blocks",
    "estimation.sampling": "estimation.sampling.queries",
    "estimation.simulate": "estimation.simulation.loop",
    "estimation.simulate_batch": "estimation.simulation.batch",
    "estimation.sxs_simulation": "estimation.learned_dcg.simulation",
    "estimation.topk": "estimation.topk.state",
    "estimation.topk_procedure": "estimation.topk.procedure",
    "estimation.training_selection": "estimation.training.selection",
    "estimation.trec": "estimation.formats.trec",
}
# The flat modules whose names are now packages.
PACKAGES = {"estimation.learned_dcg", "estimation.metrics", "estimation.sampling", "estimation.topk"}


@pytest.mark.parametrize(
    ("old", "new"), sorted((old, new) for old, new in FLAT_LAYOUT.items() if old not in PACKAGES)
)
def test_an_old_module_path_is_the_module_at_its_new_place(old: str, new: str) -> None:
    if new == "estimation.training.ensembles":
        pytest.importorskip("lightgbm")
    assert importlib.import_module(old) is importlib.import_module(new)


@pytest.mark.parametrize(("package", "module"), sorted((old, FLAT_LAYOUT[old]) for old in PACKAGES))
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


def test_the_old_name_of_the_selection_rules_still_imports_with_a_warning() -> None:
    import estimation

    with pytest.warns(DeprecationWarning, match="estimation.STRATEGIES is now estimation.SELECTION_RULES"):
        old = estimation.STRATEGIES  # type: ignore[attr-defined]
    assert old == estimation.SELECTION_RULES and "elo_qd" in old


def test_the_old_names_in_their_modules_still_import_with_a_warning() -> None:
    from estimation.simulation import planner
    from estimation.training import selection

    with pytest.warns(DeprecationWarning, match="selection.STRATEGIES is now SELECTION_RULES"):
        assert selection.STRATEGIES == selection.SELECTION_RULES  # type: ignore[attr-defined]
    with pytest.warns(DeprecationWarning, match="DRAWABLE_STRATEGIES is now DRAWABLE_RULES"):
        assert selection.DRAWABLE_STRATEGIES == selection.DRAWABLE_RULES  # type: ignore[attr-defined]
    with pytest.warns(DeprecationWarning, match="planner.STRATEGIES is now tuple"):
        assert planner.STRATEGIES == tuple(planner.PLANNED)  # type: ignore[attr-defined]
