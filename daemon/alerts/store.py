"""Where alerts wait: each alert machine's state, and the outbox of Telegram messages, in one SQLite
file (``Settings.alerts_path``). On the embedded hub the file sits beside the hub and every site's
daemon shares it; on Convex each site has its own (the deployment keeps the fleet's).

The outbox is why a restart or a Telegram outage delays a message but never loses or repeats it:
a message is written here first, in the transaction that decided it (its key is unique, so a
decision taken twice queues it once), then sent by whoever claims it, at its moment (a second
after the message handed out before it: Telegram's pace for a chat, kept whichever of the sites'
daemons sends). A claim lasts ``CLAIM_MS`` past that moment; a sender killed before sending leaves
the claim to lapse and another sends it. The one
window left is a sender killed after Telegram accepted a message and before it was marked sent
(milliseconds): that message goes twice, never zero times.

Two hub-only tables share the file and live with their users: the approvals whose message may need
an edit (``daemon.hubserver.tracked``) and the Telegram poller's lease and position
(``daemon.telegram.poller``).
"""

from __future__ import annotations

import json
import sqlite3
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager, closing, contextmanager
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any, Final, TypeVar

from daemon.alerts.machine import AlertState
from daemon.alerts.messages import Button, Keyboard, Message, alert_id
from daemon.alerts.outbox_keys import chat_key
from sync.errors import PathProblem
from sync.sqlite_db import apply_schema, forget_text, open_wal, write_tx

T = TypeVar("T")
CLAIM_MS: Final = 60_000  # a sender is on a claimed message until this long after its moment
# Telegram takes about one message a second per chat: each message handed out may go this long after
# the one handed out before it, whichever sender has it (contracts/outbox_rules.json, as Convex).
PER_CHAT_PAUSE_MS: Final = 1_000
ROUND_SIZE: Final = 10  # the messages one claim hands out
SCHEMA = (
    """CREATE TABLE IF NOT EXISTS machines (
  key TEXT PRIMARY KEY,             -- signal:subject
  id TEXT NOT NULL UNIQUE,          -- alert_id(key): what Snooze and Mute buttons carry
  state TEXT NOT NULL,              -- the AlertState as JSON
  updated_at INTEGER NOT NULL
)""",
    """CREATE TABLE IF NOT EXISTS outbox (
  id INTEGER PRIMARY KEY,
  key TEXT NOT NULL UNIQUE,         -- one message per decision, however often it is decided
  kind TEXT NOT NULL,               -- send | edit
  text TEXT NOT NULL,
  buttons TEXT NOT NULL,            -- the inline keyboard as JSON
  ref_key TEXT,                     -- edit: the key of the sent message it edits
  severity TEXT NOT NULL,
  not_before INTEGER NOT NULL,      -- ms: quiet hours, a retry's wait
  created_at INTEGER NOT NULL,
  claimed_until INTEGER,            -- ms: a sender is on it until then
  sent_at INTEGER,
  message_id INTEGER,               -- Telegram's, once sent
  attempts INTEGER NOT NULL DEFAULT 0,
  last_error TEXT,
  chat TEXT                         -- a collaborator's chat; NULL: the default chat (telegram.chat_id)
)""",
    "CREATE INDEX IF NOT EXISTS outbox_due ON outbox (sent_at, not_before)",
    "CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT NOT NULL)",
)
SCHEMA_VERSION = "1"


@dataclass(frozen=True, slots=True)
class Queued:
    """A message to send (or, with ``edits``, an edit of the message sent under that key)."""

    key: str  # unique (per chat): the same decision queued twice is sent once
    message: Message
    severity: str = "warning"
    not_before: int | None = None  # ms; None: now
    # An edit goes to every chat its message went to: its key and ``edits`` are the messages' own
    # (``outbox_keys``), without a chat.
    edits: str | None = None
    chat: str | None = None  # a collaborator's chat; None: the default chat


