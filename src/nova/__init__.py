"""Nova: a context engine and agent harness for LLM coding agents."""

from importlib.metadata import PackageNotFoundError, version

try:
    __version__ = version("nova-agent")
except PackageNotFoundError:  # running from a source tree without installing
    __version__ = "0.0.0"

__all__ = ["__version__"]
