"""A replay's restore attachment is the recorded one where the live restore left a file out.

The live restore re-reads files from disk and keeps the newest that fit its budget; the recording holds
only the ones kept. A file it left out must stay out of the replay's restore too: the result the model
saw, the replay's stand-in for it, is another text, and may fit where the disk's did not (the scripted
200-call session of test_live_equals_replay then compacted to another head one run in three, as the
random ids in its paths moved the budget across that line).
"""

from __future__ import annotations

from nova.context.compaction import RestoreContext, _restore_attachment
from nova.evaluation.recorded_run import RecordedRun
from nova.messages import Message, SummaryPart, TextPart, ToolResultPart, ToolUsePart
from nova.model import ToolSpec
from nova.sessions.readers.base import PipelineRecord, RecordedCompaction
from nova.tokens import counter_for_model

COUNTER = counter_for_model("nova-demo")
TOOLS = (ToolSpec(name="read_file", description="Read a file.", input_schema={"type": "object"}),)
# On disk, the oldest file is dense (about a token a character); the result the model saw of it is short.
# The newer four are longer than their share: shown cut.
DISK = {"b.py": "".join(chr(0x4E00 + i) for i in range(400)),
        **{f"m{n}.py": f"value_{n} = {n}\n" * 40 for n in range(4)}}


def _history() -> list[Message]:
    messages = [Message.user("Read b.py, then the modules.", id="task")]
    for n, path in enumerate(DISK):
        messages.append(Message(role="assistant", parts=(ToolUsePart(id=f"u{n}", name="read_file",
                                                                     input={"path": path}),), id=f"a{n}"))
        messages.append(Message(role="user", parts=(ToolResultPart(f"u{n}", f"{path}: a short file"),), id=f"r{n}"))
    messages.append(Message.assistant("Both read.", id="done"))
    return messages


def test_a_file_the_live_restore_left_out_stays_out_of_the_replay() -> None:
    history = _history()
    tail = history[-1:]
    live = _restore_attachment(history, tail, RestoreContext(tools=TOOLS, read_file=DISK.get), budget=325,
                               counter=COUNTER)
    # b.py's text from disk did not fit beside the newer four, each cut to its share of the five.
    assert all(f"### m{n}.py" in live for n in range(4)) and "### b.py" not in live

    head = (Message(role="user", parts=(SummaryPart(text="summary", covers=()), TextPart(live)),
                    origin="summary"), *tail)
    record = PipelineRecord(changes=(RecordedCompaction(before="done", covers=(), head=head),))
    run = RecordedRun(record, history, DISK)
    run.move_to(len(history) - 1)
    replayed = _restore_attachment(history, tail, RestoreContext(tools=TOOLS, read_file=run.read_file),
                                   budget=325, counter=COUNTER)
    assert replayed == live
    # Without the record (no compaction there) the restore falls back to the results the model saw.
    run.move_to(1)
    elsewhere = _restore_attachment(history, tail, RestoreContext(tools=TOOLS, read_file=run.read_file),
                                    budget=325, counter=COUNTER)
    assert "### b.py\nb.py: a short file" in elsewhere
