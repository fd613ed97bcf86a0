"""INS-1..3: discovery order, @imports (depth, cycles, fences, spans, dedupe), budget report."""

from __future__ import annotations

from pathlib import Path

import pytest

from nova.memory.instructions import (
    InstructionsConfig,
    find_imports,
    load_rules,
    parse_instructions_config,
)


def write(path: Path, text: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")
    return path


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    root = tmp_path / "work" / "repo"
    (root / ".git").mkdir(parents=True)
    return root


def load(cwd: Path, home: Path, **config: object) -> object:
    return load_rules(cwd=cwd, home=home, config=InstructionsConfig(**config))  # type: ignore[arg-type]


def test_discovery_order_user_then_root_to_cwd_then_local(repo: Path, nova_home: Path) -> None:
    cwd = repo / "pkg" / "sub"
    write(repo.parent / "NOVA.md", "above the git root: never loaded")
    write(nova_home / "NOVA.md", "user rules")
    write(repo / "NOVA.md", "root nova")
    write(repo / "AGENTS.md", "root agents")
    write(repo / "CLAUDE.md", "root claude")
    write(repo / "pkg" / "NOVA.md", "pkg nova")
    write(cwd / "AGENTS.md", "sub agents")
    write(cwd / "NOVA.local.md", "local override")
    rules = load_rules(cwd=cwd, home=nova_home)
    assert [(f.path, f.kind) for f in rules.files] == [
        ((nova_home / "NOVA.md").resolve(), "user"),
        ((repo / "NOVA.md").resolve(), "project"),
        ((repo / "AGENTS.md").resolve(), "project"),
        ((repo / "CLAUDE.md").resolve(), "project"),
        ((repo / "pkg" / "NOVA.md").resolve(), "project"),
        ((cwd / "AGENTS.md").resolve(), "project"),
        ((cwd / "NOVA.local.md").resolve(), "local"),
    ]
    text = rules.text
    order = ["user rules", "root nova", "root agents", "root claude", "pkg nova", "sub agents", "local override"]
    positions = [text.index(s) for s in order]
    assert positions == sorted(positions)
    assert "above the git root" not in text
    assert rules.skipped == ()


def test_project_file_list_is_configurable(repo: Path, nova_home: Path) -> None:
    write(repo / "NOVA.md", "nova")
    write(repo / "CLAUDE.md", "claude")
    config = parse_instructions_config({"project_files": ["NOVA.md"], "token_budget": "500"})
    rules = load_rules(cwd=repo, home=nova_home, config=config)
    assert [f.path.name for f in rules.files] == ["NOVA.md"]
    assert config.token_budget == 500


def test_outside_a_repository_only_the_cwd_level_is_read(tmp_path: Path, nova_home: Path) -> None:
    write(tmp_path / "NOVA.md", "parent")
    cwd = tmp_path / "plain"
    write(cwd / "NOVA.md", "here")
    rules = load_rules(cwd=cwd, home=nova_home)
    assert [f.text for f in rules.files] == ["here"]


def test_import_depth_five_loads_and_six_is_reported(repo: Path, nova_home: Path) -> None:
    write(repo / "NOVA.md", "root\n@./d1.md\n")
    for depth in range(1, 7):
        write(repo / f"d{depth}.md", f"level {depth}\n@./d{depth + 1}.md\n" if depth < 6 else "level 6\n")
    rules = load_rules(cwd=repo, home=nova_home)
    loaded = {f.path.name: f.depth for f in rules.files}
    assert loaded == {"NOVA.md": 0, "d1.md": 1, "d2.md": 2, "d3.md": 3, "d4.md": 4, "d5.md": 5}
    assert "level 5" in rules.text and "level 6" not in rules.text
    [skip] = [s for s in rules.skipped if s.path.name == "d6.md"]
    assert "depth" in skip.reason and "6" in skip.reason and "5" in skip.reason
    assert skip.imported_by == (repo / "d5.md").resolve()


def test_import_cycle_loads_each_file_once(repo: Path, nova_home: Path) -> None:
    write(repo / "NOVA.md", "root @./a.md")
    write(repo / "a.md", "A imports @./b.md")
    write(repo / "b.md", "B imports @./a.md and @./NOVA.md")
    rules = load_rules(cwd=repo, home=nova_home)
    assert [f.path.name for f in rules.files] == ["NOVA.md", "a.md", "b.md"]
    assert all("already loaded" in s.reason for s in rules.skipped)
    assert {s.path.name for s in rules.skipped} == {"a.md", "NOVA.md"}


def test_imports_are_deduplicated_by_absolute_path(repo: Path, nova_home: Path) -> None:
    write(repo / "NOVA.md", "@./docs/one.md\n@docs/two.md\n")
    write(repo / "docs" / "one.md", "one @./shared.md")
    write(repo / "docs" / "two.md", "two @../docs/shared.md")
    write(repo / "docs" / "shared.md", "shared rules")
    rules = load_rules(cwd=repo, home=nova_home)
    assert [f.path.name for f in rules.files] == ["NOVA.md", "one.md", "shared.md", "two.md"]
    assert rules.text.count("shared rules") == 1
    shared = next(f for f in rules.files if f.path.name == "shared.md")
    assert shared.imported_by == (repo / "docs" / "one.md").resolve()


def test_imports_in_code_fences_and_inline_spans_are_ignored(repo: Path, nova_home: Path) -> None:
    for name in ("fenced.md", "tilde.md", "inline.md", "double.md", "real.md", "after.md"):
        write(repo / name, f"contents of {name}")
    write(repo / "NOVA.md", "\n".join([
        "Rules. Mail me at someone@example.com, use @pytest.fixture freely.",
        "```python",
        "@./fenced.md",
        "```",
        "~~~~",
        "@./tilde.md",
        "~~~",  # shorter than the opening: does not close
        "~~~~",
        "Run `cat @./inline.md` or ``x @./double.md ` y`` then see @./real.md.",
        "@./after.md",
    ]))
    rules = load_rules(cwd=repo, home=nova_home)
    assert [f.path.name for f in rules.files] == ["NOVA.md", "real.md", "after.md"]
    assert rules.skipped == ()


def test_find_imports_path_shapes() -> None:
    text = "see @./a.md, @../b.txt; @~/c.md @/abs/d @docs/e @README.md @decorator (@./f.md)"
    assert find_imports(text) == ["./a.md", "../b.txt", "~/c.md", "/abs/d", "docs/e", "README.md"]


def test_home_relative_import(repo: Path, nova_home: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # `~/` expands; the file still has to lie under the project or Nova's home (here: the project).
    monkeypatch.setenv("HOME", str(repo.parent))
    write(repo / "shared" / "style.md", "house style")
    write(repo / "NOVA.md", "@~/repo/shared/style.md")
    rules = load_rules(cwd=repo, home=nova_home)
    assert "house style" in rules.text
    assert rules.files[1].path == (repo / "shared" / "style.md").resolve()


def test_missing_and_binary_imports_are_warnings(repo: Path, nova_home: Path) -> None:
    write(repo / "NOVA.md", "@./missing.md\n@./logo.png.md\n@./latin1.md\nstill loaded")
    (repo / "logo.png.md").write_bytes(b"\x89PNG\r\n\x1a\n\x00\x00\x00")
    (repo / "latin1.md").write_bytes("caf\xe9".encode("latin-1"))
    rules = load_rules(cwd=repo, home=nova_home)
    assert [f.path.name for f in rules.files] == ["NOVA.md"]
    reasons = {s.path.name: s.reason for s in rules.skipped}
    assert reasons["missing.md"].startswith("not found")
    assert "binary" in reasons["logo.png.md"]
    assert "binary" in reasons["latin1.md"]
    assert str((repo / "NOVA.md").resolve()) in reasons["missing.md"]


def test_budget_skips_whole_files_and_names_them(repo: Path, nova_home: Path) -> None:
    write(nova_home / "NOVA.md", "u" * 100)
    write(repo / "NOVA.md", "r" * 300 + "\n@./child.md")
    write(repo / "child.md", "child")
    write(repo / "NOVA.local.md", "l" * 50)
    rules = load_rules(cwd=repo, home=nova_home, config=InstructionsConfig(token_budget=200),
                       estimate=len)
    assert [f.path.name for f in rules.files] == ["NOVA.md", "NOVA.local.md"]  # user's, then local
    assert rules.tokens == 150
    reasons = {s.path.name: s.reason for s in rules.skipped}
    assert reasons["NOVA.md"].startswith("over token budget: needs 312 tokens, 100 of 200 left")
    assert "over budget" in reasons["child.md"]
    assert "r" * 300 not in rules.text and "child" not in rules.text
    report = rules.report()
    assert set(report) == {"files", "skipped"}
    assert report["files"][0] == {"path": str((nova_home / "NOVA.md").resolve()), "imported_by": None,
                                  "tokens": 100}
    assert {"path", "reason"} == set(report["skipped"][0])


def test_default_estimate_uses_a_token_count(repo: Path, nova_home: Path) -> None:
    write(repo / "NOVA.md", "Prefer small commits. " * 40)
    [f] = load_rules(cwd=repo, home=nova_home).files
    assert 0 < f.tokens < len(f.text)
