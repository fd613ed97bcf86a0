"""A resumed session continues on the provider, model and endpoint it was recorded with, unless the
command line names others.

The config file and the environment (`NOVA_PROVIDER` …) say what a *new* session uses; a session made
with `nova --provider demo` must not turn into an Anthropic session (and fail for want of a key) when
it is resumed on a machine whose default is Anthropic. Only a flag given for this command overrides the
record. A flag naming another provider takes that provider's own model and endpoint (from the usual
layering), since the recorded model belongs to the recorded provider.
"""

from __future__ import annotations

from dataclasses import replace

from nova.errors import StorageError
from nova.sessions.meta import SessionMeta, read_meta_or_damage, session_dir
from nova.settings import PROVIDERS, Settings

__all__ = ["resume_target", "settings_for_resume"]

_FLAG = "flag"


def settings_for_resume(settings: Settings, meta: SessionMeta) -> Settings:
    """`settings` with the session's recorded provider, model and base URL wherever no flag set them.
    Sessions that recorded no provider Nova can call (older records, imports) keep `settings`."""
    if meta.provider not in PROVIDERS:
        return settings
    flagged = {key for key in ("provider", "model", "base_url") if settings.sources.get(key) == _FLAG}
    if "provider" in flagged and settings.provider != meta.provider:
        return settings
    recorded = f"session {meta.id}"
    changes: dict[str, str | None] = {"provider": meta.provider}
    if "model" not in flagged and meta.model:
        changes["model"] = meta.model
    if "base_url" not in flagged and meta.base_url is not None:
        changes["base_url"] = meta.base_url or None
    sources = dict(settings.sources)
    sources.update({key: sources[key] if key in flagged else recorded for key in changes})
    return replace(settings, **changes, sources=sources)  # type: ignore[arg-type]


def resume_target(settings: Settings, session_id: str) -> tuple[str, Settings]:
    """(the session id `session_id` names, "last" included; the settings to resume it with). A missing
    or damaged meta.json is read from the transcript instead (opening the session then rebuilds it and
    says so). An unknown session is refused here, before a provider is made from `settings`: otherwise
    a mistyped id on a machine without the default provider's key says "no API key", not which id."""
    from nova.sessions.export import latest_session_id
    from nova.sessions.session import _meta_from_transcript

    if session_id == "last":
        found = latest_session_id(settings.home)
        if found is None:
            raise StorageError(f"there is no recorded session in {settings.sessions_dir} to resume")
        session_id = found
    directory = session_dir(settings.home, session_id)
    if not directory.is_dir():
        raise StorageError(f"no session {session_id!r} in {directory.parent}: `nova sessions list` shows the ids")
    meta, _damage = read_meta_or_damage(directory)
    if meta is None:
        try:
            meta = _meta_from_transcript(directory)
        except StorageError:
            return session_id, settings
    return session_id, settings_for_resume(settings, meta)
