"""Keep credentials out of every string we log or write.

Some gateways echo the request's `Authorization` header in an error body (401 pages, proxies); such an
error would otherwise reach the console, `judgements/<task>.jsonl` and the results. `redact` replaces
(1) the values of the credentials this process holds (environment variables named like keys, tokens,
secrets or passwords, plus any value passed in, such as the judge's configured key) and (2) anything
shaped like a credential: `Bearer <token>`, `Authorization:`/`api-key:` header values, `sk-...` keys.
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterable

REDACTED = "[REDACTED]"
_SECRET_NAME = re.compile(r"(KEY|TOKEN|SECRET|PASSWORD|CREDENTIAL)", re.IGNORECASE)
_MIN_SECRET_LENGTH = 8  # shorter values ("EMPTY", "1") are placeholders, and replacing them would garble text
_SHAPES = [
    # a credential header's whole value (`Bearer …`, `Basic …`, a bare key), up to the end of its field
    re.compile(r"(?i)((?:proxy-)?authorization[\"']?\s*[:=]\s*[\"']?)[^\"'\n\r,;}]{8,}"),
    re.compile(r"(?i)((?:x-)?api-key|ocp-apim-subscription-key)([\"']?\s*[:=]\s*[\"']?)[^\s\"',;}]{8,}"),
    re.compile(r"(?i)(bearer\s+)[A-Za-z0-9._~+/=-]{8,}"),
    re.compile(r"()\bsk-[A-Za-z0-9_-]{12,}"),
]


def secret_values(extra: Iterable[str | None] = ()) -> list[str]:
    """The credential values to hide: from the environment, and `extra`; longest first."""
    values = {v for k, v in os.environ.items() if _SECRET_NAME.search(k) and len(v) >= _MIN_SECRET_LENGTH}
    values |= {v for v in extra if v and len(v) >= _MIN_SECRET_LENGTH}
    return sorted(values, key=len, reverse=True)


def redact(text: str | None, extra: Iterable[str | None] = ()) -> str | None:
    """`text` with every credential replaced by "[REDACTED]" (None stays None)."""
    if not text:
        return text
    for value in secret_values(extra):
        text = text.replace(value, REDACTED)
    for shape in _SHAPES:
        text = shape.sub(lambda m: "".join(m.groups()) + REDACTED, text)
    return text
