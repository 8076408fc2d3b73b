"""The daemon's alert thread. Every few seconds it

- watches the site's own signals (its backbone retried, its AgentDB file unreadable) from the run
  loop's current problems (``watch.local_observations``);
- sends the outbox (``daemon/telegram/sender.py``), when Telegram is configured;
- on the embedded hub, receives button presses: whichever daemon holds the poller lease long-polls
  getUpdates (a bot token allows one poller), and keeps approval messages true to their approvals
  (the server's ``Presses``: ``daemon/hubserver/telegram.py``). On Convex the deployment's webhook
  receives them instead.

Telegram failing never stops the daemon: a problem is logged once when it starts and once when it
ends (``sync.resilience.problems``); messages wait in the outbox meanwhile.
"""

from __future__ import annotations

import os
import socket
import threading
from collections.abc import Callable, Mapping
from typing import Final

import structlog

from daemon.alerts.store import AlertStore
from daemon.alerts.watch import Alerts, local_observations
from daemon.config import Settings
from daemon.telegram.callbacks import Presses, pressed
from daemon.telegram.client import BotApi
from daemon.telegram.poller import PollerLease
from daemon.telegram.sender import deliver
from sync.errors import TelegramAuthError, TelegramConflict, TelegramUnavailable
from sync.resilience.problems import ProblemLog

log = structlog.get_logger("memsync.alerts")
TICK: Final = 2.0  # seconds between rounds while the site has a problem (a grace or reminder may fall due)
IDLE_TICK: Final = 30.0  # and while it has none: an idle daemon wakes twice a minute, not thirty times
POLL_S: Final = 5  # getUpdates long-poll: short, so that a stop never waits long for it
POLLER_LEASE_MS: Final = 30_000


class AlertWorker:
    def __init__(
        self,
        settings: Settings,
        store: AlertStore,
        *,
        problems: Callable[[], Mapping[str, str]],
        presses: Presses | None,
        alerts: Alerts | None = None,
        bot: BotApi | None = None,
        on_stop: Callable[[], None] = lambda: None,
    ) -> None:
        self.settings = settings
        self.store = store
        self.poller = PollerLease(store)
        # Shared with the scheduler's alert job: what it queues wakes this thread to send it.
        self.alerts = alerts if alerts is not None else Alerts(settings, store)
        self.problems = problems  # the run loop's current problems, by kind
        self.presses = presses  # where the sites receive presses (``ServerDuties.presses``); None elsewhere
        self.on_stop = on_stop  # closes the worker's own backbone client
        telegram = settings.telegram
        if bot is None and telegram.enabled:
            assert telegram.bot_token is not None
            bot = BotApi(telegram.bot_token.get_secret_value(), telegram.api_base)
        self.bot = bot
        self.holder = f"{settings.site.name}@{socket.gethostname()}:{os.getpid()}"
        self.stopping = threading.Event()
        self.issues = ProblemLog(log)
        self._thread: threading.Thread | None = None
        self._receives = bot is not None and telegram.poll and presses is not None

    def start(self) -> AlertWorker:
        self._thread = threading.Thread(target=self._run, name="memsync-alerts", daemon=True)
        self._thread.start()
        return self

    def stop(self) -> None:
        self.stopping.set()
        self.alerts.queued.set()
        if self._thread is not None:
            self._thread.join(timeout=POLL_S + 15)
        if self._receives:
            self.poller.release(self.holder)
        if self.bot is not None:
            self.bot.close()
        self.on_stop()

    def _run(self) -> None:
        while not self.stopping.is_set():
            polled = False
            try:
                self.round()
                polled = self._receive()
            except Exception as exc:  # noqa: BLE001 - alerts must never take the daemon down; said once
                self.issues.problem("alerts", f"{type(exc).__name__}: {exc}")
            if not polled:
                self.alerts.queued.wait(self._pause())
                self.alerts.queued.clear()

    def _pause(self) -> float:
        """Until the next round: soon while a problem's grace or reminders run, or a message is due."""
        pause = TICK if self.problems() else IDLE_TICK
        due = self.store.next_due() if self.bot is not None else None
        if due is not None:
            pause = min(pause, max(0.05, (due - self.store.now_ms()) / 1000))
        return pause

    def round(self) -> None:
        """Watch the site's own signals, then send what is due."""
        site = self.settings.site.name
        self.alerts.observe(local_observations(site, self.problems(), self.store.now_ms()))
        if self.bot is None or self.settings.telegram.chat_id is None:
            return
        try:
            done = deliver(
                self.store, self.bot, self.settings.telegram.chat_id, pause=lambda s: not self.stopping.wait(s)
            )
        except TelegramAuthError as exc:
            self._token_refused(exc)
            return
        if done.sent:
            self._token_accepted()
        if done.held is not None:
            self.issues.problem("telegram", f"Telegram messages wait: {done.held}", quiet=True)
        else:
            self.issues.recovered("telegram")

    def _receive(self) -> bool:
        """Poll for button presses if this daemon holds the poller lease; True if it polled (the
        long poll was the wait)."""
        if not self._receives or not self.poller.hold(self.holder, POLLER_LEASE_MS):
            return False
        assert self.bot is not None
        assert self.presses is not None
        self.presses.reconcile()
        offset = self.poller.update_offset()
        try:
            updates = self.bot.get_updates(offset, POLL_S)
        except TelegramConflict as exc:
            self.issues.problem("poll", f"{exc}; button presses are not received until it stops")
            self.stopping.wait(30)
            return True
        except TelegramAuthError as exc:
            self._token_refused(exc)
            return False
        except TelegramUnavailable as exc:
            self.issues.problem("poll", f"cannot receive button presses: {exc}", quiet=True)
            return False
        self.issues.recovered("poll")
        self._token_accepted()
        for update in updates:
            press = pressed(update)  # an unknown button is answered too: Telegram's client waits for an answer
            if press is not None:
                answer = self.presses.apply(press)
                try:
                    self.bot.answer_callback_query(press.callback_id, answer)
                except Exception as exc:  # noqa: BLE001 - the answer is a courtesy; the press is applied
                    log.info("could not answer a button press", error=str(exc))
            self.poller.set_update_offset(int(update["update_id"]) + 1)
        return True

    def _token_refused(self, exc: TelegramAuthError) -> None:
        """Only a person can fix a refused token: an error in the log (once), and in ``status``."""
        if self.issues.problem("telegram", f"{exc}; no alert is sent and no button press received until it is fixed"):
            self.store.set_token_refused(self.settings.site.name, str(exc))

    def _token_accepted(self) -> None:
        if "telegram" in self.issues.current:
            self.store.set_token_refused(self.settings.site.name, None)
        self.issues.recovered("telegram")
