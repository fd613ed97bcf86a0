"""The README's test command starts a throwaway PostgreSQL with `.ci/postgres run`; it must stop it
again however the tests end, or every run leaves a server (and its files in /tmp) behind."""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
from pathlib import Path
from urllib.parse import urlsplit

import pytest

ROOT = Path(__file__).resolve().parents[1]
SCRIPT = ROOT / ".ci" / "postgres"


def _installed() -> bool:
    return shutil.which("initdb") is not None or any(Path("/usr/lib/postgresql").glob("*/bin/initdb"))


pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif(not _installed(), reason="PostgreSQL is not installed (`.ci/postgres start` installs it "
                       "with apt; this test does not)"),
]


def test_run_stops_the_cluster_and_keeps_the_commands_status(tmp_path: Path) -> None:
    seen = tmp_path / "seen"
    # The command records what it was given, checks the server answers, then fails with its own status.
    command = ('printf "%s\\n%s\\n" "$NOVA_TEST_PGDATA" "$NOVA_TEST_DATABASE_URL" > "$SEEN"; '
               'test -d "$NOVA_TEST_PGDATA/db" || exit 90; exit 7')
    env = {**os.environ, "SEEN": str(seen)}
    proc = subprocess.run(["bash", str(SCRIPT), "run", "sh", "-c", command], capture_output=True, text=True,
                          env=env, timeout=300)
    assert proc.returncode == 7, proc.stderr
    data, url = seen.read_text().split()
    assert data.startswith("/tmp/nova-pg.")
    assert not Path(data).exists()  # stopped and removed
    port = urlsplit(url).port
    assert port is not None
    with socket.socket() as probe, pytest.raises(OSError):
        probe.connect(("127.0.0.1", port))  # nothing listens there any more


def test_run_without_a_command_is_a_usage_error() -> None:
    proc = subprocess.run(["bash", str(SCRIPT), "run"], capture_output=True, text=True, timeout=60)
    assert proc.returncode == 2 and "usage: .ci/postgres run COMMAND" in proc.stderr


def test_ctrl_c_during_the_command_stops_the_cluster_too(tmp_path: Path) -> None:
    import signal
    import time

    seen = tmp_path / "seen"
    command = 'echo "$NOVA_TEST_PGDATA" > "$SEEN.part" && mv "$SEEN.part" "$SEEN"; sleep 600'
    # SIGINT as a terminal's shell hands it on: a suite started in the background (`pytest … &`) ignores
    # it, every child would inherit that, and bash cannot trap a signal ignored when it started.
    proc = subprocess.Popen(["bash", str(SCRIPT), "run", "sh", "-c", command], env={**os.environ, "SEEN": str(seen)},
                            start_new_session=True, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True,
                            preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))
    deadline = time.monotonic() + 240
    while not seen.exists():  # until the command runs, the cluster up
        assert proc.poll() is None, proc.communicate()[1]
        assert time.monotonic() < deadline, "the command never started"
        time.sleep(0.05)
    os.killpg(proc.pid, signal.SIGINT)  # what Ctrl-C in a terminal does: the whole foreground group
    proc.communicate(timeout=120)
    assert proc.returncode == 130
    assert not Path(seen.read_text().strip()).exists()
