"""`nova sessions …` through typer's CliRunner: machine-readable output and one-line errors."""

from __future__ import annotations

import json
from pathlib import Path

from typer.testing import CliRunner

from nova.cli.commands.sessions import app, resume_command
from nova.sessions.schema import BoundaryRecord
from nova.sessions.session import Session

from .conftest import assistant_call, user

runner = CliRunner()


def _make(home: Path, title: str = "demo") -> Session:
    s = Session.create(home, title=title, cwd=str(home), provider="anthropic", model="claude")
    s.record_message(user("hello", "m1"))
    s.record_message(assistant_call("m2", "c1"))
    s.record_compact_boundary(BoundaryRecord(id="", summary="we said hello", covers=("m1",), tokens_before=100,
                                             tokens_after=10))
    s.record_message(user("again", "m3"))
    s.close()
    return s


def test_list_json(nova_home: Path) -> None:
    result = runner.invoke(app, ["list", "--json"])
    assert result.exit_code == 0 and json.loads(result.stdout) == []
    s = _make(nova_home)
    result = runner.invoke(app, ["list", "--json"])
    (row,) = json.loads(result.stdout)
    assert {k: row[k] for k in ("id", "title", "messages", "context_tokens", "tokens_billed", "cost_usd")} == {
        "id": s.id, "title": "demo", "messages": 3, "context_tokens": 0, "tokens_billed": 0, "cost_usd": 0.0
    }
    table = runner.invoke(app, ["list"])
    assert table.exit_code == 0 and s.id in table.stdout


def test_import_json_then_show_and_export(nova_home: Path, tmp_path: Path) -> None:
    chat = tmp_path / "chat.json"
    chat.write_text(json.dumps({"messages": [{"role": "user", "content": "hi"}, {"role": "assistant", "content": "yo"}]}))
    result = runner.invoke(app, ["import", str(chat), "--json"])
    assert result.exit_code == 0, result.output
    data = json.loads(result.stdout)
    assert set(data) == {"session_id", "messages"} and data["messages"] == 2
    shown = runner.invoke(app, ["show", data["session_id"]])
    assert shown.exit_code == 0 and "yo" in shown.stdout
    md = runner.invoke(app, ["export", data["session_id"], "--format", "md"])
    assert md.exit_code == 0 and "### assistant" in md.stdout
    raw = runner.invoke(app, ["export", data["session_id"], "--format", "jsonl"])
    # The session header (title, cwd, provider, model), then the log: the imported event and the messages.
    assert [json.loads(line)["type"] for line in raw.stdout.splitlines()] == ["event", "event", "message", "message"]
    assert json.loads(raw.stdout.splitlines()[0])["name"] == "session"


def test_show_marks_compaction_boundaries(nova_home: Path) -> None:
    s = _make(nova_home)
    shown = runner.invoke(app, ["show", s.id])
    assert shown.exit_code == 0 and "compaction" in shown.stdout and "we said hello" in shown.stdout
    md = runner.invoke(app, ["export", s.id, "--format", "md"])
    assert "Compaction boundary" in md.stdout


def test_show_numbers_messages_as_a_replay_counts_them(nova_home: Path) -> None:
    # `compact_before` and the other replay indexes count messages as recorded; show prints those numbers.
    import re

    from nova.sessions.importers import read_session_file
    from nova.sessions.transcript import TRANSCRIPT_NAME

    s = _make(nova_home)
    shown = runner.invoke(app, ["show", s.id]).stdout
    numbered = re.findall(r"^#(\d+) (\w+)  (\S+)", shown, flags=re.M)
    assert [(n, role) for n, role, _ in numbered] == [("0", "user"), ("1", "assistant"), ("2", "user")]
    replayed = read_session_file(s.dir / TRANSCRIPT_NAME).messages
    assert [replayed[int(n)].id for n, _, _ in numbered] == [ident for _, _, ident in numbered]


def test_show_says_when_the_log_ends_inside_a_tool_call(nova_home: Path) -> None:
    s = Session.create(nova_home, title="killed", cwd=str(nova_home), provider="anthropic", model="claude")
    s.record_message(user("run it", "m1"))
    s.record_message(assistant_call("m2", "c1"))  # what a kill -9 during the call leaves
    s.close()
    shown = runner.invoke(app, ["show", s.id]).stdout
    assert "no result recorded" in shown and "interrupted" in shown
    assert "no result recorded" not in runner.invoke(app, ["show", _make(nova_home, "whole").id]).stdout


def test_rm_asks_unless_yes(nova_home: Path) -> None:
    s = _make(nova_home)
    declined = runner.invoke(app, ["rm", s.id], input="n\n")
    assert declined.exit_code == 1 and s.dir.exists()
    done = runner.invoke(app, ["rm", s.id, "--yes"])
    assert done.exit_code == 0 and not s.dir.exists()


