"""Compaction lives in `nova.context.compaction` with the rest of the context engine; this name stays
because the user docs and the seed documents use it."""

from nova.context.compaction import *  # noqa: F403
from nova.context.compaction import __all__ as __all__
