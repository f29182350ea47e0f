"""Every third-party module the service imports is installed by its own dependencies, not only by the
development extras: a production install (``pip install .``) starts and serves.

Run alone with ``python -m pytest -q -p no:django --confcutdir=tests/house tests/house``.
"""

from __future__ import annotations

import ast
import importlib.metadata
import re
import sys
import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
# The code a deployment runs: the project package and its apps, the management commands included.
SERVICE = ("config", "partners", "catalog", "quotes", "orders", "payouts", "manage.py")
LOCAL = {"config", "partners", "catalog", "quotes", "orders", "payouts", "bench", "tests"}


def _name(requirement: str) -> str:
    return re.split(r"[\s\[<>=!~;]", requirement.strip(), maxsplit=1)[0].lower().replace("_", "-")


def _extras(requirement: str) -> list[str]:
    named = re.match(r"[^\[;]*\[([^\]]+)\]", requirement)
    return [extra.strip() for extra in named.group(1).split(",")] if named else []


def _requires(requirement: str, seen: set[str]) -> None:
    """The distribution a requirement names and what it requires, with the extras it names, recursively."""
    distribution, extras = _name(requirement), _extras(requirement)
    key = f"{distribution}[{','.join(sorted(extras))}]"
    if key in seen:
        return
    seen.update({key, distribution})
    try:
        requires = importlib.metadata.requires(distribution) or []
    except importlib.metadata.PackageNotFoundError:
        return
    for sub in requires:
        marker = re.search(r"extra\s*==\s*['\"]([^'\"]+)['\"]", sub)
        if marker is None or marker.group(1) in extras:
            _requires(sub.split(";")[0], seen)


def installed_by_the_service() -> set[str]:
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    seen: set[str] = set()
    for requirement in project["dependencies"]:
        _requires(requirement, seen)
    return seen


def imported_modules() -> dict[str, str]:
    """Top-level module → the first file importing it, for every absolute import of the service's code."""
    found: dict[str, str] = {}
    files = [ROOT / "manage.py"] + [p for top in SERVICE[:-1] for p in (ROOT / top).rglob("*.py")]
    for path in files:
        for node in ast.walk(ast.parse(path.read_text(), filename=str(path))):
            if isinstance(node, ast.Import):
                names = [alias.name for alias in node.names]
            elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
                names = [node.module]
            else:
                continue
            for name in names:
                found.setdefault(name.split(".")[0], str(path.relative_to(ROOT)))
    return found


def test_every_imported_package_is_a_dependency_of_the_service():
    installed = installed_by_the_service()
    providers = importlib.metadata.packages_distributions()
    missing = []
    for module, where in sorted(imported_modules().items()):
        if module in LOCAL or module in sys.stdlib_module_names or module == "__future__":
            continue
        distributions = {d.lower().replace("_", "-") for d in providers.get(module, [])}
        assert distributions, f"{module} (imported by {where}) is not installed at all"
        if not distributions & installed:
            missing.append(f"{module} (imported by {where}, from {', '.join(sorted(distributions))})")
    assert missing == [], "imported but installed only by the development extras: " + "; ".join(missing)
