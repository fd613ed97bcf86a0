"""MEM-1..3: routing by type, one file per memory with frontmatter, safe names, atomic writes, the index."""

from __future__ import annotations

import os
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
import yaml
from hypothesis import given, settings
from hypothesis import strategies as st

from nova.memory.store import (
    INDEX_NAME,
    Memory,
    MemorySource,
    MemoryStore,
    UnsafeMemoryName,
    _parse_simple_yaml,
    memory_from_text,
    memory_to_text,
    render_index,
    slugify,
    truncation_warning,
)

T0 = datetime(2025, 3, 1, 12, 0, tzinfo=UTC)


def mem(name: str, mtype: str = "user", **kw: object) -> Memory:
    fields: dict[str, object] = {"description": f"about {name}", "body": f"body of {name}", "created": T0,
                                 "updated": T0, **kw}
    return Memory(name=name, type=mtype, **fields)  # type: ignore[arg-type]


@pytest.mark.parametrize(("mtype", "where"), [("user", "home"), ("feedback", "home"),
                                              ("project", "project"), ("reference", "project")])
def test_types_route_to_their_directory(store: MemoryStore, nova_home: Path, project: Path,
                                        mtype: str, where: str) -> None:
    stored = store.write(mem("some note", mtype))
    expected = nova_home / "memory" if where == "home" else project / ".nova" / "memory"
    assert stored.path == expected / "some-note.md"
    assert stored.path.is_file()
    assert (expected / INDEX_NAME).is_file()


def test_file_has_frontmatter_and_round_trips(store: MemoryStore) -> None:
    original = mem("prefers-small-commits", "feedback", status="candidate", author="model",
                   expires=T0 + timedelta(days=30), reason="said twice",
                   source=MemorySource(session="s_1", messages=("msg_1", "msg_2"), origin="assistant"),
                   body="Split changes by topic before committing.\n\n用户偏好原子提交")
    stored = store.write(original)
    assert stored.path is not None
    text = stored.path.read_text(encoding="utf-8")
    head = yaml.safe_load(text.split("---\n")[1])
    assert list(head)[:3] == ["name", "description", "type"]
    assert head["source"] == {"session": "s_1", "messages": ["msg_1", "msg_2"], "origin": "assistant"}
    assert head["status"] == "candidate" and head["author"] == "model"
    assert head["created"] == "2025-03-01T12:00:00Z" and head["expires"] == "2025-03-31T12:00:00Z"
    again = store.get("prefers-small-commits")
    assert again == stored


def test_hand_written_seed_style_file_is_read(store: MemoryStore, nova_home: Path) -> None:
    path = nova_home / "memory" / "prefers-small-commits.md"
    path.parent.mkdir(parents=True)
    path.write_text("---\nname: prefers-small-commits\ndescription: 用户偏好原子提交\ntype: feedback\n---\n"
                    "提交前先把改动按主题拆分。\n", encoding="utf-8")
    memory = store.get("prefers-small-commits")
    assert memory.type == "feedback" and memory.body == "提交前先把改动按主题拆分。"
    # A file Nova has no review record of is a candidate whatever it says, until the user approves it.
    assert memory.status == "candidate" and "not written or approved through Nova" in memory.review_note
    assert store.set_status("prefers-small-commits", "active").status == "active"
    assert store.get("prefers-small-commits").status == "active"


@pytest.mark.parametrize("name", ["../escape", "a/b", "a\\b", "..", "x..y", "a\x00b", "line\nbreak", "tab\there",
                                  "\x1b[31mred", "zero\u200bwidth", "", "   ", "///", "memory", "MEMORY", "---"])
def test_unsafe_names_are_rejected(store: MemoryStore, name: str) -> None:
    with pytest.raises(UnsafeMemoryName):
        slugify(name)
    with pytest.raises(UnsafeMemoryName):
        store.write(mem(name))


def test_slugs_are_readable() -> None:
    assert slugify("Prefers Small Commits!") == "prefers-small-commits"
    assert slugify("用户 偏好") == "用户-偏好"
    assert slugify(".hidden") == "hidden"
    assert len(slugify("x" * 500)) == 80


def test_atomic_write_leaves_old_file_on_failure(store: MemoryStore, monkeypatch: pytest.MonkeyPatch) -> None:
    stored = store.write(mem("note", body="old body"))
    assert stored.path is not None

    def boom(src: str, dst: str) -> None:
        raise OSError("disk full")

    monkeypatch.setattr(os, "replace", boom)
    with pytest.raises(OSError):
        store.write(mem("note", body="new body"))
    monkeypatch.undo()
    assert memory_from_text(stored.path.read_text(encoding="utf-8")).body == "old body"
    assert [p.name for p in stored.path.parent.iterdir() if p.name.endswith(".tmp")] == []


