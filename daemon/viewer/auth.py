"""Who may use the viewer, pure: a one-time login token, the session it opens, the CSRF value every
form carries, and the headers every answer carries.

At start the viewer makes a login token and prints ``/login?token=...`` (as Jupyter does). The
first request bearing it opens a session: the token is spent (a URL left in a shell's history or a
browser's opens nothing more) and the answer sets an HttpOnly, SameSite=Strict cookie holding a
random session id. Every POST carries ``csrf``, an HMAC of the session id under the server's key,
checked in constant time; a request without the session's cookie gets 401, a POST without the
right ``csrf`` 403. Sessions live in the process: a restart prints a new URL.
"""

from __future__ import annotations

import hashlib
import hmac
import secrets
from dataclasses import dataclass, field
from typing import Final

COOKIE: Final = "memsync_session"
# A session lasts a working day past its last use; then the person logs in again with a new URL.
SESSION_TTL_S: Final = 12 * 3600
# No script but the viewer's own file, no inline script or style, nothing from elsewhere, no frames.
CSP: Final = (
    "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self'; connect-src 'self'; "
    "form-action 'self'; frame-ancestors 'none'; base-uri 'none'"
)
HEADERS: Final = (
    ("content-security-policy", CSP),
    ("x-content-type-options", "nosniff"),
    ("referrer-policy", "no-referrer"),
    ("x-frame-options", "DENY"),
    ("cache-control", "no-store"),
)


def _digest(value: str) -> bytes:
    return hashlib.sha256(value.encode()).digest()


@dataclass
class Sessions:
    """The login token (until spent) and the open sessions, by id, with when each was last used.
    ``key`` signs CSRF values. Methods take the time as an argument."""

    login_token: str | None = field(default_factory=lambda: secrets.token_urlsafe(32))
    key: bytes = field(default_factory=lambda: secrets.token_bytes(32))
    ttl_s: float = SESSION_TTL_S
    _open: dict[str, float] = field(default_factory=dict)

    def login(self, token: str | None, now: float) -> str | None:
        """A new session's id when ``token`` is the login token (which is then spent); else None."""
        if not token or self.login_token is None or not hmac.compare_digest(_digest(token), _digest(self.login_token)):
            return None
        self.login_token = None
        session = secrets.token_urlsafe(32)
        self._open[session] = now
        return session

    def valid(self, session: str | None, now: float) -> bool:
        """Whether ``session`` is open (and used within the TTL); a use renews it."""
        if not session:
            return False
        found = next((s for s in self._open if hmac.compare_digest(_digest(s), _digest(session))), None)
        if found is None:
            return False
        if now - self._open[found] > self.ttl_s:
            del self._open[found]
            return False
        self._open[found] = now
        return True

    def csrf(self, session: str) -> str:
        """The value every form of this session carries."""
        return hmac.new(self.key, session.encode(), hashlib.sha256).hexdigest()

    def csrf_ok(self, session: str, given: str | None) -> bool:
        return bool(given) and hmac.compare_digest(self.csrf(session).encode(), (given or "").encode())


def session_cookie(session: str, ttl_s: float = SESSION_TTL_S) -> str:
    """The Set-Cookie value: HttpOnly (no script reads it), SameSite=Strict (no other site's page
    sends it), for the whole viewer. Not Secure: the viewer is plain HTTP on 127.0.0.1."""
    return f"{COOKIE}={session}; HttpOnly; SameSite=Strict; Path=/; Max-Age={int(ttl_s)}"


def login_url(port: int, token: str) -> str:
    return f"http://127.0.0.1:{port}/login?token={token}"
