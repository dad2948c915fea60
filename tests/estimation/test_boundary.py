"""The numeric core must stay free of Django: arrays in, dataclasses out."""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

import estimation

ESTIMATION_DIR = Path(estimation.__file__).resolve().parent


def _imported_modules(path: Path) -> set[str]:
    tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
    names: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module:
            names.add(node.module)
    return names


def test_it_has_no_django_import_in_any_module() -> None:
    modules = sorted(ESTIMATION_DIR.rglob("*.py"))
    assert len(modules) > 10
    offenders = {
        str(path.relative_to(ESTIMATION_DIR)): sorted(
            name
            for name in _imported_modules(path)
            if name.split(".")[0] in {"django", "rest_framework", "celery", "labeling", "config"}
        )
        for path in modules
    }
    assert {name: found for name, found in offenders.items() if found} == {}


# Third-party packages the numeric core may import: numpy/scipy for the maths, qpsolvers for
# the learned-DCG QP, lightgbm for the ELO-DCG bootstrap ensemble, httpx for the endpoint
# judges' chat-completions client (shared by the worker and `python -m estimation judge`; the
# outbound policy and its transport are the server's, in `outbound/`). Anything else is a
# decision to take here, on purpose.
ALLOWED_THIRD_PARTY = {"numpy", "scipy", "qpsolvers", "lightgbm", "httpx"}


def test_it_imports_only_the_standard_library_and_allowed_packages() -> None:
    found = {
        str(path.relative_to(ESTIMATION_DIR)): sorted(
            name
            for name in _imported_modules(path)
            if name.split(".")[0] not in sys.stdlib_module_names
            and name.split(".")[0] not in ALLOWED_THIRD_PARTY | {"estimation"}
        )
        for path in sorted(ESTIMATION_DIR.rglob("*.py"))
    }
    assert {name: names for name, names in found.items() if names} == {}


def test_it_imports_every_module_without_loading_django() -> None:
    modules = [
        ".".join(("estimation", *path.relative_to(ESTIMATION_DIR).with_suffix("").parts)).removesuffix(
            ".__init__"
        )
        for path in ESTIMATION_DIR.rglob("*.py")
        if path.stem != "__main__"
    ]
    script = (
        "import importlib, sys\n"
        f"for name in {modules!r}: importlib.import_module(name)\n"
        "print(sorted(m for m in sys.modules if m.split('.')[0] in ('django', 'celery')))\n"
    )
    completed = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, check=True)
    assert completed.stdout.strip() == "[]"
