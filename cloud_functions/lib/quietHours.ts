/**
 * Quiet hours: a warning queued while people sleep waits for the morning; a critical one goes at
 * once. Pure. The window is wall-clock time in an IANA time zone (Intl does the zone arithmetic, so
 * summer time is right), and may run across midnight ("22:00-07:00").
 */
import type { Severity } from "./alertMachine";

const MINUTE = 60_000;
const DAY = 24 * 60 * MINUTE;

export type QuietHours = { startMin: number; endMin: number }; // minutes after local midnight

/** "22:00-07:00" -> the window; null for nothing, a malformed text, or an empty window (start = end). */
export function parseQuietHours(text: string | undefined): QuietHours | null {
  const found = /^\s*(\d{1,2}):(\d{2})\s*-\s*(\d{1,2}):(\d{2})\s*$/.exec(text ?? "");
  if (found === null) return null;
  const [h1, m1, h2, m2] = found.slice(1).map(Number);
  if (h1 > 23 || h2 > 23 || m1 > 59 || m2 > 59) return null;
  const window = { startMin: h1 * 60 + m1, endMin: h2 * 60 + m2 };
  return window.startMin === window.endMin ? null : window;
}

/** Is `timeZone` a zone Intl knows? (A typo in the deployment's settings must not stop alerts.) */
export function isTimeZone(timeZone: string): boolean {
  try {
    new Intl.DateTimeFormat("en-US", { timeZone });
    return true;
  } catch {
    return false;
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
