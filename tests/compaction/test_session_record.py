"""With a real session record: snips are written back, a compaction leaves a boundary that resume uses."""

from __future__ import annotations

from pathlib import Path

from nova.agent.loop import Agent
from nova.agent.parts import ModelBinding, Toolbox
from nova.history.invariants import check_tool_pairing
from nova.sessions.link import SessionLink
from nova.sessions.session import Session
from nova.settings import PermissionsConfig
from nova.testing import ScriptedProvider, reply
from nova.tools import default_registry
from nova.tools.permissions import PermissionPolicy

from .helpers import history, make_controller


def test_compaction_is_recorded_and_resume_starts_at_the_boundary(tmp_path: Path) -> None:
    home = tmp_path / "home"
    session = Session.create(home, cwd=tmp_path)
    prior = history(40, output_chars=1200)
    for m in prior:
        session.record_message(m)
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
    assert resumed[0].has("summary")
    assert resumed[-1].text == "ok"
    assert not check_tool_pairing(resumed)
    assert len(resumed) < len(prior)
