"""README.md stays true: its configuration table is exactly what `python -m coordinator.config --markdown`
prints, and its layout table names every top-level directory in the repo.

`python tests/test_readme.py --write` (what `make readme` runs) regenerates the table in place.
"""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parent.parent
README = REPO_ROOT / "README.md"
BEGIN, END = "<!-- config-table -->", "<!-- /config-table -->"
TABLE_RE = re.compile(re.escape(BEGIN) + r"\n(.*?)" + re.escape(END), re.S)


def generated_config_table() -> str:
    result = subprocess.run(
        [sys.executable, "-m", "coordinator.config", "--markdown"],
        cwd=REPO_ROOT,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert result.returncode == 0, f"python -m coordinator.config --markdown failed:\n{result.stderr}"
    return result.stdout.strip() + "\n"


def readme_config_table(text: str) -> str:
    match = TABLE_RE.search(text)
    assert match, f"README.md lacks the {BEGIN} ... {END} markers"
    return match.group(1)


def test_readme_config_table_is_what_coordinator_config_generates():
    assert readme_config_table(README.read_text()) == generated_config_table(), (
        "README.md's configuration table is stale: run `make readme`"
    )


def test_readme_shows_the_two_everyday_commands():
    text = README.read_text()
    assert "make run" in text and "make test" in text


def test_readme_layout_describes_every_top_level_directory():
    listed = subprocess.run(
        ["git", "ls-files"], cwd=REPO_ROOT, capture_output=True, text=True, timeout=30, check=True
    ).stdout.splitlines()
    top_dirs = sorted({path.split("/", 1)[0] for path in listed if "/" in path})
    text = README.read_text()
    missing = [d for d in top_dirs if f"`{d}/`" not in text]
    assert not missing, f"README.md's Layout section does not mention: {missing}"


def write_config_table() -> None:
    text = README.read_text()
    readme_config_table(text)  # markers must exist
    table = generated_config_table()
    README.write_text(TABLE_RE.sub(lambda _: f"{BEGIN}\n{table}{END}", text, count=1))


if __name__ == "__main__":
    if sys.argv[1:] != ["--write"]:
        sys.exit("usage: python tests/test_readme.py --write")
    write_config_table()
    print(f"updated the configuration table in {README.relative_to(REPO_ROOT)}")
