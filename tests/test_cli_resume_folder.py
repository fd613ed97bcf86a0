"""A resumed session runs in the folder it was recorded in, not the shell's: `nova demo` in A, then
`cd B; nova resume last "…"` reads A's files. Each case is a real `nova` process on the offline demo
model; which folder the tools worked in is read back from the session's own record (the paths its
read_file calls read)."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest


def nova(home: Path, cwd: Path, *args: str, stdin: int | None = subprocess.DEVNULL) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("NOVA_", "ANTHROPIC_", "OPENAI_"))}
    env["NOVA_HOME"] = str(home)
    return subprocess.run([sys.executable, "-m", "nova.cli.main", *args], capture_output=True, text=True, env=env,
                          cwd=cwd, stdin=stdin, timeout=180)


def records(home: Path, session_id: str) -> list[dict[str, Any]]:
    out = nova(home, home.parent, "sessions", "export", session_id)
    assert out.returncode == 0, out.stderr
    return [json.loads(line) for line in out.stdout.splitlines()]


def paths_read_after(home: Path, session_id: str, prompt: str) -> list[str]:
    """Every path a read_file call read after the user sent `prompt`."""
    seen, paths = False, []
    for record in records(home, session_id):
        if record["type"] == "message" and record["message"]["role"] == "user":
            texts = [p.get("text", "") for p in record["message"]["parts"]]
            seen = seen or prompt in texts
        if seen and record["type"] == "event" and record["name"] == "tool_metadata":
            paths += record["data"].get("paths_read", [])
    return paths


@pytest.fixture
def demo_session(tmp_path: Path) -> tuple[Path, Path, str]:
    """(NOVA_HOME, the demo project A, the session id) after `nova demo --dir A`."""
    home, project = tmp_path / "home", tmp_path / "A"
    done = nova(home, tmp_path, "demo", "--dir", str(project), "--json")
    assert done.returncode == 0, done.stderr
    outcome = json.loads(done.stdout)
    return home, Path(outcome["project"]), outcome["session_id"]


PROMPT = "what did you change?"


def test_resume_from_another_folder_runs_in_the_recorded_one(tmp_path: Path, demo_session: tuple[Path, Path, str]) -> None:
    home, project, session_id = demo_session
    elsewhere = tmp_path / "B"
    elsewhere.mkdir()
    (elsewhere / "unrelated.txt").write_text("not the project\n")
    resumed = nova(home, elsewhere, "resume", "last", PROMPT)
    assert resumed.returncode == 0, resumed.stderr
    # Said once on stderr, naming both folders and the override.
    assert f"in {project}, the folder it was recorded in (you are in {elsewhere.resolve()}" in resumed.stderr
    assert "--cwd DIR" in resumed.stderr
    read = paths_read_after(home, session_id, PROMPT)
    assert read and all(Path(p).is_relative_to(project) for p in read), read
    assert str(project / "calc" / "stats.py") in read


def test_nova_run_resume_also_runs_in_the_recorded_folder(tmp_path: Path, demo_session: tuple[Path, Path, str]) -> None:
    home, project, session_id = demo_session
    elsewhere = tmp_path / "B"
    elsewhere.mkdir()
    resumed = nova(home, elsewhere, "run", "--resume", session_id, "and now?")
    assert resumed.returncode == 0, resumed.stderr
    assert all(Path(p).is_relative_to(project) for p in paths_read_after(home, session_id, "and now?"))


def test_cwd_overrides_the_recorded_folder(tmp_path: Path, demo_session: tuple[Path, Path, str]) -> None:
    home, _project, session_id = demo_session
    other = tmp_path / "C"
    other.mkdir()
    (other / "README.md").write_text("another project\n")
    resumed = nova(home, tmp_path, "resume", session_id, PROMPT, "--cwd", str(other))
    assert resumed.returncode == 0, resumed.stderr
    assert "recorded in" not in resumed.stderr  # chosen on the command line: nothing to say
    assert paths_read_after(home, session_id, PROMPT) == [str(other.resolve() / "README.md")]


def test_headless_resume_refuses_when_the_recorded_folder_is_gone(tmp_path: Path,
                                                                   demo_session: tuple[Path, Path, str]) -> None:
    home, project, session_id = demo_session
    shutil.rmtree(project)
    elsewhere = tmp_path / "B"
    elsewhere.mkdir()
    for args in (("resume", "last", PROMPT), ("run", "--resume", "last", PROMPT)):
        refused = nova(home, elsewhere, *args)
        assert refused.returncode == 3, refused.stderr
        assert "Traceback" not in refused.stderr
        assert f"session {session_id} was recorded in {project}, which no longer exists" in refused.stderr
        assert "--cwd DIR" in refused.stderr and f"--cwd {elsewhere.resolve()}" in refused.stderr
    assert paths_read_after(home, session_id, PROMPT) == []  # nothing ran
    # The flag it names does override it.
    (elsewhere / "notes.md").write_text("here now\n")
    moved = nova(home, elsewhere, "resume", "last", PROMPT, "--cwd", str(elsewhere))
    assert moved.returncode == 0, moved.stderr
    assert paths_read_after(home, session_id, PROMPT) == [str(elsewhere.resolve() / "notes.md")]


def _on_a_terminal(home: Path, cwd: Path, answer: str, *args: str) -> subprocess.CompletedProcess[str]:
    """`nova` with stdin on a pseudo-terminal that has `answer` typed into it (stdout stays a pipe, so the
    run itself is headless: only the folder question is asked)."""
    pty = pytest.importorskip("pty")
    leader, follower = pty.openpty()
    try:
        os.write(leader, answer.encode())
        return nova(home, cwd, *args, stdin=follower)
    finally:
        os.close(follower)
        os.close(leader)


def test_on_a_terminal_it_asks_naming_both_folders(tmp_path: Path, demo_session: tuple[Path, Path, str]) -> None:
    home, project, session_id = demo_session
    elsewhere = tmp_path / "B"
    elsewhere.mkdir()
    (elsewhere / "here.md").write_text("the shell's folder\n")
    kept = _on_a_terminal(home, elsewhere, "\n", "resume", "last", PROMPT)  # Enter: the recorded folder
    assert kept.returncode == 0, kept.stderr
    assert f"Session {session_id} was recorded in {project}" in kept.stderr
    assert f"but you are in {elsewhere.resolve()}" in kept.stderr
    assert all(Path(p).is_relative_to(project) for p in paths_read_after(home, session_id, PROMPT))

    here = _on_a_terminal(home, elsewhere, "h\n", "resume", "last", "look here")
    assert here.returncode == 0, here.stderr
    assert paths_read_after(home, session_id, "look here") == [str(elsewhere.resolve() / "here.md")]

    quit_ = _on_a_terminal(home, elsewhere, "q\n", "resume", "last", "never sent")
    assert quit_.returncode == 3 and "not resumed" in quit_.stderr


def test_on_a_terminal_a_gone_folder_is_asked_about_too(tmp_path: Path, demo_session: tuple[Path, Path, str]) -> None:
    home, project, session_id = demo_session
    shutil.rmtree(project)
    elsewhere = tmp_path / "B"
    elsewhere.mkdir()
    (elsewhere / "here.md").write_text("the shell's folder\n")
    asked = _on_a_terminal(home, elsewhere, "h\n", "resume", "last", PROMPT)
    assert asked.returncode == 0, asked.stderr
    assert f"recorded in {project}, which no longer exists" in asked.stderr
    assert paths_read_after(home, session_id, PROMPT) == [str(elsewhere.resolve() / "here.md")]


def test_a_session_recorded_without_a_folder_resumes_in_the_current_one(tmp_path: Path) -> None:
    """Records that never said where they ran (imports, older records) stay resumable, here."""
    from nova.sessions.session import Session

    home = tmp_path / "home"
    session = Session.create(home, title="old", cwd="", provider="demo", model="nova-demo", base_url="")
    session.close()
    here = tmp_path / "B"
    here.mkdir()
    (here / "notes.md").write_text("notes\n")
    resumed = nova(home, here, "resume", session.id, PROMPT)
    assert resumed.returncode == 0, resumed.stderr
    assert "recorded in" not in resumed.stderr
    assert paths_read_after(home, session.id, PROMPT) == [str(here.resolve() / "notes.md")]


def test_a_missing_cwd_is_a_usage_error_naming_it(tmp_path: Path, demo_session: tuple[Path, Path, str]) -> None:
    home, _project, _session_id = demo_session
    missing = tmp_path / "nowhere"
    for args in (("resume", "last", PROMPT, "--cwd", str(missing)), ("run", "x", "--cwd", str(missing)),
                 ("serve", "--cwd", str(missing))):
        out = nova(home, tmp_path, *args)
        assert out.returncode == 2, (args, out.stderr)
        assert f"'{missing}' does not exist; name an existing folder" in out.stderr


def test_resume_of_an_unknown_session_names_the_id_not_a_missing_key(tmp_path: Path) -> None:
    # No provider flag and no key in the environment: the unknown id is the fault to report.
    home = tmp_path / "home"
    out = nova(home, tmp_path, "resume", "nosuchid", "hi")
    assert out.returncode == 1
    assert "no session 'nosuchid'" in out.stderr
    assert "API key" not in out.stderr
    assert not (home / "sessions" / "nosuchid").exists()