@dataclass(frozen=True, slots=True)
class Outgoing:
    id: int
    key: str
    kind: str  # send | edit
    text: str
    buttons: Keyboard
    ref_message_id: int | None  # edit: the message it edits (sent before it is handed out)
    attempts: int
    send_at: int = 0  # ms: its moment, PER_CHAT_PAUSE_MS after the message handed out before it to its chat
    chat: str | None = None  # a collaborator's chat; None: the default chat


def _keyboard(raw: str) -> Keyboard:
    return tuple(tuple(Button(b["text"], b["data"]) for b in row) for row in json.loads(raw))


def _state(raw: str) -> AlertState:
    return AlertState(**json.loads(raw))


def outbox_summary(path: Path, site: str | None = None) -> dict[str, Any] | None:
    """What ``status`` shows of the outbox, read-only: messages waiting, the newest waiting one's
    last error, when the last one went, and why Telegram refuses ``site``'s daemon's bot token if
    it does; None if there is no outbox yet."""
    if not path.exists():
        return None
    try:
        with closing(open_wal(path, readonly=True)) as conn:
            waiting, error = conn.execute(
                "SELECT count(*), (SELECT last_error FROM outbox WHERE sent_at IS NULL AND last_error IS NOT NULL"
                " ORDER BY id DESC LIMIT 1) FROM outbox WHERE sent_at IS NULL"
            ).fetchone()
            (last_sent,) = conn.execute("SELECT max(sent_at) FROM outbox WHERE message_id IS NOT NULL").fetchone()
            refused = conn.execute("SELECT value FROM meta WHERE key = ?", (_token_key(site),)).fetchone()
    except sqlite3.Error as exc:
        return {"waiting": None, "lastError": f"cannot read {path}: {exc}", "lastSentAt": None, "tokenRefused": None}
    return {
        "waiting": int(waiting),
        "lastError": error,
        "lastSentAt": last_sent,
        "tokenRefused": None if refused is None else refused[0],
    }


def alerts_standing(path: Path) -> list[tuple[str, AlertState]]:
    """The alerts that stand now, read-only: every machine not ok (``signal:subject`` and its
    state), longest-standing first; none when there is no alerts file yet."""
    if not path.exists():
        return []
    try:
        with closing(open_wal(path, readonly=True)) as conn:
            rows = conn.execute("SELECT key, state FROM machines").fetchall()
    except sqlite3.Error:
        return []  # a file being created, or one status reports as unreadable
    found = [(str(key), _state(state)) for key, state in rows]
    return sorted(((k, s) for k, s in found if s.state != "ok"), key=lambda item: item[1].since)


def _pacing_key(chat: str | None) -> str:
    """Where a chat's next moment is kept (the default chat's under the key it always had)."""
    return "next_send_at" if chat is None else f"next_send_at:{chat}"


def _token_key(site: str | None) -> str:
    # By site: the file is shared by every site's daemon on the hub, each with its own env file.
    return f"token_refused:{site}"


