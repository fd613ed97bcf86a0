"""What a secret-looking file is, by its path alone: one definition for every place that reads files on
the model's behalf (the reading tools' policy, instruction imports).

A path looks secret when a folder on it is a key store (`.ssh`, `.gnupg`), when it ends in a well-known
credentials location (`.aws/credentials`, `.docker/config.json`, `.kube/config`), or when its name is one
that holds keys or tokens: `.env` and `.env.*` (templates such as `.env.example` excepted), `*.pem`,
`*.key`, `*.p12`, `*.pfx`, `id_rsa*` and the other ssh key names, `credentials`, `credentials.json`,
`.netrc`, `.pgpass`, `.git-credentials`, `.pypirc`, `.npmrc`. The list errs towards asking: a false alarm
costs the user one approval, a miss sends a key to the provider and into the transcript.

Only names are judged here; nothing is opened. Callers that have the text too (instruction imports) also
check it for key material with `secret_text_kind`.
"""

from __future__ import annotations

import fnmatch
import re
from pathlib import PurePath

__all__ = ["secret_path_kind", "secret_text_kind"]

_SECRET_DIRS = frozenset({".ssh", ".gnupg"})
_SECRET_TAILS = ((".aws", "credentials"), (".docker", "config.json"), (".kube", "config"),
                 (".config", "gh", "hosts.yml"), (".azure", "accessTokens.json"))
_SECRET_NAMES = frozenset({"credentials", "credentials.json", ".netrc", "_netrc", ".pgpass",
                           ".git-credentials", ".pypirc", ".npmrc"})
_SECRET_NAME_PATTERNS = (".env", ".env.*", "*.pem", "*.key", "*.p12", "*.pfx", "id_rsa*", "id_dsa*",
                         "id_ecdsa*", "id_ed25519*")
# Committed templates of `.env` hold placeholders by convention; asking for them would only train the
# user to approve without looking.
_ENV_TEMPLATES = frozenset({".env.example", ".env.sample", ".env.template", ".env.dist", ".env.defaults"})


def secret_path_kind(path: PurePath | str) -> str | None:
    """Why `path` looks like it holds secrets (e.g. "a key folder (.ssh)"), or None. Every folder on
    the path counts, so pass an absolute path to judge a file wherever it is, or a relative one to judge
    only the part below some folder already approved."""
    parts = PurePath(path).parts
    if not parts:
        return None
    name = parts[-1]
    for folder in parts[:-1]:
        if folder in _SECRET_DIRS:
            return f"a key folder ({folder})"
    for tail in _SECRET_TAILS:
        if tuple(parts[-len(tail):]) == tail:
            return f"a credentials file ({'/'.join(tail)})"
    if name in _ENV_TEMPLATES:
        return None
    if name in _SECRET_NAMES:
        return f"a credentials file name ({name})"
    for pattern in _SECRET_NAME_PATTERNS:
        if fnmatch.fnmatchcase(name, pattern):
            return f"a secret-looking file name ({name})"
    return None


# Narrow on purpose: prose may mention "password" or "api key"; these shapes are key material.
_SECRET_TEXT = (
    ("a private key", re.compile(r"-----BEGIN (?:[A-Z0-9]+ )*PRIVATE KEY(?: BLOCK)?-----")),
    ("AWS credentials", re.compile(r"(?i)\baws_secret_access_key\s*[=:]")),
    ("an AWS access key id", re.compile(r"\b(?:AKIA|ASIA)[0-9A-Z]{16}\b")),
    ("a service-account key", re.compile(r'"private_key"\s*:\s*"-----BEGIN')),
    ("netrc credentials", re.compile(r"(?m)^\s*machine\s+\S+\s+login\s+\S+\s+password\s+\S+")),
)


def secret_text_kind(text: str) -> str | None:
    """What key material `text` holds (e.g. "a private key"), or None."""
    for kind, pattern in _SECRET_TEXT:
        if pattern.search(text):
            return kind
    return None
