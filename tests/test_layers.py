"""The layers of docs/architecture.md, read from the source: the core never imports the sampling
engine or a judging mode's package, the engine imports only the core and the numeric core, the
modes reach the engine through its public surface, and no two of our packages import each other
in a ring."""

from __future__ import annotations

import ast
import functools
from collections import defaultdict
from pathlib import Path

from tests.conftest import REPO_ROOT

PACKAGES = (
    "clients",
    "config",
    "estimation",
    "infrastructure",
    "labeling",
    "uploads",
    "demo",
    "outbound",
    "webhooks",
    "sampling",
    "graded",
    "pairwise",
    "sxs",
    "training",
    "operations",
)
MODES = {"graded", "pairwise", "sxs", "training"}


@functools.cache
def _imported_modules(path: Path) -> frozenset[str]:
    """Dotted names of the modules a module imports, at module level or inside functions (each
    file parsed once per test process: the layer tests read every module several times)."""
    tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
    names: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            names.add(node.module)
    return frozenset(names)


def _imports(path: Path) -> set[str]:
    """Top-level package names a module imports, at module level or inside functions."""
    return {name.split(".")[0] for name in _imported_modules(path)}


def _modules(package: str) -> list[Path]:
    return sorted(path for path in (REPO_ROOT / package).rglob("*.py") if "migrations" not in path.parts)


def package_imports() -> dict[str, set[str]]:
    """package -> the other first-party packages its modules import."""
    graph: dict[str, set[str]] = defaultdict(set)
    for package in PACKAGES:
        for path in _modules(package):
            graph[package] |= {name for name in _imports(path) if name in PACKAGES and name != package}
    return dict(graph)


def _cycle(graph: dict[str, set[str]]) -> list[str] | None:
    """One import ring of the graph, or None."""
    state: dict[str, str] = {}

    def visit(node: str, path: list[str]) -> list[str] | None:
        state[node] = "open"
        for target in sorted(graph.get(node, ())):
            if state.get(target) == "open":
                return [*path[path.index(target) :], target] if target in path else [node, target]
            if target not in state:
                found = visit(target, [*path, target])
                if found:
                    return found
        state[node] = "done"
        return None

    for start in sorted(graph):
        if start not in state:
            found = visit(start, [start])
            if found:
                return found
    return None


def test_it_finds_a_ring_when_there_is_one() -> None:
    assert _cycle({"a": {"b"}, "b": {"c"}, "c": {"a"}}) == ["a", "b", "c", "a"]
    assert _cycle({"a": {"b"}, "b": {"c"}, "c": set()}) is None


def test_it_reads_function_level_imports_too(tmp_path: Path) -> None:
    module = tmp_path / "late.py"
    module.write_text(
        "def f():\n    from pairwise.selectors import pair_progress\n    import labeling.models\n"
    )
    assert _imports(module) == {"pairwise", "labeling"}


def test_it_keeps_every_labeling_module_free_of_engine_and_mode_imports() -> None:
    modules = _modules("labeling")
    assert len(modules) > 30
    above = {"sampling", "webhooks", "outbound", "demo", "uploads", "operations"} | MODES
    offenders = sorted(str(path.relative_to(REPO_ROOT)) for path in modules if above & _imports(path))
    assert offenders == []


def test_it_keeps_the_sampling_engine_below_the_modes() -> None:
    assert package_imports()["sampling"] <= {
        "infrastructure",
        "labeling",
        "uploads",
        "estimation",
        "webhooks",
        "outbound",
    }


def test_it_keeps_operations_on_the_core() -> None:
    """Accounts, health, login limits, proxies and `make run`'s server build on the core (and the
    Celery app's worker command line), and name no mode or engine module."""
    assert package_imports()["operations"] <= {"labeling", "infrastructure", "config"}


def test_it_keeps_webhooks_between_the_core_and_the_engine() -> None:
    """Webhooks build on the core and the outbound policy; the engine emits their events."""
    assert package_imports()["webhooks"] <= {"labeling", "outbound", "infrastructure"}
    assert "webhooks" in package_imports()["sampling"]


def test_it_keeps_the_demo_on_the_core_and_the_modes_registering_with_it() -> None:
    """The demo builds the collection and users through the core's services and the uploads;
    each mode's app adds its campaign (`register_demo`), so the demo names no mode."""
    assert package_imports()["demo"] <= {"labeling", "uploads"}
    assert all("demo" in package_imports()[mode] for mode in MODES)


def test_it_keeps_the_database_backends_below_every_app() -> None:
    """The database backends and connection helpers need only Django."""
    assert package_imports().get("infrastructure", set()) == set()


def test_it_keeps_the_outbound_policy_free_of_the_apps() -> None:
    """The outbound policy reads the settings and hands the numeric core's client a transport;
    it imports none of the apps (only the client's refusal type from the numeric core)."""
    assert package_imports().get("outbound", set()) <= {"estimation"}


def test_it_lets_packages_outside_the_engine_use_only_its_public_surface() -> None:
    """`from sampling import ...` (sampling/__init__.py) is the one way in; its modules are the
    engine's own business."""
    offenders = sorted(
        f"{path.relative_to(REPO_ROOT)}: {name}"
        for package in PACKAGES
        if package != "sampling"
        for path in _modules(package)
        for name in _imported_modules(path)
        if name.startswith("sampling.")
    )
    assert offenders == []


def test_it_has_no_import_ring_between_packages() -> None:
    graph = package_imports()
    assert "labeling" in graph["pairwise"], "the pairwise modes build on the core"
    assert "labeling" in graph["sxs"] and "pairwise" not in graph["sxs"], "sxs builds on the core"
    assert "labeling" in graph["training"] and not {"pairwise", "sxs"} & graph["training"], "training too"
    assert {"labeling", "sampling"} <= graph["graded"] and not {"pairwise", "sxs", "training"} & graph[
        "graded"
    ]
    assert _cycle(graph) is None, graph


def test_it_keeps_the_numeric_core_at_the_bottom() -> None:
    assert package_imports().get("estimation", set()) == set()


def test_it_keeps_the_clients_free_of_the_app() -> None:
    """A CI job runs a client with any Python and nothing else installed: standard library only."""
    import sys

    offenders = sorted(
        f"{path.relative_to(REPO_ROOT)}: {name}"
        for path in _modules("clients")
        for name in _imported_modules(path)
        if name.split(".")[0] not in sys.stdlib_module_names and name.split(".")[0] != "clients"
    )
    assert offenders == []
    assert package_imports().get("clients", set()) == set()


def test_no_test_module_takes_helpers_from_another() -> None:
    # Shared helpers live in fixtures (conftest.py and its plugins) or in tests/<folder>/helpers.py:
    # a helper imported from another test module drags that module's tests into every importer's
    # collection and breaks when the module is reorganised.
    borrowed = sorted(
        f"{path.relative_to(REPO_ROOT)} imports {name}"
        for path in (REPO_ROOT / "tests").rglob("*.py")
        for name in _imported_modules(path)
        if name.startswith("tests.") and name.rsplit(".", 1)[-1].startswith("test_")
    )
    assert borrowed == []
