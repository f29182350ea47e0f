"""Citations in the code resolve: every ``README "X"`` or ``docs/partners/orders.md "X › Y"`` names a heading of
README.md or of that file under docs/, no code names a file the repository does not hold, and no comment
cites a contract file that does not ship with the project. The documents' relative links resolve too: every
``[text](path#anchor)`` of README.md, docs/ and bench/README.md names an existing file and, with an anchor, an
existing heading of it.

A heading is named by its text without a trailing parenthesis (``## Catalog (scope `events:read`)`` is
"Catalog"); ``X › Y`` means a heading Y nested under a heading X.
"""

import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
APPS = ("catalog", "config", "orders", "partners", "payouts", "quotes", "tests", "templates")
SUFFIXES = {".py", ".html", ".txt", ".toml"}
SEPARATOR = " › "

CITATION = re.compile(r'(README|docs/[\w./-]+\.md) "([^"\n]+)"')
# Built from pieces so that this file does not match itself.
UNSHIPPED = re.compile(
    "|".join(
        [
            r"\b" + "DECISIONS" + r"\b",
            r"\b[Ss]pec" + r" \d",
            r"\(" + r"spec[ ,)]",
            r"\bspec" + r"\)",
            r"\bspec" + "'s",
            "partner-api" + "-spec",
        ]
    )
)
FENCE = re.compile(r"^\s*(```|~~~)")
HEADING = re.compile(r"^(#{1,6})\s+(.*?)\s*#*\s*$")
TRAILING_PARENTHESIS = re.compile(r"\s*\([^()]*\)\s*$")


def heading_paths(document: Path) -> set[tuple[str, ...]]:
    """Every chain of headings (outermost first) that leads to a heading of the document, in every length."""
    paths: set[tuple[str, ...]] = set()
    stack: list[tuple[int, str]] = []
    in_fence = False
    for line in document.read_text(encoding="utf-8").splitlines():
        if FENCE.match(line):
            in_fence = not in_fence
            continue
        match = None if in_fence else HEADING.match(line)
        if not match:
            continue
        level, name = len(match.group(1)), TRAILING_PARENTHESIS.sub("", match.group(2))
        while stack and stack[-1][0] >= level:
            stack.pop()
        stack.append((level, name))
        # "Y" alone, or "X › Y" for any heading X that Y is nested under (levels between may be skipped).
        paths.add((name,))
        paths.update((ancestor, name) for _, ancestor in stack[:-1])
    return paths


def source_files() -> list[Path]:
    files = []
    for app in APPS:
        for path in (ROOT / app).rglob("*"):
            if path.suffix in SUFFIXES and path.is_file() and "__pycache__" not in path.parts:
                files.append(path)
    return sorted(files)


def citations() -> list[tuple[str, str, str]]:
    found = []
    for path in source_files():
        if path == Path(__file__).resolve():
            continue
        text = path.read_text(encoding="utf-8")
        # A citation may wrap onto the next line of a comment or a docstring.
        text = re.sub(r"\n\s*(#\s*)?", " ", text)
        for document, name in CITATION.findall(text):
            found.append((str(path.relative_to(ROOT)), document, name))
    return found


def test_code_cites_the_readme_and_docs_and_nothing_else():
    offenders = []
    for path in source_files():
        if path == Path(__file__).resolve():
            continue
        for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), start=1):
            if UNSHIPPED.search(line):
                offenders.append(f"{path.relative_to(ROOT)}:{number}: {line.strip()}")
    assert offenders == []


def documents() -> list[Path]:
    return [ROOT / "README.md", *sorted((ROOT / "docs").glob("**/*.md")), ROOT / "bench" / "README.md"]


def test_the_documents_do_not_point_at_unshipped_files_either():
    offenders = [
        f"{document.relative_to(ROOT)}:{number}: {line.strip()}"
        for document in documents()
        for number, line in enumerate(document.read_text(encoding="utf-8").splitlines(), start=1)
        if UNSHIPPED.search(line)
    ]
    assert offenders == []


def unresolved(found: list[tuple[str, str, str]]) -> list[str]:
    """The citations whose document does not exist or holds no such heading."""
    headings: dict[str, set[tuple[str, ...]]] = {}
    missing = []
    for where, document, name in found:
        if document not in headings:
            path = ROOT / ("README.md" if document == "README" else document)
            headings[document] = heading_paths(path) if path.is_file() else set()
        if tuple(name.split(SEPARATOR)) not in headings[document]:
            missing.append(f'{where}: {document} "{name}"')
    return missing


