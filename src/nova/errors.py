"""Nova's one exception tree. Lower-level errors (HTTP, SDK, SQLite, OS) are translated at the boundary.

    NovaError
    ├── ConfigError                 a config file or value is wrong (names file, key, value, expected)
    ├── MissingDependency           an optional extra is not installed (also an ImportError)
    ├── TokenizerUnavailable        an exact tokenizer cannot be built offline
    ├── CommandError                a slash command a person typed is malformed or names nothing
    ├── SummaryError                the summarizer gave no usable summary; the compaction changes nothing
    ├── MemoryStoreError            a memory cannot be read or written as asked
    │   ├── UnsafeMemoryName        a name that could escape the memory directory (also a ValueError)
    │   └── MemoryNotFound          no memory by that name (also a KeyError)
    ├── SkillError                  a skill cannot be read, found or used as asked (names the SKILL.md)
    ├── FileRefused                 a file handed to Nova is not read: not a regular file (a FIFO, a
    │                               device), over a size limit, or JSON nested deeper than the limit
    ├── StorageError                the session store or a session directory cannot be used
    │   ├── SchemaVersionError      a record or file was written by a newer Nova; nothing was changed
    │   ├── SessionImportError      a file to import is missing, unreadable or in no known format
    │   │   └── NotASessionFile     no reader takes the file: empty, binary, or JSON of no session format
    │   └── TaskStateConflict       a task-state write was based on a version someone else replaced
    ├── SessionNotFound             no recorded session has that id
    ├── SessionBusy                 the session is running a turn (or closing) and cannot take this now
    │   └── SessionLocked           another process holds the session open for writing (names its pid)
    ├── PromptTooLarge              the system prompt and tool schemas alone are over the model's window
    ├── ToolError                   a tool failed; the loop turns it into an error result for the model
    │   └── ArgumentError           the model's arguments do not fit the tool's schema
    └── ProviderError               anything a model provider answered or failed to answer
        ├── ContextOverflow         the request is larger than the model's context window (CMP-9)
        ├── RequestTooLarge         HTTP 413: the body is over a byte limit (not a token overflow)
        ├── RateLimited             429 / rate_limit_error, including "request too large … per min"
        ├── QuotaExceeded           insufficient_quota / billing: never retried
        ├── Overloaded              529 / overloaded_error / 503
        ├── AuthError               401 / 403
        ├── InvalidRequest          any other 4xx the provider rejected
        ├── ProviderUnavailable     network failure, timeout, 5xx
        └── MissingCredentials      no key configured: says which variable to set

Outside the tree on purpose (a test holds every other exception class in the package to it):
`nova.agent.loop._Cancelled` and `nova.server.guards._TooLarge` are private control flow caught in the
module that raises them, and `nova.sessions.postgres.TurnReleased` passes between the turn lock and the
store writing over its connection, never beyond them; `nova.providers.guard.RealModelRequestError` and
`nova.providers.scripted.ScriptExhausted` are AssertionErrors that fail a test, not errors a user sees.

The modules that raise these errors re-export them under their old names (`nova.memory.store.
MemoryStoreError`, `nova.sessions.schema.SchemaVersionError`, ...), so either import works.
"""

from __future__ import annotations

from typing import Any

__all__ = [
    "ArgumentError",
    "AuthError",
    "CommandError",
    "ConfigError",
    "ContextOverflow",
    "FileRefused",
    "InvalidRequest",
    "MemoryNotFound",
    "MemoryStoreError",
    "MissingCredentials",
    "MissingDependency",
    "NotASessionFile",
    "NovaError",
    "Overloaded",
    "PromptTooLarge",
    "ProviderError",
    "ProviderUnavailable",
    "QuotaExceeded",
    "RateLimited",
    "RequestTooLarge",
    "SchemaVersionError",
    "SessionBusy",
    "SessionImportError",
    "SessionLocked",
    "SessionNotFound",
    "SkillError",
    "StorageError",
    "SummaryError",
    "TaskStateConflict",
    "TokenizerUnavailable",
    "ToolError",
    "UnsafeMemoryName",
]


class NovaError(Exception):
    """Root of every error Nova raises on purpose."""


class ConfigError(NovaError):
    """A configuration problem, with the file, key, bad value and expected type in the message."""


class MissingDependency(NovaError, ImportError):
    """An optional package is not installed; the message is the exact command that installs it."""


