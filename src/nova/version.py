"""The one place the version is written: pyproject.toml reads it from here (`[tool.setuptools.dynamic]`).

A literal rather than an `importlib.metadata` lookup, which would cost every `import nova…` (and
`nova --version`) about 40 ms.
"""

__version__ = "0.1.0"
