"""The behaviour documents in docs/spec/ stay the ones the code cites.

Code and tests cite rules and numbered test cases as `docs/spec/<file>.md#<anchor>`. These tests
keep every such citation pointing at an anchor that exists, keep the old numbered form (the word
"spec" followed by a section number, of documents that were never in the repository) from coming
back, and keep the links between the documents (and from README.md) working.
"""

from __future__ import annotations

import re
import subprocess
from collections import Counter
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parent.parent
SPEC_DIR = REPO_ROOT / "docs" / "spec"

CITATION = re.compile(r"docs/spec/(?P<file>[\w.-]+\.md)#(?P<anchor>[\w-]+)")
OLD_CITATION = re.compile(r"\b[Ss]pec(?:\s*§\s*|\s+sections?\s+|\s+)\d")
EXPLICIT_ANCHOR = re.compile(r"<a id=\"(?P<anchor>[^\"]+)\"></a>")
HEADING = re.compile(r"^#{1,6}\s+(?P<title>.+?)\s*$", re.M)
MARKDOWN_LINK = re.compile(r"\]\((?P<target>[^)\s]+)\)")

# The documents every group type and the shell rely on; each keeps numbered test cases.
EXPECTED_DOCUMENTS = {
    "classic-groups.md": 80,
    "consumer-protocol.md": 43,
    "offsets.md": 0,
    "transactions.md": 60,
    "share-groups.md": 49,
}


def heading_slug(title: str) -> str:
    """The anchor GitHub derives from a heading: lower case, punctuation dropped, spaces to '-'."""
    text = re.sub(r"<[^>]+>", "", title).strip().lower()
    text = re.sub(r"[^\w\- ]", "", text)
    return text.replace(" ", "-")


def anchors_of(path: Path) -> set[str]:
    text = path.read_text(encoding="utf-8")
    return {m.group("anchor") for m in EXPLICIT_ANCHOR.finditer(text)} | {
        heading_slug(m.group("title")) for m in HEADING.finditer(text)
    }


def tracked_files(*suffixes: str) -> list[Path]:
    listed = subprocess.run(
        ["git", "ls-files", "--cached", "--others", "--exclude-standard"],
        cwd=REPO_ROOT, capture_output=True, text=True, timeout=30, check=True,
    ).stdout.splitlines()
    return [REPO_ROOT / name for name in listed if name.endswith(suffixes) and (REPO_ROOT / name).is_file()]


def test_the_spec_documents_exist_with_their_numbered_test_cases() -> None:
    present = {path.name for path in SPEC_DIR.glob("*.md")}
    assert set(EXPECTED_DOCUMENTS) <= present, f"missing from docs/spec/: {set(EXPECTED_DOCUMENTS) - present}"
    for name, case_count in EXPECTED_DOCUMENTS.items():
        anchors = anchors_of(SPEC_DIR / name)
        missing = [n for n in range(1, case_count + 1) if f"case-{n}" not in anchors]
        assert not missing, f"{name} lacks anchors of test cases {missing}"


def test_explicit_anchors_are_unique_within_a_document() -> None:
    for path in SPEC_DIR.glob("*.md"):
        counts = Counter(m.group("anchor") for m in EXPLICIT_ANCHOR.finditer(path.read_text(encoding="utf-8")))
        duplicates = sorted(anchor for anchor, count in counts.items() if count > 1)
        assert not duplicates, f"{path.name}: anchors defined more than once: {duplicates}"


def test_every_spec_citation_in_the_code_names_an_existing_anchor() -> None:
    anchors: dict[str, set[str]] = {path.name: anchors_of(path) for path in SPEC_DIR.glob("*.md")}
    broken: list[str] = []
    cited = 0
    for path in tracked_files(".py", ".pyi"):
        for line_number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
            for match in CITATION.finditer(line):
                cited += 1
                if match.group("anchor") not in anchors.get(match.group("file"), set()):
                    broken.append(f"{path.relative_to(REPO_ROOT)}:{line_number}: {match.group(0)}")
    assert cited > 0, "no docs/spec citation found at all: is the pattern still right?"
    assert not broken, "citations of anchors that do not exist:\n" + "\n".join(broken)


def test_no_citation_of_the_old_section_numbers_is_left() -> None:
    left: list[str] = []
    for path in tracked_files(".py", ".pyi"):
        for line_number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
            if OLD_CITATION.search(line):
                left.append(f"{path.relative_to(REPO_ROOT)}:{line_number}: {line.strip()}")
    assert not left, (
        "old numbered spec citations left; cite docs/spec/<file>.md#<anchor> instead:\n"
        + "\n".join(left)
    )


def test_links_between_the_documents_resolve() -> None:
    documents = [REPO_ROOT / "README.md", *sorted((REPO_ROOT / "docs").rglob("*.md"))]
    broken: list[str] = []
    for document in documents:
        for match in MARKDOWN_LINK.finditer(document.read_text(encoding="utf-8")):
            target = match.group("target")
            if "://" in target or target.startswith("mailto:"):
                continue
            file_part, _, anchor = target.partition("#")
            linked = (document.parent / file_part).resolve() if file_part else document
            if not linked.exists():
                broken.append(f"{document.relative_to(REPO_ROOT)}: {target} (no such file)")
            elif anchor and linked.suffix == ".md" and anchor not in anchors_of(linked):
                broken.append(f"{document.relative_to(REPO_ROOT)}: {target} (no such anchor)")
    assert not broken, "broken links:\n" + "\n".join(broken)


def test_the_readme_points_at_the_architecture_and_the_specs() -> None:
    text = (REPO_ROOT / "README.md").read_text(encoding="utf-8")
    assert "docs/ARCHITECTURE.md" in text and "docs/spec/" in text
