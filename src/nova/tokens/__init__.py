"""Token accounting: counters (script-aware heuristic, exact offline tiktoken) and the usage ledger.

    ledger = TokenLedger(counter_for_model("claude-sonnet-4-5"))
    ledger.record(reply.id, response.usage, sent=request.messages)  # each reply entering history (TOK-2)
    used = ledger.estimate(history, system, tools)    # the one figure every surface shows (TOK-3)
    ledger.clear()                                    # after a successful compaction

The package's names are its modules' public names (each module's `__all__`), so the two cannot drift apart.
"""

from nova.tokens import counters, for_model, ledger, memo, offline_tiktoken, sizing
from nova.tokens.counters import *  # noqa: F403
from nova.tokens.for_model import *  # noqa: F403
from nova.tokens.ledger import *  # noqa: F403
from nova.tokens.memo import *  # noqa: F403
from nova.tokens.offline_tiktoken import *  # noqa: F403
from nova.tokens.sizing import *  # noqa: F403

__all__ = []
__all__ += counters.__all__
__all__ += for_model.__all__
__all__ += ledger.__all__
__all__ += memo.__all__
__all__ += offline_tiktoken.__all__
__all__ += sizing.__all__
