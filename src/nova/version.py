"""The one place the version is written: pyproject.toml reads it from here (`[tool.setuptools.dynamic]`),
and the name Nova is installed by, which every install hint uses.

A literal rather than an `importlib.metadata` lookup, which would cost every `import nova…` (and
`nova --version`) about 40 ms.
"""

__version__ = "0.1.0"

DISTRIBUTION = "nova-context-engine"
"""The name Nova is published under on the package index (pyproject.toml's `[project] name`); the
command it installs is `nova`. `nova-agent`, the name it had, belongs to an unrelated project there."""


def install_line(extra: str) -> str:
    """The pip command that installs the optional `extra`, as every "needs an extra" message says it."""
    return f"pip install '{DISTRIBUTION}[{extra}]'"
