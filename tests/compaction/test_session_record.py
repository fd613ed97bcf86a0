"""With a real session record: snips are written back, a compaction leaves a boundary that resume uses."""

from __future__ import annotations

from pathlib import Path

from nova.agent.loop import Agent
from nova.agent.parts import ModelBinding, Toolbox
from nova.history.invariants import check_tool_pairing
from nova.messages import Message
from nova.sessions.link import SessionLink
from nova.sessions.session import Session
from nova.settings import PermissionsConfig
from nova.testing import ScriptedProvider, reply
from nova.tools import default_registry
from nova.tools.permissions import PermissionPolicy

from .helpers import history, make_controller


def _recorded(home: Path, cwd: Path, messages: list[Message]) -> Session:
    """A new session under `home` that has recorded `messages`."""
    session = Session.create(home, cwd=cwd)
    for m in messages:
        session.record_message(m)
    return session


def test_compaction_is_recorded_and_resume_starts_at_the_boundary(tmp_path: Path) -> None:
    home = tmp_path / "home"
    prior = history(40, output_chars=1200)
    session = _recorded(home, tmp_path, prior)
    controller, _ = make_controller(tmp_path, window=20_000, recorder=session)
    agent = Agent(model=ModelBinding(provider=ScriptedProvider([reply("ok")]), name="m"),
                  toolbox=Toolbox(tools=default_registry(), cwd=tmp_path,
                                  policy=PermissionPolicy(PermissionsConfig(), interactive=False, yes=True)),
                  budget=controller.budget, session=SessionLink(id=session.id, recorder=session, dir=session.dir),
                  history=prior, extensions=[controller], ledger=controller.ledger)
    agent.run_turn("continue")
    assert controller.stats.compactions == 1
    session.close()  # one writer at a time: the reopen below would be refused while this one is open
    reopened = Session.open(home, session.id)
    resumed = reopened.load_history()
    # The opening request kept in place, then the summary, each its own message as the live view had them.
    assert resumed[0].parts == prior[0].parts and resumed[1].has("summary")
    assert resumed[-1].text == "ok"
    assert not check_tool_pairing(resumed)
    assert len(resumed) < len(prior)


def test_a_manual_compaction_that_would_grow_the_view_leaves_no_trace(tmp_path: Path) -> None:
    """`/compact` on a short conversation: the summary (the user's words, the restore attachment) would
    outweigh what it folds, so the view stays as it was, and so does the record: no boundary for a
    resume to start from, no receipt, no compaction counted; the "compacting…" the UI showed is closed."""
    from nova import events as ev
    from nova.sessions.schema import BoundaryRecord

    home = tmp_path / "home"
    prior = history(3, output_chars=200)
    session = _recorded(home, tmp_path, prior)
    controller, seen = make_controller(tmp_path, window=200_000, recorder=session)
    before = controller.measure(prior)

    view = controller.compact_now(prior)

    assert view == prior and controller.measure(view) == before
    assert controller.stats.compactions == 0 and controller.receipts == []
    ends = [e for e in seen if isinstance(e, ev.CompactionEnd)]
    assert [e.ok for e in ends] == [False] and "would not make the view smaller" in ends[0].error
    assert ends[0].declined  # said as a decision, not as a failure
    assert not any(isinstance(r, BoundaryRecord) for r in session.transcript.iter_records())
    session.close()
    reopened = Session.open(home, session.id, readonly=True)
    assert reopened.meta.compacted_at is None
    assert [m.id for m in reopened.load_history()] == [m.id for m in prior]
    reopened.close()
