"""Which sessions a resume picker offers: this project's, newest first, no sub-agents, at most ten."""

from __future__ import annotations

from pathlib import Path

from nova.sessions.meta import SessionMeta
from nova.sessions.recent import PICKER_SIZE, picker_line, recent_sessions


def meta(session_id: str, cwd: Path, updated: float, *, git_root: str = "", parent: str = "") -> SessionMeta:
    return SessionMeta(id=session_id, title=f"title {session_id}", cwd=str(cwd), git_root=git_root,
                       updated_at=updated, parent_id=parent, message_count=2)


def test_a_git_project_is_its_root_whatever_folder_inside_it(tmp_path: Path) -> None:
    repo = tmp_path / "repo"
    (repo / ".git").mkdir(parents=True)
    (repo / "src").mkdir()
    other = tmp_path / "other"
    other.mkdir()
    metas = [meta("a", repo, 1, git_root=str(repo)), meta("b", repo / "src", 3, git_root=str(repo)),
             meta("child", repo, 4, git_root=str(repo), parent="b"), meta("c", other, 5)]
    assert [m.id for m in recent_sessions(metas, repo / "src")] == ["b", "a"]
    assert [m.id for m in recent_sessions(metas, other)] == ["c"]


def test_without_git_the_folder_and_those_inside_it(tmp_path: Path) -> None:
    (tmp_path / "p" / "sub").mkdir(parents=True)
    metas = [meta(f"s{i}", tmp_path / "p" / "sub", i) for i in range(15)] + [meta("up", tmp_path, 99)]
    offered = recent_sessions(metas, tmp_path / "p")
    assert len(offered) == PICKER_SIZE and offered[0].id == "s14" and "up" not in [m.id for m in offered]


def test_a_line_tells_two_sessions_apart() -> None:
    line = picker_line(SessionMeta(id="20260101-x", title="  fix\nthe   test " + "x" * 80, message_count=1,
                                   updated_at=1000.0), now=1000.0 + 7300)
    assert line.startswith("20260101-x · fix the test xxx") and line.endswith("… · 1 message · 2 h ago")
    assert picker_line(SessionMeta(id="n"), now=5.0) == "n · (untitled) · 0 messages · never updated"
