"""The house rules `make lint` checks on the source, without a database or Django: no import circle between
the modules of an app, no app module over 400 lines, and no status written outside its state machine.

Run alone with ``python -m pytest -q -p no:django --confcutdir=tests/house tests/house``.
"""

from __future__ import annotations

import ast
from pathlib import Path

import grimp
import pytest

ROOT = Path(__file__).resolve().parents[2]
APPS = ("partners", "catalog", "quotes", "orders", "payouts")
MAX_MODULE_LINES = 400

# Every status with a state machine: the model, its field, the module holding its one writer (the only
# app module that may name the field in a write), and the status a new row may be created with.
MACHINES = (
    ("Order", "status", "orders/services/__init__.py", "ACCEPTED"),
    ("Event", "status", "catalog/services/events.py", "SCHEDULED"),
    ("Payout", "status", "payouts/services/progression.py", "PENDING"),
    ("Charge", "status", "payouts/services/charges.py", "PENDING"),
    ("Charge", "refund_status", "payouts/services/refunds.py", "NONE"),
    ("Partner", "status", "partners/services.py", "ACTIVE"),
    ("WebhookEndpoint", "status", "orders/webhooks/machines.py", "ENABLED"),
    ("WebhookDelivery", "state", "orders/webhooks/machines.py", "PENDING"),
    ("WebhookAttempt", "status", "orders/webhooks/machines.py", "PENDING"),
    ("TransferProgress", "state", "orders/transfers/decision/state.py", "NONE"),
    ("TransferCase", "state", "orders/transfers/decision/state.py", "OPEN"),
)
# The names a row of each model goes by in app code (``charge.status = …``).
ROW_NAMES = {
    "Order": {"order"},
    "Event": {"event", "concert"},
    "Payout": {"payout"},
    "Charge": {"charge"},
    "Partner": {"partner"},
    "WebhookEndpoint": {"endpoint"},
    "WebhookDelivery": {"delivery"},
    "WebhookAttempt": {"attempt"},
    "TransferCase": {"case"},
    "TransferProgress": {"progress"},
}
# Names a row of any model goes by: counted as a row of each stateful model the module imports.
GENERIC_ROW_NAMES = {"locked", "obj", "row", "instance", "fresh", "current", "item"}
WRITES = {"create", "update", "get_or_create", "update_or_create", "bulk_create"}


def app_files() -> list[Path]:
    return sorted(
        path
        for app in APPS
        for path in (ROOT / app).rglob("*.py")
        if "migrations" not in path.relative_to(ROOT).parts
    )


