"""What an HTTP answer means for memsync, decided once for every service it calls (Convex, the
embedding and rerank providers, a Qdrant server): each caller turns the verdict into its own error
type, so that the same status is never transient in one client and permanent in another.

- no answer at all, 408, 429 and 5xx: transient, retried with backoff, honouring Retry-After;
- 401 and 403: the credentials are refused, which only a person can fix (exit 78);
- any other 4xx: this request will never succeed as it is (permanent).
"""

from __future__ import annotations

import email.utils
import math
from enum import StrEnum


class Verdict(StrEnum):
    TRANSIENT = "transient"
    AUTH = "auth"
    PERMANENT = "permanent"


def classify(status: int | None) -> Verdict:
    """``status`` None means no answer (a connection refused, a timeout)."""
    if status is None or status in (408, 429) or status >= 500:
        return Verdict.TRANSIENT
    if status in (401, 403):
        return Verdict.AUTH
    return Verdict.PERMANENT


def retry_after(value: str | None, now: float) -> float | None:
    """Seconds a Retry-After header asks for: delta-seconds or an HTTP date, never negative, never
    infinite or NaN (a server's ``inf`` would otherwise stop retries for good); None if absent or
    unreadable."""
    if value is None:
        return None
    text = str(value).strip()
    try:
        seconds = float(text)
    except ValueError:
        pass
    else:
        return max(0.0, seconds) if math.isfinite(seconds) else None
    try:
        when = email.utils.parsedate_to_datetime(text)
    except (TypeError, ValueError, IndexError):
        return None
    return max(0.0, when.timestamp() - now)
