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

Once the recording has compacted, its calls measure another kind of view than a policy's: the summary,
and what the agent attached to it that no record holds (Claude Code reads the recent files back in), so
the first call after a Claude Code compaction counts 25 % over its transcript where the calls before it
counted 7 % under. A policy's view is still the conversation itself, so it keeps the ratio the recording
had before its first compaction.

A baseline fits its view to the line by the counter, so where the provider counts more than the counter
(on some Claude Code sessions the ratio climbs to 1.3: the harness adds to every step what no record
holds) its views would be over the window as the provider counts them. A competent baseline corrects by
the last figure the provider reported, as every harness can: `fit_limit` is the line divided by the
ratio of the latest recorded call before this one (never loosened when the counter counts more).
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

    def __init__(self, *, fixed: int, size: Callable[[Message], int], views_in_transcript: bool,
                 measured: int = 0) -> None:
        self._fixed = fixed
        self._measured = min(max(measured, 0), fixed)  # the part of `fixed` in the provider's units
        self._size = size
        self._follow = views_in_transcript
        self._messages = 0
        self._ratio: float | None = None
        self._last: float | None = None  # the ratio of the latest recorded call scaled so far
        self._held: float | None = None  # the ratio before the recording's first compaction

    def compacted(self) -> None:
        """The recording compacted here: its summary, added next, replaces everything before it."""
        self._messages = 0
        if self._held is None:
            self._held = self._last if self._last is not None else self._ratio

    def add(self, message: Message) -> None:
        """`message` (as recorded) joins the recording's view."""
        self._messages += self._size(message)

    def recorded_view(self, counted: int, real: int) -> None:
        """A call whose view is the recorded one: the counter said `counted`, the provider `real`."""
        rest, real_rest = counted - self._measured, real - self._measured
        if rest > 0 and real_rest > 0:
            self._ratio = real_rest / rest

    def scaled(self, estimate: int, recorded: Usage | None) -> int:
        """`estimate` of the policy's view at a recorded call, as the provider would have counted it.
        Unchanged when nothing says how far the counter is off here. A recorded call that sent another
        request than its transcript shows (a harness's side call with a shorter prompt) is still the best
        evidence of what that call cost: a view that matches the transcript's is counted at its figure."""
        ratio = self._ratio
        unscaled = self._measured  # the part of the estimate already in the provider's units
        if self._held is not None:
            ratio = self._held
        elif self._follow and recorded is not None and recorded.context_tokens > 0:
            real = recorded.context_tokens
            if real <= unscaled:
                # Less than the stand-in: a side call that did not send the fixed prompt the stand-in
                # is measured from. Its figure is still the best evidence of what the call cost.
                unscaled = 0
            follows = self._fixed - unscaled + self._messages
            ratio = (real - unscaled) / follows if follows > 0 else None
        low, high = PLAUSIBLE_RATIO
        if ratio is None or not low <= ratio <= high:
            return estimate
        self._last = ratio
        fixed = min(unscaled, estimate)
        return fixed + round((estimate - fixed) * ratio)

    def fit_limit(self, line: int) -> int:
        """The line a baseline fits its view to by the counter, so that the view is under `line` as the
        provider counted the latest recorded call (see the module text)."""
        ratio = self._last if self._last is not None else self._ratio
        if ratio is None or ratio <= 1.0:
            return line
        fixed = min(self._measured, line)
        return fixed + int((line - fixed) / ratio)
