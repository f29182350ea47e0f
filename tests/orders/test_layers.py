"""The apps' direction: config < partners < catalog < quotes < orders < payouts, checked by import-linter in
``make lint`` (``[tool.importlinter]`` in pyproject.toml)."""

import re
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
BIN = Path(sys.executable).parent


def test_make_lint_runs_the_import_layers_contract():
    makefile = (ROOT / "Makefile").read_text()
    lint = makefile.split("\nlint:", 1)[1].split("\n\n", 1)[0]
    assert "lint-imports" in lint
    config = (ROOT / "pyproject.toml").read_text()
    assert 'layers = ["payouts", "orders", "quotes", "catalog", "partners", "config"]' in config


def test_the_contract_lists_no_exception():
    config = (ROOT / "pyproject.toml").read_text()
    assert "ignore_imports" not in config.split("[tool.importlinter]", 1)[1]


def test_no_app_imports_a_higher_one():
    """No app imports a higher one, the portal's pages included: each lives in the app whose data it shows."""
    result = subprocess.run(
        [str(BIN / "lint-imports"), "--no-cache"], cwd=ROOT, capture_output=True, text=True, timeout=300
    )
    broken = re.findall(r"^- (\S+) -> (\S+) \(l\.\d+\)$", result.stdout, re.MULTILINE)
    assert broken == [], result.stdout
    assert result.returncode == 0, result.stdout


def test_orders_never_names_payouts():
    """Not an import, a task name or a string of payouts' (a cited section's title may say "payouts")."""
    citation = re.compile(
        "(README|docs/[\\w./-]+\\.md)" + r' "[^"]*"'
    )  # split: the pattern is no citation itself
    hits = [
        str(path.relative_to(ROOT))
        for path in (ROOT / "orders").rglob("*.py")
        if "payouts" in citation.sub("", path.read_text())
    ]
    assert hits == []


def test_portal_views_never_query_the_orm_themselves():
    """Portal views call selectors and services: no ``.objects.`` in any app's portal modules."""
    apps = ("partners", "catalog", "quotes", "orders", "payouts")
    patterns = ("portal.py", "portal/*.py", "*/portal.py")
    modules = [path for app in apps for pattern in patterns for path in (ROOT / app).glob(pattern)]
    found = {str(path.relative_to(ROOT).parent).removesuffix("/portal") for path in modules}
    assert found == {"orders", "orders/webhooks", "partners", "payouts"}
    hits = [str(path.relative_to(ROOT)) for path in modules if ".objects." in path.read_text()]
    assert hits == []
