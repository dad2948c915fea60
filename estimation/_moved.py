"""The module paths of the flat layout (before the subpackages) keep working.

Scripts that researchers wrote against ``estimation.trec``, ``estimation.planner`` and the other
flat modules import the module at its new place under its old name (the same module object, so
``estimation.trec.read_run is estimation.formats.trec.read_run``). The four flat modules whose
names are now packages (``metrics``, ``sampling``, ``learned_dcg``, ``topk``) answer their old
names through the package's ``__getattr__`` (`forward_to`), loaded only when asked for.
"""

from __future__ import annotations

import importlib
import importlib.abc
import importlib.machinery
import importlib.util
import sys
from collections.abc import Callable
from types import ModuleType
from typing import Any

# old flat module -> its place in the subpackages
MOVED = {
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
    "estimation.learned_leaderboard": "estimation.learned_dcg.leaderboard",
    "estimation.letor": "estimation.formats.letor",
    "estimation.metric_spec": "estimation.metrics.spec",
    "estimation.moments": "estimation.metrics.moments",
    "estimation.moments_err": "estimation.metrics.moments_err",
    "estimation.planner": "estimation.simulation.planner",
    "estimation.pool": "estimation.sampling.pool",
    "estimation.pool_build": "estimation.sampling.pool_build",
    "estimation.preferences": "estimation.learned_dcg.preferences",
    "estimation.results": "estimation.sampling.results",
    "estimation.run_blocks": "estimation.formats.run_blocks",
    "estimation.simulate": "estimation.simulation.loop",
    "estimation.simulate_batch": "estimation.simulation.batch",
    "estimation.sxs_simulation": "estimation.learned_dcg.simulation",
    "estimation.topk_procedure": "estimation.topk.procedure",
    "estimation.training_selection": "estimation.training.selection",
    "estimation.trec": "estimation.formats.trec",
}
# old flat module whose name is now a package -> the module that holds its names
FORWARDED = {
    "estimation.learned_dcg": "estimation.learned_dcg.fit",
    "estimation.metrics": "estimation.metrics.values",
    "estimation.sampling": "estimation.sampling.queries",
    "estimation.topk": "estimation.topk.state",
}


class _MovedModules(importlib.abc.MetaPathFinder, importlib.abc.Loader):
    """Imports an old module path as the module at its new place."""

    def find_spec(
        self, fullname: str, path: Any = None, target: ModuleType | None = None
    ) -> importlib.machinery.ModuleSpec | None:
        if fullname not in MOVED:
            return None
        return importlib.util.spec_from_loader(fullname, self)

    def create_module(self, spec: importlib.machinery.ModuleSpec) -> ModuleType:
        return importlib.import_module(MOVED[spec.name])

    def exec_module(self, module: ModuleType) -> None:
        """Nothing to run: the module ran at its new place."""


def install() -> None:
    """Answer the old module paths (once per process)."""
    if not any(isinstance(finder, _MovedModules) for finder in sys.meta_path):
        sys.meta_path.append(_MovedModules())


def forward_to(package: str) -> Callable[[str], Any]:
    """A package's ``__getattr__`` that finds the names of the flat module it replaced."""

    def __getattr__(name: str) -> Any:
        if name.startswith("__"):
            raise AttributeError(name)
        try:
            return getattr(importlib.import_module(FORWARDED[package]), name)
        except AttributeError:
            raise AttributeError(f"module {package!r} has no attribute {name!r}") from None

    return __getattr__
