"""Citations in the code resolve: every ``README "X"`` / ``README "X › Y"`` names a heading of README.md (or of
a file under docs/), and no comment cites a contract file that does not ship with the project.

A heading is named by its text without a trailing parenthesis (``## Catalog (scope `events:read`)`` is
"Catalog"); ``X › Y`` means a heading Y nested under a heading X.
"""

import re
from pathlib import Path

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


def test_the_readme_does_not_point_at_unshipped_files_either():
    documents = [ROOT / "README.md", *sorted((ROOT / "docs").glob("**/*.md"))]
    offenders = [
        f"{document.relative_to(ROOT)}:{number}: {line.strip()}"
        for document in documents
        for number, line in enumerate(document.read_text(encoding="utf-8").splitlines(), start=1)
        if UNSHIPPED.search(line)
    ]
    assert offenders == []


def test_every_citation_names_an_existing_heading():
    found = citations()
    assert len(found) > 50  # the code does cite the README; a broken pattern would find nothing
    documents = {"README": heading_paths(ROOT / "README.md")}
    unresolved = []
    for where, document, name in found:
        if document not in documents:
            path = ROOT / document
            documents[document] = heading_paths(path) if path.is_file() else set()
        if tuple(name.split(SEPARATOR)) not in documents[document]:
            unresolved.append(f'{where}: {document} "{name}"')
    assert unresolved == []


def test_heading_paths_follow_nesting():
    readme = heading_paths(ROOT / "README.md")
    assert ("Orders", "Life cycle") in readme
    assert ("Life cycle",) in readme
    assert ("Catalog",) in readme
    assert ("Quotes", "Life cycle") not in readme
