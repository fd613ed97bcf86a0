"""The name Nova is installed by is its own: pyproject.toml publishes `nova.version.DISTRIBUTION`, the
`dev` extra installs its extras under that name, and every install hint in the code, the tests and the
docs names it. The name it had belongs to an unrelated project on the package index, so a hint with it
would install someone else's code."""

from __future__ import annotations

import re
import tomllib
from pathlib import Path

from nova.errors import MissingDependency
from nova.providers._optional import require_sdk
from nova.version import DISTRIBUTION, install_line

ROOT = Path(__file__).resolve().parents[1]
OLD_HINT = "nova" + "-agent["  # spelled apart so this file is not a hit itself


def test_pyproject_publishes_the_distribution_name_and_the_command_stays_nova() -> None:
    project = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"]
    assert project["name"] == DISTRIBUTION == "nova-context-engine"
    assert project["scripts"] == {"nova": "nova.cli.main:main"}
    [self_reference] = [d for d in project["optional-dependencies"]["dev"] if d.startswith(DISTRIBUTION)]
    extras = set(re.fullmatch(rf"{DISTRIBUTION}\[(.*)\]", self_reference).group(1).split(","))  # type: ignore[union-attr]
    assert extras <= set(project["optional-dependencies"]) and "tui" in extras


def test_install_hints_name_the_distribution() -> None:
    assert install_line("tui") == f"pip install '{DISTRIBUTION}[tui]'"
    try:
        require_sdk("nova_no_such_sdk", extra="openai")
    except MissingDependency as exc:
        assert f"pip install '{DISTRIBUTION}[openai]'" in str(exc)
    else:
        raise AssertionError("a missing SDK was imported")


def test_no_install_hint_names_the_old_distribution() -> None:
    places = [ROOT / "README.md", ROOT / "pyproject.toml", *(ROOT / "docs").rglob("*.md"),
              *(ROOT / ".ci").iterdir(), *(ROOT / "src").rglob("*.py"), *(ROOT / "tests").rglob("*.py")]
    hits = [str(p.relative_to(ROOT)) for p in places if p.is_file() and OLD_HINT in p.read_text(encoding="utf-8")]
    assert hits == []
