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


def test_no_app_below_partners_imports_a_higher_one():
    """No app imports a higher one; the portal pages in partners are the contract's only listed exception
    until they move to the apps whose data they show."""
    result = subprocess.run(
        [str(BIN / "lint-imports"), "--no-cache"], cwd=ROOT, capture_output=True, text=True, timeout=300
    )
    broken = re.findall(r"^- (\S+) -> (\S+) \(l\.\d+\)$", result.stdout, re.MULTILINE)
    offenders = {importer for importer, _ in broken if not importer.startswith("partners.")}
    assert offenders == set(), result.stdout
    assert broken == [], result.stdout
    assert result.returncode == 0, result.stdout


def test_orders_never_names_payouts():
    hits = [
        str(path.relative_to(ROOT))
        for path in (ROOT / "orders").rglob("*.py")
        if "payouts" in path.read_text()
    ]
    assert hits == []
