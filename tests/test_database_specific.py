"""`make test` runs the whole suite on SQLite, then the database-specific tests a second time on
a throwaway PostgreSQL server: the test modules marked `postgresql`. This test keeps that
selection honest: every module of the application that issues raw SQL, branches on the
database vendor or its features, takes row locks (a no-op on SQLite, whose transactions take
the write lock) or writes with ON CONFLICT is listed here with the test modules that exercise
it, and each of those carries the marker. A new such module fails this test until its tests
are listed and marked.
"""

from __future__ import annotations

import ast
import re
from pathlib import Path

from tests.conftest import REPO_ROOT

APPLICATION_PACKAGES = (
    "infrastructure",
    "labeling",
    "uploads",
    "demo",
    "graded",
    "pairwise",
    "sxs",
    "training",
    "sampling",
    "webhooks",
    "operations",
)

DATABASE_SPECIFIC = re.compile(
    r"connection\.vendor|connection\.cursor\(|connection\.features|prepared_cursor\(|select_for_update|RawSQL"
    r"|\.raw\(|ignore_conflicts|update_conflicts|connections\["
)

# Application module -> the test modules that exercise its database-specific statements.
EXERCISED_BY: dict[str, tuple[str, ...]] = {
    "graded/claims.py": (
        "graded/test_judging.py",
        "graded/test_judging_hot_path.py",
        "labeling/test_leases.py",
        "labeling/test_team.py",
    ),
    "graded/judging.py": ("graded/test_judging.py", "graded/test_judging_hot_path.py"),
    "graded/gold.py": ("graded/test_gold.py",),
    "infrastructure/db.py": ("graded/test_judging_hot_path.py", "labeling/test_import_batches.py"),
    "infrastructure/pair_lookup.py": (
        "labeling/test_pair_lookup.py",
        "labeling/test_imports.py",
        "sampling/test_judges.py",
    ),
    "infrastructure/recompute_lock.py": ("labeling/test_recompute_across_nodes.py",),
    "operations/scoped_tokens.py": ("operations/test_scoped_tokens.py",),
    "operations/single_sign_on.py": ("operations/test_single_sign_on.py",),
    "infrastructure/compiled_queries.py": (
        "labeling/test_compiled_queries.py",
        "graded/test_judging_hot_path.py",
    ),
    "labeling/leases.py": ("labeling/test_leases.py", "graded/test_judging.py", "pairwise/test_services.py"),
    "infrastructure/undo_log.py": ("labeling/test_undo_log.py", "labeling/test_import_batches.py"),
    "labeling/services/campaign_copies.py": (
        "labeling/test_campaign_list.py",
        "labeling/test_own_judgments.py",
    ),
    "labeling/services/campaigns.py": ("labeling/test_campaign_list.py", "labeling/test_team.py"),
    "labeling/services/corrections.py": ("labeling/test_corrections.py",),
    "sampling/arrivals.py": ("graded/test_arrivals_api.py",),
    "sampling/verdicts.py": ("graded/test_verdicts_app.py",),
    "webhooks/deliveries.py": ("webhooks/test_webhooks.py",),
    "uploads/imports.py": (
        "labeling/test_imports.py",
        "labeling/test_import_batches.py",
        "sampling/test_arrival_strata.py",
    ),
    "labeling/services/own_judgments.py": ("labeling/test_own_judgments.py",),
    "labeling/services/preferences.py": ("labeling/test_shortcuts.py",),
    "uploads/run_import_writes.py": ("labeling/test_run_import_writes.py",),
    "uploads/run_imports.py": ("labeling/test_imports.py", "labeling/test_run_import_writes.py"),
    "labeling/services/pools.py": ("labeling/test_imports.py",),
    "pairwise/services/judging.py": ("pairwise/test_races.py", "pairwise/test_services.py"),
    "pairwise/services/setup.py": ("pairwise/test_services.py",),
    "sampling/draws.py": (
        "sampling/test_sampling.py",
        "sampling/test_judges.py",
        "labeling/test_team.py",
        "sampling/test_nothing_built_under_the_lock.py",
    ),
    "sampling/judge_editing.py": ("sampling/test_judge_runs.py",),
    "sampling/judge_runs.py": ("sampling/test_judge_runs.py",),
    "sampling/state.py": ("sampling/test_judges.py", "sampling/test_judge_runs.py"),
    "sxs/services/judging.py": ("sxs/test_services.py", "sxs/test_api.py"),
    "sxs/services/setup.py": ("sxs/test_services.py",),
    "labeling/token_access.py": ("labeling/test_token_access.py",),
    "training/services.py": ("training/test_training.py",),
}


def _database_specific_modules() -> set[str]:
    found = set()
    for package in APPLICATION_PACKAGES:
        for path in (REPO_ROOT / package).rglob("*.py"):
            # The migrations, and the embedded default's own backend (SQLite only: its tests run
            # in the SQLite part).
            if "migrations" in path.parts or "sqlite_backend" in path.parts:
                continue
            if DATABASE_SPECIFIC.search(path.read_text()):
                found.add(path.relative_to(REPO_ROOT).as_posix())
    return found


def _marks(test_module: Path) -> set[str]:
    """The markers of a test module's `pytestmark` (one marker or a list of them)."""
    for node in ast.parse(test_module.read_text()).body:
        if isinstance(node, ast.Assign) and any(
            isinstance(target, ast.Name) and target.id == "pytestmark" for target in node.targets
        ):
            values = node.value.elts if isinstance(node.value, ast.List) else [node.value]
            return {ast.unparse(value) for value in values}
    return set()


def test_every_database_specific_module_is_listed_with_its_tests() -> None:
    found = _database_specific_modules()
    assert found - set(EXERCISED_BY) == set(), "list these modules' tests in EXERCISED_BY and mark them"
    assert set(EXERCISED_BY) - found == set(), "these modules no longer hold database-specific code"


def test_the_listed_tests_run_on_postgresql_too() -> None:
    listed = {test for tests in EXERCISED_BY.values() for test in tests}
    unmarked = sorted(
        test for test in listed if "pytest.mark.postgresql" not in _marks(REPO_ROOT / "tests" / test)
    )
    assert unmarked == [], "add `pytestmark = pytest.mark.postgresql` to these modules"


def test_it_finds_each_kind_of_database_specific_statement() -> None:
    for statement in (
        "if connection.vendor == 'postgresql':",
        "with connection.cursor() as cursor:",
        "connection.features.has_select_for_update_skip_locked",
        "Task.objects.select_for_update().get(pk=1)",
        "Judgment.objects.raw('SELECT 1')",
        "Skip.objects.bulk_create(rows, ignore_conflicts=True)",
    ):
        assert DATABASE_SPECIFIC.search(statement), statement
    assert not DATABASE_SPECIFIC.search("Task.objects.filter(pk=1).update(status='open')")