def test_every_citation_names_an_existing_heading():
    found = citations()
    assert len(found) > 50  # the code does cite the documents; a broken pattern would find nothing
    assert {document for _, document, _ in found} > {
        "docs/partners/orders.md",
        "docs/operations/receiving-mail.md",
    }
    assert unresolved(found) == []


def test_a_citation_of_a_missing_section_or_file_fails(tmp_path):
    document = tmp_path / "guide.md"
    document.write_text("# Orders\n\n## Life cycle\n\n```sh\n# Not a heading\n```\n")
    headings = heading_paths(document)
    assert ("Orders", "Life cycle") in headings
    assert ("Refunds",) not in headings
    assert ("Not a heading",) not in headings
    assert unresolved([("x.py", "docs/partners/orders.md", "No such section")]) == [
        'x.py: docs/partners/orders.md "No such section"'
    ]
    assert unresolved([("x.py", "docs/nowhere.md", "Orders")]) == ['x.py: docs/nowhere.md "Orders"']
    assert unresolved([("x.py", "docs/partners/orders.md", "Orders › Life cycle")]) == []


def test_heading_paths_follow_nesting():
    orders = heading_paths(ROOT / "docs" / "partners" / "orders.md")
    assert ("Orders", "Life cycle") in orders
    assert ("Life cycle",) in orders
    assert ("Orders",) in orders
    assert ("Quotes", "Life cycle") not in orders
    assert ("The partner flow",) in heading_paths(ROOT / "README.md")


# A file named in the code: a path ending in .md, or a top-level document's name.
NAMED_FILE = re.compile(r"(?<![\w/.-])((?:[\w-]+/)*[\w-]+\.md)\b")


def test_code_names_only_files_the_repository_holds():
    """``STYLE.md: Tests`` in a docstring sends a reader to a file that is not there."""
    missing = []
    for path in source_files():
        if path == Path(__file__).resolve():
            continue
        for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), start=1):
            for name in NAMED_FILE.findall(line):
                if not (ROOT / name).is_file():
                    missing.append(f"{path.relative_to(ROOT)}:{number}: {name}")
    assert missing == []


LINK = re.compile(r"(?<!!)\[[^\]]*\]\(([^()\s]+)\)")
EXTERNAL = re.compile(r"^[a-z][a-z0-9+.-]*:", re.IGNORECASE)


def anchors(document: Path) -> set[str]:
    """The anchors a code host makes of a document's headings: lower case, punctuation dropped, spaces to
    hyphens, a repeated one suffixed ``-1``, ``-2``…"""
    seen: dict[str, int] = {}
    found = set()
    in_fence = False
    for line in document.read_text(encoding="utf-8").splitlines():
        if FENCE.match(line):
            in_fence = not in_fence
            continue
        match = None if in_fence else HEADING.match(line)
        if not match:
            continue
        slug = re.sub(r"[^\w\- ]", "", match.group(2).strip().lower()).replace(" ", "-")
        count = seen.get(slug, 0)
        seen[slug] = count + 1
        found.add(slug if count == 0 else f"{slug}-{count}")
    return found


def links(document: Path) -> list[tuple[int, str]]:
    found, in_fence = [], False
    for number, line in enumerate(document.read_text(encoding="utf-8").splitlines(), start=1):
        if FENCE.match(line):
            in_fence = not in_fence
            continue
        if not in_fence:
            found.extend((number, target) for target in LINK.findall(re.sub(r"`[^`]*`", "", line)))
    return found


def broken_links(document: Path, root: Path = ROOT) -> list[str]:
    broken = []
    for number, target in links(document):
        if EXTERNAL.match(target):
            continue
        path, _, anchor = target.partition("#")
        linked = (document.parent / path).resolve() if path else document
        where = f"{document.relative_to(root)}:{number}: {target}"
        missing_file = not linked.is_file() or not linked.is_relative_to(root)
        if missing_file or (anchor and (linked.suffix != ".md" or anchor not in anchors(linked))):
            broken.append(where)
    return broken


def test_every_relative_link_of_the_documents_resolves():
    found = [target for document in documents() for _, target in links(document)]
    assert len(found) > 20  # the README is a map: a broken pattern would find nothing
    assert [broken for document in documents() for broken in broken_links(document)] == []