def test_index_has_one_line_per_memory(store: MemoryStore, nova_home: Path) -> None:
    store.write(mem("a", updated=T0))
    store.write(mem("b", "feedback", updated=T0 + timedelta(hours=1), status="candidate"))
    index = (nova_home / "memory" / INDEX_NAME).read_text(encoding="utf-8").splitlines()
    assert index[2:] == ["- [b](b.md) — about b (feedback, candidate)", "- [a](a.md) — about a (user)"]
    store.delete("a")
    assert "a.md" not in (nova_home / "memory" / INDEX_NAME).read_text(encoding="utf-8")


def test_index_line_cap_with_exact_warning() -> None:
    memories = [mem(f"m{i:03d}", updated=T0 + timedelta(minutes=i)) for i in range(250)]
    text = render_index(memories)
    lines = text.splitlines()
    assert len(lines) == 200
    assert lines[-1] == (
        "> WARNING: MEMORY.md truncated: 197 of 250 memories listed (caps: 200 lines, 25000 bytes). "
        "Run `nova memory list` for all."
    )
    assert lines[2].startswith("- [m249]")  # newest first


def test_index_byte_cap_with_warning() -> None:
    memories = [mem(f"m{i:03d}", description="d" * 400) for i in range(100)]
    text = render_index(memories)
    assert len(text.encode("utf-8")) <= 25_000
    shown = sum(1 for line in text.splitlines() if line.startswith("- ["))
    assert text.splitlines()[-1] == truncation_warning(shown, 100, max_lines=200, max_bytes=25_000)
    assert 50 < shown < 100


def test_index_under_caps_has_no_warning() -> None:
    assert "WARNING" not in render_index([mem(f"m{i}") for i in range(198)])


def test_store_index_caps_apply_on_disk(nova_home: Path, project: Path) -> None:
    store = MemoryStore.for_workspace(home=nova_home, cwd=project, index_max_lines=5)
    for i in range(6):
        store.write(mem(f"n{i}"))
    lines = (nova_home / "memory" / INDEX_NAME).read_text(encoding="utf-8").splitlines()
    assert len(lines) == 5 and lines[-1].startswith("> WARNING: MEMORY.md truncated: 2 of 6")


def test_unreadable_file_is_reported_not_fatal(store: MemoryStore, nova_home: Path) -> None:
    store.write(mem("good"))
    (nova_home / "memory" / "broken.md").write_text("no frontmatter", encoding="utf-8")
    assert [m.name for m in store.memories()] == ["good"]
    assert any("broken.md" in p for p in store.problems())


# -- the fast frontmatter reader agrees with YAML wherever it answers ----------------------------------
_text = st.text(st.characters(blacklist_categories=("Cs",)), max_size=40)


@settings(max_examples=300, deadline=None)
@given(name=st.text(st.characters(whitelist_categories=("L", "N", "Zs", "P")), min_size=1, max_size=30),
       description=_text, reason=_text, session=st.one_of(st.none(), _text),
       messages=st.lists(_text, max_size=3), external=st.booleans())
def test_fast_reader_matches_yaml_on_written_files(name: str, description: str, reason: str, session: str | None,
                                                   messages: list[str], external: bool) -> None:
    try:
        slugify(name)
    except UnsafeMemoryName:
        return
    memory = mem(name, description=description, reason=reason, external=external,
                 source=MemorySource(session=session or None, messages=tuple(messages), origin="user"))
    head = memory_to_text(memory).split("\n---\n", 1)[0].removeprefix("---\n") + "\n"
    fast = _parse_simple_yaml(head.splitlines(keepends=True))
    if fast is not None:
        assert fast == yaml.safe_load(head)
    assert memory_from_text(memory_to_text(memory)).reason == reason


_line = st.one_of(
    st.builds(lambda k, v: f"{k}: {v}", st.sampled_from(["a", "b", "name", "x y"]),
              st.text(st.sampled_from("ab:'\"#- 1yn\\~[]{}.TZ"), max_size=8)),
    st.builds(lambda v: f"- {v}", st.text(st.sampled_from("ab:'\" 1-"), max_size=5)),
    st.builds(lambda k: f"  {k}: v", st.sampled_from(["c", "d"])),
    st.sampled_from(["a:", "  - i", "# c", "", "  e: 'q'", "k: |"]),
)


@settings(max_examples=500, deadline=None)
@given(st.lists(_line, max_size=6))
def test_fast_reader_never_disagrees_with_yaml(lines: list[str]) -> None:
    text = "".join(line + "\n" for line in lines)
    fast = _parse_simple_yaml(text.splitlines(keepends=True))
    if fast is None:
        return
    try:
        expected = yaml.safe_load(text)
    except yaml.YAMLError:
        raise AssertionError(f"fast reader accepted invalid YAML: {text!r}") from None
    assert fast == (expected or {})