# --- import circles -----------------------------------------------------------------------------------------
def strongly_connected(nodes: set[str], edges: dict[str, set[str]]) -> list[set[str]]:
    """Tarjan's strongly connected components, without recursion."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    on_stack: set[str] = set()
    stack: list[str] = []
    components: list[set[str]] = []
    counter = 0
    for root in sorted(nodes):
        if root in index:
            continue
        work = [(root, iter(sorted(edges.get(root, ()))))]
        index[root] = low[root] = counter
        counter += 1
        stack.append(root)
        on_stack.add(root)
        while work:
            node, children = work[-1]
            advanced = False
            for child in children:
                if child not in index:
                    index[child] = low[child] = counter
                    counter += 1
                    stack.append(child)
                    on_stack.add(child)
                    work.append((child, iter(sorted(edges.get(child, ())))))
                    advanced = True
                    break
                if child in on_stack:
                    low[node] = min(low[node], index[child])
            if advanced:
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[node])
            if low[node] == index[node]:
                component = set()
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    component.add(member)
                    if member == node:
                        break
                components.append(component)
    return components


def import_circles(app: str, graph) -> list[set[str]]:
    modules = {m for m in graph.modules if m == app or m.startswith(f"{app}.")}
    modules = {m for m in modules if ".migrations" not in m}
    edges = {m: graph.find_modules_directly_imported_by(m) & modules for m in modules}
    return [c for c in strongly_connected(modules, edges) if len(c) > 1]


@pytest.fixture(scope="module")
def graph():
    return grimp.build_graph(*APPS, "config", include_external_packages=False)


@pytest.mark.parametrize("app", APPS)
def test_no_import_circle_between_the_modules_of_an_app(app, graph):
    circles = import_circles(app, graph)
    assert circles == [], f"{app}: modules that import one another in a circle: " + "; ".join(
        " ⇄ ".join(sorted(c)) for c in circles
    )


def test_the_circle_finder_finds_a_circle():
    edges = {"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}
    assert strongly_connected({"a", "b", "c", "d"}, edges) == [{"a", "b", "c"}, {"d"}]


# --- module size --------------------------------------------------------------------------------------------
def test_no_app_module_is_over_400_lines():
    long = {
        str(path.relative_to(ROOT)): n
        for path in app_files()
        if (n := len(path.read_text(encoding="utf-8").splitlines())) > MAX_MODULE_LINES
    }
    assert long == {}, f"app modules over {MAX_MODULE_LINES} lines (split them by what they hold): {long}"


# --- status writes ------------------------------------------------------------------------------------------
def _root_name(node: ast.AST) -> str | None:
    """``Charge`` for ``Charge.objects.filter(...).update``; ``None`` for anything not rooted in a name."""
    while True:
        if isinstance(node, ast.Call):
            node = node.func
        elif isinstance(node, ast.Attribute):
            node = node.value
        elif isinstance(node, ast.Name):
            return node.id
        else:
            return None


def _is_initial(value: ast.AST, initial: str) -> bool:
    """``Model.Status.PENDING`` / ``S.PENDING`` / ``"pending"`` for the initial status ``PENDING``."""
    if isinstance(value, ast.Attribute):
        return value.attr == initial
    return isinstance(value, ast.Constant) and value.value == initial.lower()


def status_writes(source: str, path: str) -> list[str]:
    """Every write of a machine's field in ``source`` outside that machine's module (``path`` relative to the
    repository): assignments to ``<row>.<field>``, and ``<field>=`` in a model's create/update calls (a
    creation with the initial status is allowed)."""
    tree = ast.parse(source)
    imported = {
        alias.asname or alias.name
        for node in ast.walk(tree)
        if isinstance(node, ast.ImportFrom)
        for alias in node.names
    }
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Assign | ast.AugAssign | ast.AnnAssign):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            for target in targets:
                for leaf in ast.walk(target):
                    if not isinstance(leaf, ast.Attribute) or not isinstance(leaf.value, ast.Name):
                        continue
                    for model, field, home, _ in MACHINES:
                        row = leaf.value.id.lower()
                        named = row in ROW_NAMES[model] or (row in GENERIC_ROW_NAMES and model in imported)
                        if leaf.attr == field and path != home and named:
                            found.append(f"{path}:{node.lineno} {leaf.value.id}.{field} = …")
        if isinstance(node, ast.Call):
            func = node.func
            root = _root_name(func)
            if not (isinstance(func, ast.Attribute) and func.attr in WRITES):
                continue  # a model built in memory (``Event(status=…)``) is written by whoever saves it
            for model, field, home, initial in MACHINES:
                if path == home or root != model:
                    continue
                creating = func.attr != "update"
                values = [kw.value for kw in node.keywords if kw.arg == field]
                for kw in node.keywords:
                    if kw.arg == "defaults" and isinstance(kw.value, ast.Dict):
                        values += [
                            v
                            for k, v in zip(kw.value.keys, kw.value.values, strict=True)
                            if isinstance(k, ast.Constant) and k.value == field
                        ]
                for value in values:
                    if not (creating and _is_initial(value, initial)):
                        found.append(f"{path}:{node.lineno} {model} … {field}=")
    return list(dict.fromkeys(found))


def test_no_status_is_written_outside_its_state_machine():
    found = []
    for path in app_files():
        found += status_writes(path.read_text(encoding="utf-8"), str(path.relative_to(ROOT)))
    assert found == [], "statuses written outside their transition function:\n" + "\n".join(found)


@pytest.mark.parametrize(
    "line",
    [
        "charge.status = Charge.Status.FAILED",
        "Charge.objects.filter(pk=1).update(status='failed')",
        "Partner.objects.create(name='x', status=Partner.Status.SUSPENDED)",
        "WebhookDelivery.objects.filter(pk=1).update(state=WebhookDelivery.State.FAILED)",
        "Charge.objects.get_or_create(order_id=1, defaults={'status': 'succeeded'})",
        "locked_endpoint = 1; endpoint.status = 'disabled'",
        "from .models import WebhookEndpoint\nlocked.status = 'enabled'",
        "attempt.status = WebhookAttempt.Status.FAILED",
        "from .models import WebhookAttempt\nlocked.status = 'failed'",
    ],
)
def test_the_status_scan_finds_a_write_outside_a_machine(line):
    assert status_writes(line, "payouts/somewhere.py")


@pytest.mark.parametrize(
    "line",
    [
        "Partner.objects.create(name='x', status=Partner.Status.ACTIVE)",
        "Charge.objects.filter(status=Charge.Status.FAILED).count()",
        "WebhookAttempt.objects.create(number=1, status=WebhookAttempt.Status.PENDING)",
        "Event(id=1, status=status)",
        "WebhookEndpoint.objects.filter(status='enabled').update(url='https://example.com')",
    ],
)
def test_the_status_scan_leaves_reads_and_initial_creations_alone(line):
    assert status_writes(line, "payouts/somewhere.py") == []
