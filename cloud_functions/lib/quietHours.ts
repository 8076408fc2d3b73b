/**
 * Quiet hours: a warning queued while people sleep waits for the morning; a critical one goes at
 * once. Pure. The window is wall-clock time in an IANA time zone (Intl does the zone arithmetic, so
 * summer time is right), and may run across midnight ("22:00-07:00").
 */
import type { Severity } from "./alertMachine";

const MINUTE = 60_000;
const DAY = 24 * 60 * MINUTE;

export type QuietHours = { startMin: number; endMin: number }; // minutes after local midnight

/** Python's repr of a string, as daemon/alerts/policy/quiet_hours.py quotes a setting in its sentences. */
function quoted(text: string): string {
  if (text.includes("'") && !text.includes('"')) return `"${text}"`;
  return `'${text.replaceAll("\\", "\\\\").replaceAll("'", "\\'")}'`;
}

/**
 * "22:00-07:00" -> the window, or the one sentence that refuses the text: daemon/alerts/policy/quiet_hours.py's
 * parse_quiet_hours, word for word (contracts/quiet_hours.json holds both to the same answers).
 */
export function readQuietHours(text: string): QuietHours | { problem: string } {
  const found = /^\s*(\d{1,2}):(\d{2})\s*-\s*(\d{1,2}):(\d{2})\s*$/.exec(text);
  if (found === null) return { problem: `write quiet hours as HH:MM-HH:MM (e.g. 22:00-07:00), not ${quoted(text)}` };
  const [h1, m1, h2, m2] = found.slice(1).map(Number);
  if (h1 > 23 || h2 > 23 || m1 > 59 || m2 > 59) return { problem: `${quoted(text)} is not a time of day range` };
  if (h1 === h2 && m1 === m2) return { problem: `quiet hours ${quoted(text)} start and end at the same minute` };
  return { startMin: h1 * 60 + m1, endMin: h2 * 60 + m2 };
}

/** Why `timeZone` is refused (daemon/alerts/policy/quiet_hours.py's zone, word for word), or null when Intl knows it. */
export function zoneProblem(timeZone: string): string | null {
  try {
    new Intl.DateTimeFormat("en-US", { timeZone });
    return null;
  } catch {
    return `unknown time zone ${quoted(timeZone)} (use an IANA name such as Europe/Paris)`;
  }
}

/** How far `timeZone`'s wall clock is ahead of UTC at instant `t`, in ms. */
function offsetMs(timeZone: string, t: number): number {
  const parts = new Intl.DateTimeFormat("en-US", {
    timeZone,
    hourCycle: "h23",
    year: "numeric",
    month: "2-digit",
    day: "2-digit",
    hour: "2-digit",
    minute: "2-digit",
    second: "2-digit",
  }).formatToParts(new Date(t));
  const part = (type: string) => Number(parts.find((p) => p.type === type)?.value);
  const wall = Date.UTC(part("year"), part("month") - 1, part("day"), part("hour"), part("minute"), part("second"));
  return wall - Math.floor(t / 1000) * 1000;
}

const mod = (a: number, n: number) => ((a % n) + n) % n;

/**
 * When a message of `severity` queued at `now` may go out: `now`, or for a warning queued inside
 * the quiet hours, the instant they end.
 */
export function releaseAt(now: number, severity: Severity, quiet: QuietHours | null, timeZone: string): number {
  if (severity === "critical" || quiet === null) return now;
  const local = now + offsetMs(timeZone, now);
  const minute = Math.floor(mod(local, DAY) / MINUTE);
  const { startMin, endMin } = quiet;
  const inside = startMin < endMin ? startMin <= minute && minute < endMin : minute >= startMin || minute < endMin;
  if (!inside) return now;
  let endLocal = local - mod(local, DAY) + endMin * MINUTE;
  if (endLocal <= local) endLocal += DAY;
  // Wall clock back to an instant: the zone's offset at the end, found in two passes (it may differ
  // from tonight's when summer time starts or ends in between).
  const guess = endLocal - offsetMs(timeZone, now);
  return Math.max(now, endLocal - offsetMs(timeZone, guess));
}