class AlertStore:
    def __init__(self, path: Path, *, clock: Callable[[], float] = time.time) -> None:
        self.path = path
        self.clock = clock
        self._lock = threading.Lock()
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
            self._conn = open_wal(path, busy_timeout_ms=10_000)
            apply_schema(self._conn, SCHEMA, SCHEMA_VERSION)
            self._add_chat_column()
        except (sqlite3.Error, OSError) as exc:
            raise PathProblem(
                f"cannot use the alerts file {path}: {exc}; check that its folder is writable by this user"
            ) from None

    def _add_chat_column(self) -> None:
        """An outbox written before collaborators has no ``chat``: each of its rows is the default
        chat's, which NULL says. Checked again inside the write: another daemon may add it first."""
        if "chat" in {row[1] for row in self._conn.execute("PRAGMA table_info(outbox)")}:
            return
        with write_tx(self._conn) as tx:
            if "chat" not in {row[1] for row in tx.execute("PRAGMA table_info(outbox)")}:
                tx.execute("ALTER TABLE outbox ADD COLUMN chat TEXT")

    def now_ms(self) -> int:
        return int(self.clock() * 1000)

    def forget_text(self, text: str) -> int:
        """``forget --matching``: ``text`` out of the messages kept here (a digest quotes its day's
        top tasks); how many held it. Telegram's own copy is beyond memsync's reach."""
        with self._lock:
            return forget_text(self._conn, "outbox", "text", text)

    def close(self) -> None:
        self._conn.close()

    @contextmanager
    def _tx(self) -> Iterator[sqlite3.Connection]:
        # One connection, several threads (the scheduler's alert job, the Telegram worker, the run
        # loop's local watch): a transaction at a time.
        with self._lock, write_tx(self._conn) as tx:
            yield tx

    def _read(self, sql: str, params: tuple[Any, ...] = ()) -> list[Any]:
        with self._lock, closing(self._conn.execute(sql, params)) as cursor:
            return cursor.fetchall()

    # The tables other rooms keep in this file (``daemon.hubserver.tracked``: the approvals whose
    # message may need an edit; ``daemon.telegram.poller``: the poller's lease and position) go
    # through these, one transaction at a time with the store's own.
    def write(self) -> AbstractContextManager[sqlite3.Connection]:
        return self._tx()

    def read(self, sql: str, params: tuple[Any, ...] = ()) -> list[Any]:
        return self._read(sql, params)

    # -- alert machines -------------------------------------------------------------------------
    def advance(
        self, keys: list[str], step: Callable[[str, AlertState | None], tuple[AlertState, list[Queued], T]]
    ) -> list[T]:
        """Step each key's machine in one transaction: read its state, decide (``step``, pure),
        write the new state and queue the messages it decided, together: a crash leaves either
        both or neither."""
        results: list[T] = []
        with self._tx() as tx:
            for key in keys:
                row = tx.execute("SELECT state FROM machines WHERE key = ?", (key,)).fetchone()
                old = None if row is None else _state(row[0])
                new, queued, said = step(key, old)
                for item in queued:
                    self._insert(tx, item)
                results.append(said)
                if new == old:
                    continue  # nothing changed: an idle daemon writes nothing
                tx.execute(
                    "INSERT INTO machines (key, id, state, updated_at) VALUES (?, ?, ?, ?)"
                    " ON CONFLICT (key) DO UPDATE SET state = excluded.state, updated_at = excluded.updated_at",
                    (key, alert_id(key), json.dumps(asdict(new)), self.now_ms()),
                )
        return results

    def machine(self, key: str) -> AlertState | None:
        rows = self._read("SELECT state FROM machines WHERE key = ?", (key,))
        return _state(rows[0][0]) if rows else None

    def drop_machines(self, signal: str, keep: set[str]) -> int:
        """Forget ``signal``'s machines whose subject is not in ``keep`` (an approval no longer
        pending has nothing more to expire); how many."""
        with self._tx() as tx:
            rows = tx.execute("SELECT key FROM machines WHERE key LIKE ?", (f"{signal}:%",)).fetchall()
            gone = [(key,) for (key,) in rows if key.split(":", 1)[1] not in keep]
            tx.executemany("DELETE FROM machines WHERE key = ?", gone)
            return len(gone)

    def hold(self, ident: str, change: Callable[[AlertState], AlertState]) -> str | None:
        """Snooze or mute the alert whose id is ``ident``; its key, or None if unknown."""
        with self._tx() as tx:
            row = tx.execute("SELECT key, state FROM machines WHERE id = ?", (ident,)).fetchone()
            if row is None:
                return None
            tx.execute(
                "UPDATE machines SET state = ? WHERE id = ?", (json.dumps(asdict(change(_state(row[1])))), ident)
            )
            return str(row[0])

    # -- the outbox -----------------------------------------------------------------------------
    def enqueue(self, item: Queued) -> bool:
        """Queue a message; False if its key was queued before (or it edits a message never queued)."""
        with self._tx() as tx:
            return self._insert(tx, item)

    def _insert(self, tx: sqlite3.Connection, item: Queued) -> bool:
        """Queue ``item`` under its key in its chat, once; an edit, in every chat its message went
        to (True if any). An edit of a message still waiting (unsent, and no sender on it) rewrites
        that message instead, so that it goes out once, as it now reads; an edit of a message
        already out drops the earlier edits still waiting, which a retry could send after it and so
        put back what it replaced (contracts/outbox_rules.json, as Convex's lib/outbox.ts)."""
        if item.edits is None:
            return self._insert_one(tx, item, chat_key(item.key, item.chat), None, item.chat)
        prefix = f"{item.edits}@"
        chats = [
            row[0]
            for row in tx.execute(
                "SELECT chat FROM outbox WHERE kind = 'send' AND (key = ? OR substr(key, 1, ?) = ?) ORDER BY id",
                (item.edits, len(prefix), prefix),
            ).fetchall()
        ]
        queued = False
        for chat in chats:
            queued |= self._insert_one(tx, item, chat_key(item.key, chat), chat_key(item.edits, chat), chat)
        return queued

    def _insert_one(self, tx: sqlite3.Connection, item: Queued, key: str, edits: str | None, chat: str | None) -> bool:
        """One row: ``item`` under ``key`` (its chat's), editing the message of key ``edits``."""
        if tx.execute("SELECT 1 FROM outbox WHERE key = ?", (key,)).fetchone() is not None:
            return False
        buttons = json.dumps([[{"text": b.text, "data": b.data} for b in row] for row in item.message.buttons])
        now = self.now_ms()
        sent_at = None
        if edits is not None:
            ref = tx.execute("SELECT id, sent_at, claimed_until FROM outbox WHERE key = ?", (edits,)).fetchone()
            if ref is None:
                return False  # nothing to edit, ever
            ref_id, ref_sent, ref_claimed = ref
            if ref_sent is None and (ref_claimed is None or ref_claimed <= now):
                tx.execute("UPDATE outbox SET text = ?, buttons = ? WHERE id = ?", (item.message.text, buttons, ref_id))
                sent_at = now  # recorded, with nothing left to send
            else:
                tx.execute(
                    "UPDATE outbox SET sent_at = ?, last_error = 'superseded by a later edit' WHERE kind = 'edit'"
                    " AND ref_key = ? AND sent_at IS NULL AND (claimed_until IS NULL OR claimed_until <= ?)",
                    (now, edits, now),
                )
        tx.execute(
            "INSERT INTO outbox (key, kind, text, buttons, ref_key, severity, not_before, created_at, sent_at, chat)"
            " VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
            (
                key,
                "send" if edits is None else "edit",
                item.message.text,
                buttons,
                edits,
                item.severity,
                item.not_before or now,
                now,
                sent_at,
                chat,
            ),
        )
        return True

    def claim_due(self, holder: str, limit: int = ROUND_SIZE) -> list[Outgoing]:
        """Hand out up to ``limit`` due messages, oldest first, each with its moment to go
        (``send_at``: PER_CHAT_PAUSE_MS after the one handed out before it to the same chat, by any
        sender, or now), in the order of their moments, and claimed until CLAIM_MS after it. An
        edit is due only once the message it edits was sent; one whose message never went out is
        dropped."""
        now = self.now_ms()
        with self._tx() as tx:
            paused = tx.execute("SELECT value FROM meta WHERE key = 'paused_until'").fetchone()
            if paused is not None and int(paused[0]) > now:
                return []
            rows = tx.execute(
                "SELECT o.id, o.key, o.kind, o.text, o.buttons, o.attempts, r.message_id, r.sent_at, o.chat"
                " FROM outbox AS o LEFT JOIN outbox AS r ON r.key = o.ref_key"
                " WHERE o.sent_at IS NULL AND o.not_before <= ? AND (o.claimed_until IS NULL OR o.claimed_until < ?)"
                " ORDER BY o.not_before, o.id LIMIT ?",
                (now, now, limit * 4),
            ).fetchall()
            moments: dict[str | None, int] = {}  # each chat's next moment
            handed: list[Outgoing] = []
            for oid, key, kind, text, buttons, attempts, ref_message, ref_sent, chat in rows:
                if kind == "edit" and ref_message is None:
                    if ref_sent is not None:  # its message was given up: nothing to edit, ever
                        tx.execute(
                            "UPDATE outbox SET sent_at = ?, last_error = ? WHERE id = ?", (now, "no message", oid)
                        )
                    continue
                if len(handed) >= limit:
                    break
                if chat not in moments:
                    paced = tx.execute("SELECT value FROM meta WHERE key = ?", (_pacing_key(chat),)).fetchone()
                    moments[chat] = now if paced is None else max(now, int(paced[0]))
                moment = moments[chat]
                tx.execute("UPDATE outbox SET claimed_until = ? WHERE id = ?", (moment + CLAIM_MS, oid))
                handed.append(Outgoing(oid, key, kind, text, _keyboard(buttons), ref_message, attempts, moment, chat))
                moments[chat] = moment + PER_CHAT_PAUSE_MS
            for chat, moment in moments.items():
                tx.execute("INSERT OR REPLACE INTO meta VALUES (?, ?)", (_pacing_key(chat), str(moment)))
            del holder  # who claimed is not kept: a claim is a deadline, not an owner
            return sorted(handed, key=lambda o: o.send_at)  # stable: a chat's own order is kept

    def mark_sent(self, item: Outgoing, message_id: int | None) -> None:
        with self._tx() as tx:
            tx.execute(
                "UPDATE outbox SET sent_at = ?, message_id = ?, claimed_until = NULL WHERE id = ?",
                (self.now_ms(), message_id, item.id),
            )

    def retry_later(self, item: Outgoing, wait_ms: int, error: str) -> None:
        with self._tx() as tx:
            tx.execute(
                "UPDATE outbox SET not_before = ?, claimed_until = NULL, attempts = attempts + 1, last_error = ?"
                " WHERE id = ?",
                (self.now_ms() + wait_ms, error, item.id),
            )

    def pause(self, wait_ms: int) -> None:
        """Telegram asked to slow down (429): nothing is handed out until then, whoever sends."""
        with self._tx() as tx:
            tx.execute("INSERT OR REPLACE INTO meta VALUES ('paused_until', ?)", (str(self.now_ms() + wait_ms),))

    def release(self, item: Outgoing) -> None:
        """Hand a claimed message back, untried (the round ended before it)."""
        with self._tx() as tx:
            tx.execute("UPDATE outbox SET claimed_until = NULL WHERE id = ?", (item.id,))

    def give_up(self, item: Outgoing, error: str) -> None:
        """Telegram will never take it as it is: recorded, never sent, never retried."""
        with self._tx() as tx:
            tx.execute(
                "UPDATE outbox SET sent_at = ?, claimed_until = NULL, attempts = attempts + 1, last_error = ?"
                " WHERE id = ?",
                (self.now_ms(), error, item.id),
            )

    def next_due(self) -> int | None:
        rows = self._read("SELECT min(not_before) FROM outbox WHERE sent_at IS NULL")
        return None if rows[0][0] is None else int(rows[0][0])

    def waiting(self) -> int:
        return int(self._read("SELECT count(*) FROM outbox WHERE sent_at IS NULL")[0][0])

    def sent(self) -> list[tuple[str, str, int | None]]:
        """(key, text, message id) of what went out, oldest first: for status and tests."""
        return [
            (r[0], r[1], r[2])
            for r in self._read(
                "SELECT key, text, message_id FROM outbox WHERE sent_at IS NOT NULL ORDER BY sent_at, id"
            )
        ]

    def message_id(self, key: str) -> int | None:
        rows = self._read("SELECT message_id FROM outbox WHERE key = ?", (key,))
        return None if not rows or rows[0][0] is None else int(rows[0][0])

    # -- the bot token's standing ---------------------------------------------------------------
    def set_token_refused(self, site: str, reason: str | None) -> None:
        """Telegram refuses ``site``'s daemon's bot token (``reason``, never the token), or no longer
        does (None): for ``status``, which only a person can act on."""
        with self._tx() as tx:
            if reason is None:
                tx.execute("DELETE FROM meta WHERE key = ?", (_token_key(site),))
            else:
                tx.execute("INSERT OR REPLACE INTO meta VALUES (?, ?)", (_token_key(site), reason))
