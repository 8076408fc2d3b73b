"""Observations in, alerts out: each (signal, subject) machine stepped in the alert store, what it
says logged and, with Telegram configured, queued (in the same transaction as the new state, so a
crash can neither lose nor repeat a message). The fleet's observations come from the global
``alerts`` job (``daemon/hubserver/scheduled.py``), the site's own from its run loop's problems
(``local_observations``)."""

from __future__ import annotations

import threading
from collections.abc import Mapping
from dataclasses import replace
from typing import Any

import structlog

from daemon.alerts.machine import HOUR_MS, AlertState, Notice, Observation, SignalSpec, step
from daemon.alerts.messages import digest_message, notice_message
from daemon.alerts.outbox_keys import alert_key
from daemon.alerts.policy.quiet_hours import send_after
from daemon.alerts.signals import MINUTE_MS, SIGNALS, FleetRules, Subject
from daemon.alerts.store import AlertStore, Queued
from daemon.config import Settings
from daemon.telegram.policy.routing import Kind, chats_for

log = structlog.get_logger("memsync.alerts")


def specs(settings: Settings) -> dict[str, SignalSpec]:
    """The signal table with this config's reminders and graces."""
    reminders = tuple(int(h * HOUR_MS) for h in settings.alerts.reminders)
    found = {
        code: replace(spec, reminders_ms=reminders) if spec.reminders_ms else spec for code, spec in SIGNALS.items()
    }
    found["backbone"] = replace(found["backbone"], grace_ms=int(settings.alerts.backbone_grace * MINUTE_MS))
    for code, minutes in settings.alerts.grace.items():  # a configured grace alone decides
        found[code] = replace(found[code], grace_ms=int(minutes * MINUTE_MS), bad_count=0)
    return found


def fleet_rules(settings: Settings) -> FleetRules:
    """The fleet sweep's rules from this config: the approval lead, and the approval timeouts the
    expiry job applies."""
    jobs = settings.jobs
    return FleetRules(
        approval_lead_ms=int(settings.alerts.approval_lead * MINUTE_MS),
        timeouts_ms={category: int(minutes * MINUTE_MS) for category, minutes in jobs.approval_timeouts.items()},
        default_timeout_ms=int(jobs.default_approval_timeout * MINUTE_MS),
    )


class Alerts:
    def __init__(self, settings: Settings, store: AlertStore) -> None:
        self.settings = settings
        self.store = store
        self.specs = specs(settings)
        self.queued = threading.Event()  # set when a message was queued: the sender wakes

    def observe(
        self, observations: Mapping[Subject, Observation], severity: Mapping[Subject, str] | None = None
    ) -> list[tuple[Subject, Notice]]:
        """Step every observed machine; returns what was said (already logged, and queued)."""
        if not self.settings.alerts.enabled or not observations:
            return []
        by_key = {subject.key: subject for subject in observations}
        telegram = self.settings.telegram

        def decide(key: str, state: AlertState | None) -> tuple[AlertState, list[Queued], list[Notice]]:
            subject = by_key[key]
            spec = self.specs[subject.signal]
            if severity and subject in severity:
                spec = replace(spec, severity=severity[subject])  # type: ignore[arg-type]
            new, notices = step(spec, state, observations[subject])
            queued = []
            for notice in notices if telegram.enabled else []:
                spell = (state.down_at if state is not None else 0) if notice.kind == "recovered" else new.down_at
                at = observations[subject].at
                queued += [
                    Queued(
                        alert_key(key, notice.kind, spell, new.reminders),
                        notice_message(subject, notice),
                        notice.severity,
                        send_after(notice.severity, at, telegram.quiet_hours, telegram.timezone),
                        chat=chat,
                    )
                    for chat in outbox_chats(self.settings, "alert", subject.signal)
                ]
            return new, queued, notices

        said = self.store.advance(sorted(by_key), decide)
        if telegram.enabled and any(said):
            self.queued.set()
        out = [(by_key[key], n) for key, notices in zip(sorted(by_key), said, strict=True) for n in notices]
        for subject, notice in out:
            (log.info if notice.kind == "recovered" else log.warning)(
                "alert",
                signal=subject.signal,
                subject=subject.subject,
                kind=notice.kind,
                severity=notice.severity,
                detail=notice.detail,
                down_for_s=round(notice.down_for_ms / 1000),
            )
        return out

    def queue_digest(self, digest: Mapping[str, Any], key: str) -> bool:
        """The digest as one message under ``key`` (one per day: ``outbox_keys.digest_key``) to
        each chat that hears it."""
        if not self.settings.telegram.enabled:
            return False
        message = digest_message(digest)
        queued = False
        for chat in outbox_chats(self.settings, "digest", None):
            queued |= self.store.enqueue(Queued(key, message, chat=chat))
        if queued:
            self.queued.set()
        return queued


def outbox_chats(settings: Settings, kind: Kind, name: str | None) -> tuple[str | None, ...]:
    """The chats a message of ``kind`` (about signal or category ``name``) goes to
    (``routing.chats_for``), as the outbox names them: None for the default chat."""
    default = settings.telegram.chat_id
    return tuple(None if chat == default else chat for chat in chats_for(kind, name, default, settings.collaborators))


def local_observations(site: str, problems: Mapping[str, str], now_ms: int) -> dict[Subject, Observation]:
    """The site's own signals from its run loop's current problems (``ProblemLog.current``): the
    backbone being retried, the AgentDB file unreadable."""
    backbone = problems.get("backbone")
    source = problems.get("source_error")
    return {
        Subject("backbone", site): Observation(
            backbone is not None,
            now_ms,
            f"cannot reach its backbone: {backbone}" if backbone else "reaches its backbone again",
        ),
        Subject("agentdb", site): Observation(
            source is not None,
            now_ms,
            f"cannot read its AgentDB file: {source}" if source else "reads its AgentDB file again",
        ),
    }