def _one_clean_error(result: object, needle: str) -> None:
    assert result.exit_code == 1  # type: ignore[attr-defined]
    err = result.stderr  # type: ignore[attr-defined]
    assert needle in err and "Traceback" not in err and len(err.strip().splitlines()) == 1


def test_bad_inputs_are_one_line_and_change_nothing(nova_home: Path, tmp_path: Path) -> None:
    _one_clean_error(runner.invoke(app, ["show", "nope"]), "no session 'nope'")
    _one_clean_error(runner.invoke(app, ["export", "../../etc"]), "invalid session id")
    _one_clean_error(runner.invoke(app, ["rm", "nope", "--yes"]), "no session")
    _one_clean_error(runner.invoke(app, ["import", str(tmp_path / "missing.json")]), "does not exist")

    s = _make(nova_home)
    meta = s.dir / "meta.json"
    good_meta = meta.read_bytes()
    meta.write_text("{not json")
    for args in (["show", s.id], ["export", s.id]):  # read from the transcript, with a warning
        result = runner.invoke(app, args)
        assert result.exit_code == 0 and "meta.json is corrupt" in result.stderr
    assert meta.read_text() == "{not json" and s.dir.exists()
    meta.write_bytes(good_meta)

    transcript = s.dir / "transcript.jsonl"
    with transcript.open("ab") as f:
        f.write(b'{"v":7,"type":"message","ts":0,"message":{}}\n')
    before = sorted(p.name for p in s.dir.iterdir()), transcript.read_bytes()
    _one_clean_error(runner.invoke(app, ["show", s.id, "--strict"]), "schema version 7")
    _one_clean_error(runner.invoke(app, ["export", s.id, "--format", "md", "--strict"]), "schema version 7")
    assert (sorted(p.name for p in s.dir.iterdir()), transcript.read_bytes()) == before


def test_resume_helper(nova_home: Path) -> None:
    s = _make(nova_home)
    with (s.dir / "transcript.jsonl").open("ab") as f:
        f.write(b'{"v":1,"type":"mes')
    resumed = resume_command(s.id, home=nova_home)
    # The summary and the next user message are both user turns: merged so roles alternate.
    (only,) = resumed.history
    assert only.metadata["merged_from"] == [f"{_boundary_id(s)}.summary", "m3"]
    assert "we said hello" in only.text and "again" in only.text
    assert any("incomplete last record" in n for n in resumed.notices)
    resumed.session.close()


def _boundary_id(s: Session) -> str:
    from nova.sessions.transcript import Transcript

    tail = Transcript(s.dir / "transcript.jsonl").read_tail()
    assert tail.boundary is not None
    return tail.boundary.id


def test_export_format_takes_markdown_and_md_and_names_the_choices(nova_home: Path) -> None:
    s = _make(nova_home)
    long = runner.invoke(app, ["export", s.id, "--format", "markdown"])
    short = runner.invoke(app, ["export", s.id, "-f", "md"])
    assert long.exit_code == 0, long.output
    assert long.stdout == short.stdout and "### assistant" in long.stdout
    helped = runner.invoke(app, ["export", "--help"])
    assert "jsonl" in helped.stdout and "markdown" in helped.stdout


def test_list_labels_the_last_context_apart_from_the_tokens_billed(nova_home: Path) -> None:
    from nova.model import Usage

    s = Session.create(nova_home, title="two calls", cwd=str(nova_home), provider="anthropic", model="claude")
    s.record_message(user("hello", "m1"))
    s.add_cost(Usage(input_tokens=60, cache_read_tokens=40, output_tokens=10), 0.01)
    s.add_cost(Usage(input_tokens=100, cache_read_tokens=200, output_tokens=20), 0.02)
    s.close()
    (row,) = json.loads(runner.invoke(app, ["list", "--json"]).stdout)
    assert row["context_tokens"] == 320  # the last call: 300 read + 20 written
    assert row["tokens_billed"] == 430  # both calls, every token
    assert "tokens" not in row  # the old unlabelled key is gone
    table = runner.invoke(app, ["list"], env={"COLUMNS": "100"}).stdout
    header = table.splitlines()[0] + table.splitlines()[1]
    assert "context" in header and "billed" in header
    assert "320" in table and "430" in table and "tokens billed:" in table
    shown = runner.invoke(app, ["show", s.id]).stdout
    assert "context 320 tokens" in shown and "430 tokens billed" in shown
    helped = runner.invoke(app, ["list", "--help"]).stdout
    assert "context_tokens" in helped and "tokens_billed" in helped


