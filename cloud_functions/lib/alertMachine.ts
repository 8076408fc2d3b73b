/**
 * The alert state machine: from observations, what to say and when. Pure (no clock, no I/O). A
 * line-for-line copy of daemon/alerts/machine.py, which the daemons run (contracts/alert_cases.json
 * holds both to the same answers): change both together.
 *
 * One machine per (signal, subject), e.g. ("silent", "laptop"):
 *
 *     ok --bad--> late --(N bad in a row, or bad for the grace)--> down --good--> ok
 *      ^           |                                                 |
 *      +---good----+ (a flap inside the grace: nothing said)         +-- reminders while it stays down
 *
 * Exactly one notice when it goes down and one when it recovers (with how long it was down and how
 * far its value moved meanwhile, e.g. episodes caught up), reminders after 1 h, 4 h and 24 h down.
 * How long is measured from when the signal went bad: the first bad observation, or earlier where
 * the observer knows (`Observation.badSince`: a daemon silent since its last heartbeat was silent
 * for 5 min when first seen so, and its down notice says so, not 0 s). The grace counts from there too.
 * A snooze holds reminders (the one that fell due while snoozed goes out when the snooze ends); a
 * mute holds the down notice and the reminders, not the recovery of a down that was said.
 */

export const HOUR_MS = 3_600_000;
export const REMINDERS_MS: readonly number[] = [HOUR_MS, 4 * HOUR_MS, 24 * HOUR_MS];

export type Severity = "warning" | "critical";
export type NoticeKind = "down" | "reminder" | "recovered";

export type SignalSpec = {
  code: string; // short: it goes into Telegram's 64-byte callback data
  severity: Severity;
  graceMs: number; // bad for this long -> down (0: at the first bad observation)
  badCount: number; // or this many bad observations in a row -> down (0: the grace alone decides)
  remindersMs: readonly number[]; // after how long down each reminder goes out
  recovery: boolean; // say when it recovers
};

export type AlertState = {
  state: "ok" | "late" | "down";
  since: number; // ms: when the current bad spell began (late, down) or when it became ok
  streak: number; // bad observations in a row
  downAt: number; // ms: when it went down
  reminders: number; // reminders accounted for in this spell (sent, or skipped as superseded)
  notified: boolean; // the down notice of this spell was said
  valueAtDown: number | null;
  snoozedUntil: number; // ms
  mutedUntil: number; // ms
};

export type Observation = {
  bad: boolean;
  at: number; // ms
  detail: string; // what was seen, as a sentence fragment ("no sync for 2 h 5 min")
  value: number | null; // a figure whose movement the recovery reports (episodes synced)
  badSince?: number | null; // ms: when the condition seen went bad, where the observer knows (a daemon's last heartbeat)
};

export type Notice = {
  kind: NoticeKind;
  severity: Severity;
  downForMs: number;
  detail: string;
  caughtUp: number | null; // recovered: how far the value moved while down
};

/** machine.py's SignalSpec defaults: reminders after 1 h, 4 h, 24 h, and a recovery notice. */
export function signalSpec(
  fields: Omit<SignalSpec, "remindersMs" | "recovery"> & Partial<Pick<SignalSpec, "remindersMs" | "recovery">>,
): SignalSpec {
  return { remindersMs: REMINDERS_MS, recovery: true, ...fields };
}

/** machine.py's AlertState(since=...): every other field at its default. */
export function initialState(since: number): AlertState {
  return {
    state: "ok",
    since,
    streak: 0,
    downAt: 0,
    reminders: 0,
    notified: false,
    valueAtDown: null,
    snoozedUntil: 0,
    mutedUntil: 0,
  };
}

function notice(kind: NoticeKind, severity: Severity, downForMs: number, detail: string, caughtUp: number | null = null): Notice {
  return { kind, severity, downForMs, detail, caughtUp };
}

/** The state after `obs`, and what to say about it (at most one notice). */
export function step(spec: SignalSpec, current: AlertState | null, obs: Observation): [AlertState, Notice[]] {
  let s = current !== null ? current : initialState(obs.at);
  const muted = s.mutedUntil > obs.at;
  const snoozed = s.snoozedUntil > obs.at;
  if (!obs.bad) {
    const notices: Notice[] = [];
    if (s.state === "down" && s.notified && spec.recovery) {
      const moved = obs.value === null || s.valueAtDown === null ? null : obs.value - s.valueAtDown;
      notices.push(notice("recovered", spec.severity, obs.at - s.since, obs.detail, moved));
    }
    if (s.state === "ok") return [s, notices];
    return [
      { ...s, state: "ok", since: obs.at, streak: 0, downAt: 0, reminders: 0, notified: false, valueAtDown: null },
      notices,
    ];
  }
  if (s.state === "down") {
    if (!s.notified) {
      // went down while muted: said once the mute is over
      if (muted) return [s, []];
      return [{ ...s, notified: true }, [notice("down", spec.severity, obs.at - s.since, obs.detail)]];
    }
    const due = spec.remindersMs.filter((after) => obs.at - s.downAt >= after).length;
    if (due <= s.reminders || muted || snoozed) return [s, []];
    return [{ ...s, reminders: due }, [notice("reminder", spec.severity, obs.at - s.since, obs.detail)]];
  }
  if (s.state === "ok") {
    const began = obs.badSince === undefined || obs.badSince === null ? obs.at : Math.min(obs.badSince, obs.at);
    s = { ...s, state: "late", since: began, streak: 1 };
  } else {
    s = { ...s, streak: s.streak + 1 };
  }
  if (!((spec.badCount > 0 && s.streak >= spec.badCount) || obs.at - s.since >= spec.graceMs)) return [s, []];
  const down: AlertState = { ...s, state: "down", downAt: obs.at, reminders: 0, valueAtDown: obs.value, notified: !muted };
  return [down, muted ? [] : [notice("down", spec.severity, obs.at - s.since, obs.detail)]];
}

export function snooze(current: AlertState, untilMs: number): AlertState {
  return { ...current, snoozedUntil: Math.max(current.snoozedUntil, untilMs) };
}

export function mute(current: AlertState, untilMs: number): AlertState {
  return { ...current, mutedUntil: Math.max(current.mutedUntil, untilMs) };
}
