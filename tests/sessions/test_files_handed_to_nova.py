"""Files handed to Nova that are not files to read: a FIFO where a transcript, a meta.json, a config.json,
a session to import or a case file belongs; `/dev/zero` in their place; one line of 200,000 nested
brackets. Every command returns (a timeout here is the hang it used to be) with one message naming the
file and what it is, inside a memory cap (reading `/dev/zero` used to grow until the kernel killed it),
and never with a traceback.

FIFOs are tried in-process (a hang is cut by the test's timeout); `/dev/zero` in a child process with
its address space capped, so a regression fails the test instead of taking the machine down."""

from __future__ import annotations

import json
import os
import resource
import subprocess
import sys
from pathlib import Path

import pytest
from typer.testing import CliRunner

from nova.cli.main import app
from nova.fs.safe_read import JSONTooDeep, LongLine, bounded_lines, json_too_deep, loads
from nova.sessions.session import Session
from nova.sessions.transcript import Transcript

from .conftest import assistant_call, user

runner = CliRunner()
DEEP_LINE = "[" * 200_000 + "]" * 200_000
MEMORY_CAP = 2 * 1024**3


def _session(home: Path) -> Session:
    session = Session.create(home, title="a session", cwd=str(home), provider="demo", model="nova-demo")
    session.record_message(user("hello", "m1"))
    session.record_message(assistant_call("m2", "c1"))
    session.close()
    return session


def _chat(path: Path) -> Path:
    path.write_text(json.dumps({"messages": [{"role": "user", "content": "hi"},
                                             {"role": "assistant", "content": "hello"}]}))
    return path


def _session_commands(sid: str, cwd: Path) -> dict[str, list[str]]:
    return {
        "show": ["sessions", "show", sid],
        "export": ["sessions", "export", sid],
        "doctor": ["sessions", "doctor", sid],
        "resume": ["--provider", "demo", "run", "--resume", sid, "go on", "--yes", "--cwd", str(cwd)],
    }


def _no_traceback(output: str) -> None:
    assert "Traceback" not in output and "RecursionError" not in output and "MemoryError" not in output, output


# -- a FIFO in place of a file ---------------------------------------------------------------------------
@pytest.mark.timeout(30)
@pytest.mark.parametrize("command", ["show", "export", "doctor", "resume"])
def test_a_fifo_transcript_is_refused_by_name(command: str, nova_home: Path, tmp_path: Path) -> None:
    session = _session(nova_home)
    transcript = session.dir / "transcript.jsonl"
    transcript.unlink()
    os.mkfifo(transcript)
    result = runner.invoke(app, _session_commands(session.id, tmp_path)[command])
    assert result.exit_code != 0, result.output
    assert str(transcript) in result.output and "FIFO" in result.output, result.output
    _no_traceback(result.output)


@pytest.mark.timeout(30)
def test_a_fifo_meta_json_counts_as_damage_and_the_session_still_reads(nova_home: Path) -> None:
    session = _session(nova_home)
    (session.dir / "meta.json").unlink()
    os.mkfifo(session.dir / "meta.json")
    listed = runner.invoke(app, ["sessions", "list"])
    assert listed.exit_code == 0 and session.id in listed.output
    assert "meta.json is corrupt" in listed.output and "FIFO" in listed.output
    shown = runner.invoke(app, ["sessions", "show", session.id])
    assert shown.exit_code == 0 and "hello" in shown.output, shown.output


@pytest.mark.timeout(30)
@pytest.mark.parametrize("command", ["import", "replay", "eval-session", "eval-case"])
def test_a_fifo_given_to_import_replay_or_eval_is_refused_by_name(command: str, tmp_path: Path) -> None:
    fifo = tmp_path / "session.jsonl"
    os.mkfifo(fifo)
    case = tmp_path / "case.json"
    case.write_text(json.dumps({"session": str(fifo)}))
    argv = {"import": ["sessions", "import", str(fifo)], "replay": ["replay", str(fifo)],
            "eval-session": ["eval", str(case)], "eval-case": ["eval", str(fifo)]}[command]
    result = runner.invoke(app, argv)
    assert result.exit_code in (1, 2), result.output
    assert "session.jsonl" in result.output and "FIFO" in result.output, result.output
    _no_traceback(result.output)