def test_list_shows_an_unknown_cost_as_unknown_never_zero(nova_home: Path) -> None:
    from nova.model import Usage

    priced = Session.create(nova_home, title="priced", cwd=str(nova_home), provider="anthropic", model="claude")
    priced.add_cost(Usage(input_tokens=100, output_tokens=10), 0.25)
    priced.close()
    unpriced = Session.create(nova_home, title="unpriced", cwd=str(nova_home), provider="local", model="mystery")
    unpriced.add_cost(Usage(input_tokens=100, output_tokens=10), 0.25)
    unpriced.add_cost(Usage(input_tokens=5_000_000, output_tokens=10), None)  # no price for this call
    unpriced.close()
    rows = {r["title"]: r for r in json.loads(runner.invoke(app, ["list", "--json"]).stdout)}
    assert rows["priced"]["cost_usd"] == 0.25
    assert rows["unpriced"]["cost_usd"] is None and rows["unpriced"]["tokens_billed"] == 5_000_120
    table = runner.invoke(app, ["list"], env={"COLUMNS": "160"}).stdout
    line = next(x for x in table.splitlines() if unpriced.id in x)
    assert "unknown" in line and "$0.00" not in line and "$0.25" not in line
    assert "$0.25" in next(x for x in table.splitlines() if priced.id in x)
    assert "cost unknown" in runner.invoke(app, ["show", unpriced.id]).stdout


def test_an_unknown_session_id_is_named_with_where_to_find_the_ids(nova_home: Path) -> None:
    """Every command that takes a session id, given one that is not there: one line naming it, saying how
    to list the ids, exit 1."""
    from nova.cli.main import app as nova

    _make(nova_home)
    for args in (["show", "nosuchid"], ["export", "nosuchid"], ["rm", "nosuchid", "--yes"],
                 ["doctor", "nosuchid"]):
        result = runner.invoke(app, args)
        _one_clean_error(result, "no session 'nosuchid'")
        assert "nova sessions list" in result.stderr, (args, result.stderr)
    for args in (["context", "nosuchid"], ["replay", "nosuchid"]):
        result = runner.invoke(nova, args)
        assert result.exit_code == 1 and "nosuchid" in result.stderr and "Traceback" not in result.stderr
        assert "nova sessions list" in result.stderr, (args, result.stderr)


def test_replay_takes_the_id_an_import_printed(nova_home: Path, tmp_path: Path) -> None:
    from nova.cli.main import app as nova

    chat = tmp_path / "chat.json"
    chat.write_text(json.dumps([{"role": "user", "content": "hi"}, {"role": "assistant", "content": "hello"}]))
    imported = json.loads(runner.invoke(app, ["import", str(chat), "--json"]).stdout)
    by_id = runner.invoke(nova, ["replay", imported["session_id"], "--json"])
    assert by_id.exit_code == 0, by_id.output
    by_folder = runner.invoke(nova, ["replay", str(nova_home / "sessions" / imported["session_id"]), "--json"])
    assert json.loads(by_id.stdout)["calls"] == json.loads(by_folder.stdout)["calls"] == 1


def test_list_at_80_columns_cuts_the_title_never_a_figure(nova_home: Path) -> None:
    """A cost of $10 or more was cut to "$10.…" at 80 columns (the width of a pipe): the columns were sized
    for figures under $10 and a short tokens-billed count."""
    from nova.model import Usage

    s = Session.create(nova_home, title="fa812bfe-b295-4cca-9c2f-fdf01028cb46 / sub-agent 2", cwd=str(nova_home),
                       provider="anthropic", model="claude")
    s.record_message(user("hello", "m1"))
    s.add_cost(Usage(input_tokens=15_000_000, output_tokens=10), 10.0)
    s.add_cost(Usage(input_tokens=1_000, cache_read_tokens=131_649, output_tokens=10), 0.227072)
    s.close()
    wide = runner.invoke(app, ["list"], env={"COLUMNS": "100"}).stdout
    line = next(x for x in wide.splitlines() if s.id in x)
    assert "$10.23" in line and "15,132,669" in line and " 132,659 " in line, wide
    assert all(len(x) <= 100 for x in wide.splitlines()[:-1]), wide
    # At 80 the token figures give way whole (never cut), so the title keeps enough to be recognised.
    narrow = runner.invoke(app, ["list"], env={"COLUMNS": "80"}).stdout
    line = next(x for x in narrow.splitlines() if s.id in x)
    assert "$10.23" in line and "fa812bfe-b295-4cca-9c2f" in line and "132,6" not in line, narrow
    assert all(len(x) <= 80 for x in narrow.splitlines()[:-1]), narrow
    assert narrow.splitlines()[-1].startswith("context and tokens billed left out to fit 80 columns"), narrow
