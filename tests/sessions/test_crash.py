"""Crash safety with real processes: a child records messages through `Session` while the test SIGKILLs
it at random moments, 200 times. After every kill, resume must succeed, every record the child finished
writing must be there, and a torn tail must be quarantined and reported."""

from __future__ import annotations

import multiprocessing
import os
import random
import signal
import time
from pathlib import Path

import pytest

from nova.messages import Message, TextPart
from nova.sessions.schema import MessageRecord
from nova.sessions.session import Session
from nova.sessions.transcript import Transcript

# Slow tier: real processes SIGKILLed at random moments, many times (a stress run).
pytestmark = pytest.mark.slow

KILLS = 200


def _child(home: str, session_id: str, start: int, seed: int) -> None:
    """Append messages forever; after each append returns, ack its number in a side file."""
    rng = random.Random(seed)
    session = Session.open(Path(home), session_id)
    ack = os.open(Path(home) / f"acks-{session_id}", os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o600)
    i = start
    while True:
        # Mostly small records, some large enough that a kill can land inside the write itself.
        size = rng.choice([50, 500, 5_000, 200_000, 1_500_000])
        session.record_message(Message(role="user", parts=(TextPart("x" * size),), id=f"m{i}", created_at=float(i)))
        os.write(ack, f"{i}\n".encode())
        if i % 7 == 0:
            session.flush()
        i += 1


def _acked(path: Path) -> int:
    """The highest number the child finished (complete ack lines only), or -1."""
    if not path.exists():
        return -1
    done = [int(line) for line in path.read_bytes().split(b"\n")[:-1] if line]
    return max(done, default=-1)


@pytest.mark.timeout(240)
def test_sigkill_at_random_moments(nova_home: Path) -> None:
    if "fork" not in multiprocessing.get_all_start_methods():
        pytest.skip("needs fork() to start 200 children quickly")
    ctx = multiprocessing.get_context("fork")
    rng = random.Random(1234)
    quarantined = 0
    started = time.monotonic()
    for trial in range(KILLS):
        # A fresh session every few trials keeps the disk use bounded; within a session the child
        # resumes after each kill, so append-after-recovery is exercised too.
        if trial % 10 == 0:
            session = Session.create(nova_home, title=f"crash {trial}", cwd=str(nova_home), provider="p", model="m")
            session.close()
            sid = session.id
            expected_next = 0
        proc = ctx.Process(target=_child, args=(str(nova_home), sid, expected_next, rng.randrange(1 << 30)))
        proc.start()
        time.sleep(rng.uniform(0.0, 0.06))
        os.kill(proc.pid, signal.SIGKILL)
        proc.join()
        assert proc.exitcode == -signal.SIGKILL or proc.exitcode is not None

        directory = nova_home / "sessions" / sid
        torn_before = Transcript(directory / "transcript.jsonl").find_torn_tail()
        reopened = Session.open(nova_home, sid)  # resume: quarantines a torn tail
        if torn_before is not None:
            assert reopened.recovered is not None and reopened.recovered.quarantined is not None
            assert reopened.recovered.quarantined.exists()
            quarantined += 1
        else:
            assert reopened.recovered is None
        history = reopened.load_history()
        reopened.close()

        acked = _acked(nova_home / f"acks-{sid}")
        ids = [
            r.message.id for r in Transcript(directory / "transcript.jsonl").iter_records() if isinstance(r, MessageRecord)
        ]
        numbers = [int(i[1:]) for i in ids]
        # Every acknowledged record is present, in order, exactly once; this child left at most one
        # more (written, killed before its ack).
        assert numbers == list(range(len(numbers)))
        assert len(numbers) - 1 >= acked
        assert len(numbers) - 1 <= max(acked, expected_next - 1) + 1
        assert [m.id for m in history if m.role == "user"][: len(ids)] == ids[: len(history)]
        assert Transcript(directory / "transcript.jsonl").find_torn_tail() is None
        expected_next = len(numbers)
    elapsed = time.monotonic() - started
    print(f"\n{KILLS} kills in {elapsed:.1f}s, torn tails quarantined: {quarantined}")