@pytest.mark.timeout(30)
@pytest.mark.parametrize("command", [["config", "show"], ["run", "hello", "--yes"]])
def test_a_fifo_config_json_stops_run_and_config_show_with_the_file_named(
    command: list[str], nova_home: Path, tmp_path: Path
) -> None:
    nova_home.mkdir(parents=True)
    os.mkfifo(nova_home / "config.json")
    result = runner.invoke(app, [*command, *(["--cwd", str(tmp_path)] if command[0] == "run" else [])])
    assert result.exit_code == 1, result.output
    assert f"{nova_home / 'config.json'} is a FIFO" in result.output and "move it aside" in result.output
    sessions = nova_home / "sessions"
    assert not sessions.exists() or not any(sessions.iterdir()), "run refused before recording a session"


# -- /dev/zero in place of a file (in a child process, memory capped) -------------------------------------
def _cap_memory() -> None:
    resource.setrlimit(resource.RLIMIT_AS, (MEMORY_CAP, MEMORY_CAP))


def _nova(home: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("NOVA_", "ANTHROPIC_", "OPENAI_"))}
    env["NOVA_HOME"] = str(home)
    return subprocess.run([sys.executable, "-m", "nova.cli.main", *args], capture_output=True, text=True, env=env,
                          timeout=60, preexec_fn=_cap_memory)


@pytest.mark.skipif(not Path("/dev/zero").exists(), reason="needs /dev/zero")
@pytest.mark.parametrize("command", ["doctor", "show", "resume"])
def test_a_transcript_linked_to_dev_zero_is_refused_not_read(command: str, nova_home: Path, tmp_path: Path) -> None:
    session = _session(nova_home)
    transcript = session.dir / "transcript.jsonl"
    transcript.unlink()
    transcript.symlink_to("/dev/zero")
    done = _nova(nova_home, *_session_commands(session.id, tmp_path)[command])
    output = done.stdout + done.stderr
    assert done.returncode != 0, output
    assert f"{transcript} is a device" in output, output
    _no_traceback(output)


@pytest.mark.skipif(not Path("/dev/zero").exists(), reason="needs /dev/zero")
@pytest.mark.parametrize("argv", [["sessions", "import", "/dev/zero"], ["replay", "/dev/zero"]])
def test_dev_zero_given_to_import_or_replay_is_refused(argv: list[str], nova_home: Path) -> None:
    done = _nova(nova_home, *argv)
    assert done.returncode == 1, done.stderr
    assert "/dev/zero is a device" in done.stderr
    _no_traceback(done.stderr)


@pytest.mark.skipif(not Path("/dev/zero").exists(), reason="needs /dev/zero")
def test_a_config_json_linked_to_dev_zero_is_refused(nova_home: Path) -> None:
    nova_home.mkdir(parents=True)
    (nova_home / "config.json").symlink_to("/dev/zero")
    done = _nova(nova_home, "config", "show")
    assert done.returncode == 1, done.stderr
    assert f"{nova_home / 'config.json'} is a device" in done.stderr
    _no_traceback(done.stderr)


# -- one line of 200,000 nested brackets -----------------------------------------------------------------
@pytest.mark.parametrize("command", ["show", "export", "doctor", "resume"])
def test_a_deeply_nested_record_is_a_damaged_line_not_a_crash(command: str, nova_home: Path, tmp_path: Path) -> None:
    session = _session(nova_home)
    transcript = session.dir / "transcript.jsonl"
    offset = transcript.stat().st_size
    with transcript.open("a") as handle:
        handle.write(DEEP_LINE + "\n")
    result = runner.invoke(app, _session_commands(session.id, tmp_path)[command])
    assert result.exit_code == 0, result.output
    _no_traceback(result.output)
    assert f"at byte {offset}" in result.output and "nested more than 200 levels" in result.output, result.output


def test_a_deeply_nested_file_to_import_is_refused_with_a_message(tmp_path: Path) -> None:
    deep = tmp_path / "deep.json"
    deep.write_text(DEEP_LINE)
    for argv in (["sessions", "import", str(deep)], ["replay", str(deep)]):
        result = runner.invoke(app, argv)
        assert result.exit_code == 1, result.output
        assert "deep.json" in result.output
        _no_traceback(result.output)


