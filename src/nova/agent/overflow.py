"""Overflow recovery lives in `nova.context.overflow` with the rest of the context engine; this name
stays because the user docs and the seed documents use it."""

from nova.context.overflow import *  # noqa: F403
from nova.context.overflow import __all__ as __all__