class TokenizerUnavailable(NovaError):
    """An exact tokenizer cannot be built offline (package missing, bundled file damaged)."""


class CommandError(NovaError):
    """A slash command (`/goal`, `/confirm N`, ...) cannot be applied; the message tells the person what
    it takes. Nothing was changed."""


class SummaryError(NovaError):
    """The summarizer could not produce a usable summary (the compaction fails, nothing changes)."""


class MemoryStoreError(NovaError):
    """A memory cannot be written or read as asked; the message says why."""


class UnsafeMemoryName(MemoryStoreError, ValueError):
    pass


class MemoryNotFound(MemoryStoreError, KeyError):
    def __str__(self) -> str:  # KeyError would quote the message
        return str(self.args[0]) if self.args else "memory not found"


class SkillError(NovaError):
    """A skill cannot be read, found or used as asked; the message names the file and what is wrong."""


class FileRefused(NovaError):
    """A file someone handed Nova (a config file, a transcript, a session to import, a case file) is
    refused before it is read, or read no further than a limit: it is a FIFO, a device, a socket or a
    directory, it is larger than Nova reads, or its JSON nests deeper than Nova parses. The message
    names the file and what it is; callers translate it into their own error where that matters."""


class StorageError(NovaError):
    pass


class SchemaVersionError(StorageError):
    """A record was written by a newer Nova than this one."""


class SessionImportError(StorageError):
    """The file is missing, unreadable or in no format Nova knows."""


class NotASessionFile(SessionImportError):
    """No reader takes the file: it is empty, binary, or JSON that is no session format Nova knows (a
    `package.json`). Distinct from a file a reader took and could not read (a damaged session): a
    folder walk passes over this one and says the other."""


class TaskStateConflict(StorageError):
    """A task-state write expected a version that is no longer the stored one: someone else wrote first.
    Nothing was written; read again, re-apply the change, write again (`TaskStateStore.update` does)."""

    def __init__(self, session_id: str, expected_version: int) -> None:
        super().__init__(
            f"task state of session {session_id} changed after version {expected_version} was read; not written"
        )
        self.session_id = session_id
        self.expected_version = expected_version


class SessionNotFound(NovaError):
    """No recorded session has that id (or the id is not a valid one)."""


class SessionBusy(NovaError):
    """The session is running a turn or a compaction, or is being closed; try again after it."""


class SessionLocked(SessionBusy):
    """Another process has the session open for writing; the message names its pid and since when."""


class PromptTooLarge(NovaError):
    """The fixed part of the prompt (system prompt and tool schemas) alone does not fit the model's
    window: no compaction can help, so nothing is sent."""

    def __init__(self, *, fixed_tokens: int, window: int) -> None:
        super().__init__(
            f"The system prompt and tool schemas alone take about {fixed_tokens:,} tokens, more than the "
            f"model's context window of {window:,} tokens; nothing was sent. Reduce the instruction files or "
            "the number of tools, or use a model with a larger window (`context_window` in the config).")
        self.fixed_tokens = fixed_tokens
        self.window = window


class ToolError(NovaError):
    pass


class ArgumentError(ToolError):
    """The arguments do not fit the tool's schema; the message is written for the model."""


class ProviderError(NovaError):
    """An error from a model provider. `retryable` says whether the same request may succeed later."""

    retryable = False

    def __init__(
        self,
        message: str,
        *,
        provider: str = "",
        status: int | None = None,
        code: str | None = None,
        body: Any = None,
    ) -> None:
        super().__init__(message)
        self.message = message
        self.provider = provider
        self.status = status
        self.code = code
        self.body = body


class ContextOverflow(ProviderError):
    """The provider says the prompt does not fit. `tokens` / `limit` are filled when it says by how much."""

    def __init__(self, message: str, *, tokens: int | None = None, limit: int | None = None, **kw: Any):
        super().__init__(message, **kw)
        self.tokens = tokens
        self.limit = limit


class RequestTooLarge(ProviderError):
    pass


class RateLimited(ProviderError):
    retryable = True

    def __init__(self, message: str, *, retry_after: float | None = None, **kw: Any):
        super().__init__(message, **kw)
        self.retry_after = retry_after


class QuotaExceeded(ProviderError):
    pass


class Overloaded(ProviderError):
    retryable = True


class AuthError(ProviderError):
    pass


class InvalidRequest(ProviderError):
    pass


class ProviderUnavailable(ProviderError):
    retryable = True


class MissingCredentials(ProviderError):
    pass
