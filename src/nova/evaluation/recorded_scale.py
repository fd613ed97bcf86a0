"""What the provider would have counted for a view the recording never sent.

A replay knows the real input of every recorded call, but only for the view the recording sent. Once a
policy's view differs from it (a compaction, a cut, a mask), the replay can only estimate its view, and
an estimate set beside a real figure is not a comparison: on Claude Code sessions the counter's profile
runs a few percent over the real count, so a policy that sent the recorded view plus 17 tokens was priced
5 % above the recording. The replay's counter is off by some ratio at each recorded call, and the policy's
estimate is scaled by it, as the live ledger anchors its estimate on the provider's count (TOK-2):

- a recording whose views are its transcript (every format but Nova's own: the messages since its latest
  compaction boundary) is followed beside the policy, so each recorded call gives the ratio of its real
  input to the counter's estimate of the view it sent;
- a Nova recording's views are rebuilt by its pipeline record, not kept in the transcript: they are known
  only while the replay's views are the recorded ones, so the ratio of the last such call holds on.
"""

from __future__ import annotations

from collections.abc import Callable

from nova.messages import Message
from nova.model import Usage

__all__ = ["RecordedScale"]

# A counter's profile is off by a few percent, a recording's side call (a shorter prompt than its
# transcript shows) by up to about half; a ratio beyond these says the replay follows another request
# than the one counted (a caller's fixed prompt that is not the one sent), and the estimate stands.
PLAUSIBLE_RATIO = (0.25, 4.0)


class RecordedScale:
    """The counter's error at each recorded call (see the module text). `fixed` is the estimate of the
    system prompt and tools, `size` the replay's measure of one message."""

    def __init__(self, *, fixed: int, size: Callable[[Message], int], views_in_transcript: bool) -> None:
        self._fixed = fixed
        self._size = size
        self._follow = views_in_transcript
        self._messages = 0
        self._ratio: float | None = None

    def compacted(self) -> None:
        """The recording compacted here: its summary, added next, replaces everything before it."""
        self._messages = 0

    def add(self, message: Message) -> None:
        """`message` (as recorded) joins the recording's view."""
        self._messages += self._size(message)

    def recorded_view(self, counted: int, real: int) -> None:
        """A call whose view is the recorded one: the counter said `counted`, the provider `real`."""
        if counted > 0 and real > 0:
            self._ratio = real / counted

    def scaled(self, estimate: int, recorded: Usage | None) -> int:
        """`estimate` of the policy's view at a recorded call, as the provider would have counted it.
        Unchanged when nothing says how far the counter is off here. A recorded call that sent another
        request than its transcript shows (a harness's side call with a shorter prompt) is still the best
        evidence of what that call cost: a view that matches the transcript's is counted at its figure."""
        ratio = self._ratio
        if self._follow and recorded is not None and recorded.context_tokens > 0:
            follows = self._fixed + self._messages
            ratio = recorded.context_tokens / follows if follows > 0 else None
        low, high = PLAUSIBLE_RATIO
        return round(estimate * ratio) if ratio is not None and low <= ratio <= high else estimate