def test_a_link_to_a_missing_file_or_heading_is_broken(tmp_path):
    (tmp_path / "docs").mkdir()
    (tmp_path / "docs" / "orders.md").write_text(
        "# Orders\n\n## Life cycle (statuses)\n\n## Life cycle (statuses)\n"
    )
    guide = tmp_path / "docs" / "index.md"
    guide.write_text(
        "[a](orders.md) [b](orders.md#life-cycle-statuses) [c](orders.md#life-cycle-statuses-1)"
        " [d](https://example.com) [e](#top)\n"
        "# Top\n[f](missing.md) [g](orders.md#refunds) `[h](in-code.md)`\n"
    )
    assert [b.split(": ", 1)[1] for b in broken_links(guide, tmp_path)] == ["missing.md", "orders.md#refunds"]


# A path or dotted module of the code: `orders/services.py`, `payouts.tasks`; never part of a URL (`/v1/orders/…`).
CODE_NAME = re.compile(
    r"(?<![/\w.-])(?:" + "|".join(APPS) + r"|bench|manage)(?:/[\w.-]*|\.(?!md\b)[a-z_]\w*)|\b\w+\.py\b"
)


def test_the_partner_guide_names_no_module_or_file_of_the_code():
    """docs/partners/ is the contract: fields, codes, statuses, URLs and headers, never how the code is laid out."""
    guide = sorted((ROOT / "docs" / "partners").glob("*.md"))
    assert len(guide) >= 9
    named = [
        f"{page.relative_to(ROOT)}:{number}: {name}"
        for page in guide
        for number, line in enumerate(page.read_text(encoding="utf-8").splitlines(), start=1)
        for name in CODE_NAME.findall(line)
    ]
    assert named == []
    assert CODE_NAME.findall(
        "see `orders.services.order_transition` in payouts/tasks.py, not /v1/orders/x"
    ) == [
        "orders.services",
        "payouts/tasks.py",
    ]


# --- the architecture names the code as it is -------------------------------------------------------------------
CODE_SPAN = re.compile(r"`([^`\n]+)`")
PACKAGES = ("config", "partners", "catalog", "quotes", "orders", "payouts")
DOTTED_PATH = re.compile(rf"(?:{'|'.join(PACKAGES)})(?:\.[A-Za-z_]\w*)+")
REPO_PATH = re.compile(rf"(?:{'|'.join(PACKAGES)}|templates|tests|bench|docs)/[\w./-]*")


def _resolves(dotted: str) -> bool:
    """Whether ``dotted`` is a module, or an attribute (a function, a class, a constant) of one."""
    import importlib

    parts = dotted.split(".")
    for cut in range(len(parts), 0, -1):
        try:
            found = importlib.import_module(".".join(parts[:cut]))
        except ModuleNotFoundError:
            continue
        for name in parts[cut:]:
            found = getattr(found, name, None)
            if found is None:
                return False
        return True
    return False


def names_missing_from_the_code(text: str, root: Path = ROOT) -> list[str]:
    """Every `dotted.path` of the apps and every `app/path` a document names in code spans that does not exist."""

    def exists(span: str) -> bool:
        if DOTTED_PATH.fullmatch(span):
            return _resolves(span)
        return not REPO_PATH.fullmatch(span) or (root / span.rstrip("/")).exists()

    return [span for span in dict.fromkeys(CODE_SPAN.findall(text)) if not exists(span)]


ARCHITECTURE_PAGES = sorted((ROOT / "docs" / "architecture").glob("*.md"))


@pytest.mark.parametrize("page", ARCHITECTURE_PAGES, ids=lambda page: page.name)
def test_every_module_and_dotted_path_an_architecture_page_names_exists(page):
    text = page.read_text(encoding="utf-8")
    assert len(CODE_SPAN.findall(text)) > 10  # the scan reads the page's code spans
    assert names_missing_from_the_code(text) == []


def test_the_architecture_is_a_one_screen_floor_plan_that_links_every_page():
    text = (ROOT / "docs" / "architecture.md").read_text(encoding="utf-8")
    assert len(text.splitlines()) <= 60
    assert names_missing_from_the_code(text) == []
    assert len(ARCHITECTURE_PAGES) >= 7
    for page in ARCHITECTURE_PAGES:
        assert f"](architecture/{page.name})" in text, page.name


def test_a_module_or_dotted_path_that_is_gone_is_found():
    text = (
        "`orders.services.order_transition` and `orders/webhooks/machines.py` exist; "
        "`orders.tasks.no_such_task`, `orders.webhooks.secrets` and `orders/webhooks/secrets.py` do not; "
        "`order.created` and `/portal/` are not code"
    )
    assert names_missing_from_the_code(text) == [
        "orders.tasks.no_such_task",
        "orders.webhooks.secrets",
        "orders/webhooks/secrets.py",
    ]
