"""The payment platforms' folders, read from the disk: each folder under ``payouts/platform/`` is a room of its
own. No folder imports another (directly or through any chain), and nothing outside a folder imports it: the
service reaches a platform by its name in ``payouts/platform/registry.py``. A new platform's folder is checked
as soon as it exists, with no contract to add (part of ``make lint``).
"""

from __future__ import annotations

import itertools
import sys
from pathlib import Path

import grimp
import pytest

ROOT = Path(__file__).resolve().parents[2]
PLATFORM = ROOT / "payouts" / "platform"
APPS = ("config", "partners", "catalog", "quotes", "orders", "payouts")


def platform_folders(root: Path = PLATFORM) -> list[str]:
    return sorted(
        f"payouts.platform.{path.name}" for path in root.iterdir() if (path / "__init__.py").is_file()
    )


@pytest.fixture(scope="module")
def graph():
    sys.path.insert(0, str(ROOT))
    try:
        return grimp.build_graph(*APPS, cache_dir=None)
    finally:
        sys.path.remove(str(ROOT))


def test_the_folders_are_found():
    assert {"payouts.platform.sandbox", "payouts.platform.stripe"} <= set(platform_folders())


def test_no_platform_folder_imports_another(graph):
    chains = [
        (a, b)
        for a, b in itertools.permutations(platform_folders(), 2)
        if graph.chain_exists(importer=a, imported=b, as_packages=True)
    ]
    assert chains == []


def test_nothing_outside_a_platform_folder_imports_it(graph):
    found = []
    for folder in platform_folders():
        inside = {folder, *graph.find_descendants(folder)}
        for module in inside:
            found += [
                (importer, module)
                for importer in graph.find_modules_that_directly_import(module)
                if importer not in inside
            ]
    assert found == []
