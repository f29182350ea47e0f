"""The suite passes on any day of the year: a literal date in a test module stands only under a frozen clock, or
lies more than a year in the past (history, which the calendar never overtakes).

A literal is under a frozen clock when it sits inside a ``with …travel(…)`` block, inside a function that freezes
the clock itself (a ``time_machine`` argument, a ``travel``/``move_to`` call, a ``travel`` or ``mark.travel``
decorator), or in a module whose ``pytestmark`` holds ``mark.travel`` or whose autouse fixture freezes the
clock. Dates a test computes from ``now`` are not literals.

Run alone with ``python -m pytest -q -p no:django --confcutdir=tests/house tests/house``.
"""

from __future__ import annotations

import ast
import re
from datetime import date, timedelta
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
TESTS = ROOT / "tests"
MONTHS = "Jan|Feb|Mar|Apr|May|Jun|Jul|Aug|Sep|Oct|Nov|Dec"
MONTH_NUMBER = {name: i for i, name in enumerate(MONTHS.split("|"), start=1)}
ISO = re.compile(r"(?<!\d)((?:19|20|21)\d\d)-([01]\d)-([0-3]\d)(?!\d)")
DAY_MONTH_YEAR = re.compile(rf"(?<!\d)([0-3]?\d) ({MONTHS})[a-z]* ((?:19|20|21)\d\d)(?!\d)")
MONTH_DAY_YEAR = re.compile(rf"\b({MONTHS})[a-z]* ([0-3]?\d), ((?:19|20|21)\d\d)(?!\d)")
DATE_CALLS = {"datetime", "date"}
FREEZERS = ("travel", "move_to", "time_machine")


def literal_dates(node: ast.AST) -> list[date]:
    """The calendar dates a string constant or a ``datetime(YYYY, M, D…)`` call spells out."""
    found: list[tuple[int, int, int]] = []
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        found += [(int(y), int(m), int(d)) for y, m, d in ISO.findall(node.value)]
        found += [(int(y), MONTH_NUMBER[m], int(d)) for d, m, y in DAY_MONTH_YEAR.findall(node.value)]
        found += [(int(y), MONTH_NUMBER[m], int(d)) for m, d, y in MONTH_DAY_YEAR.findall(node.value)]
    elif isinstance(node, ast.Call):
        name = node.func.attr if isinstance(node.func, ast.Attribute) else getattr(node.func, "id", "")
        args = node.args[:3]
        literal_ints = all(isinstance(a, ast.Constant) and isinstance(a.value, int) for a in args)
        if name in DATE_CALLS and len(args) == 3 and literal_ints:
            found.append(tuple(a.value for a in args))
    dates = []
    for y, m, d in found:
        try:
            dates.append(date(y, m, d))
        except ValueError:
            continue  # not a calendar date (a version string, a counter)
    return dates


def _freezes(node: ast.AST) -> bool:
    """Whether ``node``'s own source freezes the clock."""
    for child in ast.walk(node):
        if isinstance(child, ast.arg) and child.arg == "time_machine":
            return True
        if isinstance(child, ast.Attribute) and child.attr in FREEZERS:
            return True
        if isinstance(child, ast.Name) and child.id in ("travel", "time_machine"):
            return True
    return False


def _autouse_freeze(tree: ast.Module) -> bool:
    for node in tree.body:
        marks = isinstance(node, ast.Assign) and any(
            getattr(t, "id", "") == "pytestmark" for t in node.targets
        )
        if marks and "mark.travel(" in ast.unparse(node.value):
            return True
        if isinstance(node, ast.FunctionDef) and _freezes(node):
            for decorator in node.decorator_list:
                if "autouse" in ast.unparse(decorator):
                    return True
    return False


def unfrozen_dates(source: str, today: date) -> list[tuple[int, date]]:
    """(line, date) of every literal date in ``source`` that is neither history nor under a frozen clock."""
    tree = ast.parse(source)
    if _autouse_freeze(tree):
        return []
    history = today - timedelta(days=366)
    out: list[tuple[int, date]] = []

    def visit(node: ast.AST, frozen: bool) -> None:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            frozen = frozen or _freezes(node)
        elif isinstance(node, (ast.With, ast.AsyncWith)):
            frozen = frozen or any(_freezes(item.context_expr) for item in node.items)
        if not frozen:
            for when in literal_dates(node):
                if when > history:
                    out.append((node.lineno, when))
        for child in ast.iter_child_nodes(node):
            visit(child, frozen)

    visit(tree, False)
    return out


def test_no_test_module_holds_a_date_the_calendar_will_overtake():
    today = date.today()
    offenders = [
        f"{path.relative_to(ROOT)}:{line}: {when.isoformat()}"
        for path in sorted(TESTS.rglob("*.py"))
        if path.parent != TESTS / "house"
        for line, when in unfrozen_dates(path.read_text(encoding="utf-8"), today)
    ]
    assert offenders == [], (
        "freeze the clock (time_machine) or build these dates from now:\n  " + "\n  ".join(offenders)
    )


@pytest.mark.parametrize(
    "source",
    [
        'WHEN = "2026-12-12 20:00"',
        "def test_x():\n    assert f() == datetime(2026, 11, 28, 1, 0)",
        'def test_x():\n    assert "Nov 27, 2026 20:00 EST" in body',
        'def test_x():\n    header = "Wed, 25 Nov 2026 10:01:00 GMT"',
        "@pytest.fixture\ndef clock(time_machine):\n    pass\n\ndef test_x():\n    when = date(2027, 1, 2)",
    ],
)
def test_the_rule_finds_a_date_outside_a_frozen_clock(source):
    assert unfrozen_dates(source, date(2026, 11, 27)) != []


@pytest.mark.parametrize(
    "source",
    [
        'LONG_AGO = "2024-05-02T12:00:00Z"',
        "def test_x():\n    with time_machine.travel(datetime(2026, 11, 28)):\n        pass",
        "def test_x(time_machine):\n    time_machine.move_to(datetime(2026, 11, 28))",
        "@time_machine.travel('2026-11-28')\ndef test_x():\n    pass",
        "@pytest.fixture(autouse=True)\ndef clock(time_machine):\n    time_machine.move_to(X)\n"
        "WHEN = datetime(2026, 11, 28, 1, 0)",
        'VERSION = "2026-13-45"',
        "pytestmark = [pytest.mark.django_db, pytest.mark.travel(datetime(2026, 11, 21))]\nWHEN = '2026-12-01'",
        "@pytest.mark.travel('2026-11-21')\ndef test_x():\n    assert day == '2026-11-28'",
    ],
)
def test_the_rule_accepts_history_and_frozen_clocks(source):
    assert unfrozen_dates(source, date(2026, 11, 27)) == []
