"""The settings as `make lint` checks them, without a database: every setting is assigned by its name (``grep -rn
"^NAME =" config/`` finds it), none is set behind ``globals()``/``vars()``, no default depends on who runs the
settings (tests set what they need), ``config/settings.py`` stays under 400 lines, and the benchmark's hooks stay
under ``bench/``: no module of the service imports it or reads a ``BENCH_`` variable.

Run alone with ``python -m pytest -q -p no:django --confcutdir=tests/house tests/house``.
"""

from __future__ import annotations

import ast
import os
import re
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
SETTINGS = ROOT / "config" / "settings.py"
SETTINGS_FILES = [SETTINGS, *sorted((ROOT / "config" / "settings_parts").glob("*.py"))]
SERVICE = ("config", "partners", "catalog", "quotes", "orders", "payouts")
MAX_SETTINGS_LINES = 400
ASSIGNED = re.compile(r"^([A-Z][A-Z0-9_]*) = ", re.MULTILINE)


def settings_names() -> set[str]:
    """The upper-case names of ``config.settings`` (what Django reads), imported in a clean environment."""
    code = "import config.settings as s; print('\\n'.join(n for n in vars(s) if n.isupper()))"
    env = {
        "PATH": os.environ.get("PATH", ""),
        "HOME": os.environ.get("HOME", "/"),
        # Every shape needs both; named, never reached.
        "DATABASE_URL": "postgres://postgres@127.0.0.1:1/none",
        "REDIS_URL": "redis://127.0.0.1:1/0",
    }
    result = subprocess.run(
        [sys.executable, "-c", code], cwd=ROOT, env=env, capture_output=True, text=True, timeout=60
    )
    assert result.returncode == 0, result.stderr
    return set(result.stdout.split())


def namespace_writes(source: str) -> list[str]:
    """Calls that write settings without naming them: ``globals()``, ``vars()``, ``locals()``, ``setattr``."""
    return [
        f"line {node.lineno}: {node.func.id}(…)"
        for node in ast.walk(ast.parse(source))
        if isinstance(node, ast.Call)
        and isinstance(node.func, ast.Name)
        and node.func.id in {"globals", "vars", "locals", "setattr"}
    ]


def test_every_setting_is_assigned_by_its_name():
    assigned = {
        name for path in SETTINGS_FILES for name in ASSIGNED.findall(path.read_text(encoding="utf-8"))
    }
    names = settings_names()
    assert "SECRET_KEY" in names and "INBOUND_CHANNELS" in names and "EMAIL_BACKEND" in names
    assert sorted(names - assigned) == []


def test_no_setting_is_written_through_the_module_namespace():
    found = {
        str(path.relative_to(ROOT)): writes
        for path in SETTINGS_FILES
        if (writes := namespace_writes(path.read_text(encoding="utf-8")))
    }
    assert found == {}


def test_the_namespace_scan_finds_a_hidden_setting():
    assert namespace_writes('vars().update(env.email_url("EMAIL_URL"))\nX = 1\n') == ["line 1: vars(…)"]
    assert namespace_writes("globals().update(parts)\n") == ["line 1: globals(…)"]


def test_no_default_depends_on_the_test_run():
    readers = [str(p.relative_to(ROOT)) for p in SETTINGS_FILES if "TESTING" in p.read_text(encoding="utf-8")]
    assert readers == []


def test_the_settings_module_stays_under_400_lines():
    assert len(SETTINGS.read_text(encoding="utf-8").splitlines()) < MAX_SETTINGS_LINES


def test_the_service_never_reaches_into_the_benchmark():
    found = []
    for top in SERVICE:
        for path in (ROOT / top).rglob("*.py"):
            source = path.read_text(encoding="utf-8")
            where = str(path.relative_to(ROOT))
            if "BENCH_" in source:
                found.append(f"{where}: reads a BENCH_ variable")
            for node in ast.walk(ast.parse(source)):
                if isinstance(node, ast.Import):
                    modules = [alias.name for alias in node.names]
                elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
                    modules = [node.module]
                else:
                    continue
                found += [f"{where}: imports {m}" for m in modules if m.split(".")[0] == "bench"]
    assert found == []
