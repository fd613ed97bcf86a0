"""`nova serve --workers N`: N server processes accepting on one listening socket, sharing sessions
through PostgreSQL.

The supervisor binds the port once and starts each worker as `nova serve` again (same arguments) with
the socket's descriptor inherited and named in `NOVA_SERVE_SOCKET_FD`; the kernel spreads connections
over the processes accepting on it. A worker that dies is started again after a second; its sessions
need nothing from it (their locks went with its database connections). Ctrl-C or SIGTERM stops all.
Workers on other hosts are plain `nova serve` processes with the same `NOVA_DATABASE_URL`.
"""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from nova.errors import ConfigError

if TYPE_CHECKING:
    from nova.settings import Settings

__all__ = ["WORKER_ENV", "inherited_sockets", "require_database", "run_workers"]

WORKER_ENV = "NOVA_SERVE_SOCKET_FD"
RESTART_DELAY_S = 1.0


def inherited_sockets() -> list[socket.socket] | None:
    """The listening socket a supervisor handed this worker, or None to bind as usual."""
    fd = os.environ.get(WORKER_ENV)
    if not fd:
        return None
    return [socket.socket(fileno=int(fd))]


def require_database(settings: Settings) -> None:
    from nova.sessions.backend import database_url

    if database_url(settings.home) is None:
        raise ConfigError("several workers share their sessions through PostgreSQL: set NOVA_DATABASE_URL "
                          "(or the config's store.url) to postgresql://user@host/database")


def run_workers(settings: Settings, *, host: str, port: int, workers: int, say: Callable[[str], None] = print) -> None:
    """Listen on `host`:`port` and hand the socket to `workers` processes of this command, restarting any
    that ends, until SIGTERM or SIGINT."""
    require_database(settings)
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    # IPPROTO_TCP named, not 0: asyncio turns Nagle off only on sockets whose proto says TCP, and an
    # accepted connection copies it from this one (else small responses wait ~40 ms for a delayed ACK).
    sock = socket.socket(family, socket.SOCK_STREAM, socket.IPPROTO_TCP)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    try:
        sock.bind((host, port))
    except OSError as exc:
        raise ConfigError(f"cannot listen on {host}:{port}: {exc.strerror}") from None
    sock.listen(2048)
    sock.set_inheritable(True)
    env = {**os.environ, WORKER_ENV: str(sock.fileno())}
    argv = [sys.executable, "-m", "nova.cli.main", *sys.argv[1:]]
    stopping = False

    def start() -> subprocess.Popen[bytes]:
        return subprocess.Popen(argv, env=env, pass_fds=(sock.fileno(),), stdout=subprocess.DEVNULL)

    def stop(*_: Any) -> None:
        nonlocal stopping
        stopping = True

    signal.signal(signal.SIGTERM, stop)
    signal.signal(signal.SIGINT, stop)
    procs = [start() for _ in range(workers)]
    say(f"Nova serving on http://{host}:{port} with {workers} workers (pids "
        f"{', '.join(str(p.pid) for p in procs)}) over one PostgreSQL database; Ctrl-C stops them")
    try:
        while not stopping:
            time.sleep(0.2)
            for n, proc in enumerate(procs):
                if proc.poll() is not None and not stopping:
                    say(f"worker {proc.pid} ended (exit {proc.returncode}); starting another")
                    time.sleep(RESTART_DELAY_S)
                    procs[n] = start()
    finally:
        for proc in procs:
            if proc.poll() is None:
                proc.send_signal(signal.SIGTERM)
        deadline = time.monotonic() + 15
        for proc in procs:
            try:
                proc.wait(timeout=max(0.1, deadline - time.monotonic()))
            except subprocess.TimeoutExpired:
                proc.kill()
        sock.close()
