"""The test data has one factory per model, in the factories module of the model's app (docs/development.md "Tests and markers")."""

import ast
from pathlib import Path

TESTS = Path(__file__).resolve().parent


def _factory_models() -> list[tuple[str, str]]:
    """(model name, module) of every factory_boy factory class that names a model in its Meta."""
    found = []
    for path in sorted(TESTS.rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text())):
            if not isinstance(node, ast.ClassDef):
                continue
            for meta in (n for n in node.body if isinstance(n, ast.ClassDef) and n.name == "Meta"):
                for assign in (n for n in meta.body if isinstance(n, ast.Assign)):
                    if any(isinstance(t, ast.Name) and t.id == "model" for t in assign.targets):
                        found.append((ast.unparse(assign.value), str(path.relative_to(TESTS))))
    return found


def test_each_model_has_one_factory_in_its_apps_factories_module():
    found = _factory_models()
    models = [model for model, _ in found]
    assert sorted(models) == sorted(set(models)), found
    assert {"Partner", "Venue", "Performer", "Event", "Section", "Row", "Quote"} <= set(models)
    assert all(module.endswith("/factories.py") for _, module in found), found
