"""Nova's own bookkeeping files, which the reading tools never list.

Inside a `.nova` folder (a project's, or the home `~/.nova`) Nova keeps, beside the memories and skills
a user reads and writes, files that are only its machinery: lock files (`.memory.lock`,
`.consolidate.lock` and their `.guard`), review records (`.reviews.json`), consolidation state, the
temporary files of atomic writes (`.name.md.*.tmp`) and the recency journal folder `.nova-scan`. They
are all dot-named or end in `.lock`; none of them is anything a model should look at, and listing them
(`glob **/*` showing `.nova/memory/.memory.lock`) only adds noise. `grep` and `glob` leave them out;
`read_file` still reads one named explicitly.
"""

from __future__ import annotations

__all__ = ["NOVA_DIR", "SERVER_TOKEN_FILE", "is_internal_dir", "is_internal_file"]

NOVA_DIR = ".nova"
SERVER_TOKEN_FILE = "server-token"
"""In Nova's home: the server's bearer token (nova.server.token). Named here, below the server, because
the tools' policy keeps every tool from reading it."""
_JOURNAL_DIR = ".nova-scan"


def is_internal_dir(name: str, *, in_nova_dir: bool) -> bool:
    """Whether the folder `name` holds only Nova's machinery. `in_nova_dir`: it sits somewhere below a
    `.nova` folder."""
    return name == _JOURNAL_DIR or (in_nova_dir and name.startswith("."))


def is_internal_file(name: str, *, in_nova_dir: bool) -> bool:
    """Whether the file `name` is Nova's machinery (see the module doc)."""
    return in_nova_dir and (name.startswith(".") or name.endswith((".lock", ".lock.guard")))