def test_a_deeply_nested_config_is_a_config_error(nova_home: Path) -> None:
    nova_home.mkdir(parents=True)
    (nova_home / "config.json").write_text(DEEP_LINE)
    result = runner.invoke(app, ["config", "show"])
    assert result.exit_code == 1
    assert "nested more than 200 levels" in result.output and str(nova_home / "config.json") in result.output


def test_a_deeply_nested_case_file_is_a_case_error(tmp_path: Path) -> None:
    case = tmp_path / "case.json"
    case.write_text(DEEP_LINE)
    result = runner.invoke(app, ["eval", str(case)])
    assert result.exit_code == 2 and "case.json" in result.output and "nested" in result.output, result.output
    _no_traceback(result.output)


# -- the helpers the commands share ------------------------------------------------------------------------
def test_depth_is_counted_outside_strings_only() -> None:
    assert not json_too_deep(json.dumps({"text": "[" * 5000}), 10)
    assert not json_too_deep("[" * 10 + "]" * 10, 10)
    assert json_too_deep("[" * 11 + "]" * 11, 10)
    assert json_too_deep('{"a": ' * 11 + "1" + "}" * 11, 10)
    assert not json_too_deep('["\\"", ' + "[]," * 50 + "[]]", 10), "an escaped quote does not end the string"
    assert loads('{"a": [1, {"b": "[[["}]}') == {"a": [1, {"b": "[[["}]}
    with pytest.raises(JSONTooDeep, match="nested more than 200 levels") as raised:
        loads(DEEP_LINE)
    assert isinstance(raised.value, ValueError)


def test_an_over_long_line_is_skipped_unread_and_reported(tmp_path: Path) -> None:
    path = tmp_path / "lines"
    path.write_bytes(b"short\n" + b"x" * 5000 + b"\nafter\n" + b"y" * 5000)
    with path.open("rb") as handle:
        items = list(bounded_lines(handle, limit=100))
    assert items == [(0, b"short\n"), LongLine(offset=6, size=5001, terminated=True), (5007, b"after\n"),
                     LongLine(offset=5013, size=5000, terminated=False)]


def test_a_transcript_line_over_the_limit_is_a_damaged_record_by_offset(nova_home: Path) -> None:
    session = _session(nova_home)
    path = session.dir / "transcript.jsonl"
    offset = path.stat().st_size
    with path.open("ab") as handle:
        handle.write(b'{"v":1,"type":"event","name":"big","data":{"x":"' + b"z" * 10_000 + b'"}}\n')
    transcript = Transcript(path, max_line_bytes=4096)
    bad: list = []
    records = list(transcript.iter_records(on_bad=bad.append))
    assert len(records) == 2 and [b.offset for b in bad] == [offset]
    assert "longer than the 4,096 a record may take" in bad[0].reason
    tail = transcript.read_tail()
    assert [b.offset for b in tail.bad] == [offset] and len(tail.messages()) == 2


# -- files a repository hands Nova --------------------------------------------------------------------------
def test_a_deeply_nested_mcp_json_stops_run_with_the_file_named(tmp_path: Path) -> None:
    project = tmp_path / "project"
    (project / ".git").mkdir(parents=True)
    (project / ".mcp.json").write_text(DEEP_LINE)
    result = runner.invoke(app, ["--provider", "demo", "run", "hello", "--yes", "--cwd", str(project)])
    assert result.exit_code == 1, result.output
    assert ".mcp.json" in result.output and "nested more than 200 levels" in result.output
    _no_traceback(result.output)


@pytest.mark.timeout(30)
def test_a_skill_file_that_is_a_fifo_is_refused_not_opened(tmp_path: Path) -> None:
    from nova.errors import SkillError
    from nova.skills.manifest import read_skill

    folder = tmp_path / "skills" / "deploy"
    folder.mkdir(parents=True)
    os.mkfifo(folder / "SKILL.md")
    with pytest.raises(SkillError, match="FIFO"):
        read_skill(folder)
