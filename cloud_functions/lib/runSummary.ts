/**
 * The one-line summaries the crons leave in their run records (scheduled.ts), worded as the hub's
 * jobs word theirs (daemon/hubserver/run_summary.py; contracts/run_summaries.json). Pure.
 */
import { plural } from "./alertSignals";

export const ALERTS_OFF = "alerts are off";
/** The alerts cron's summary names this many notices and counts the rest: one short line. */
export const NAMED_NOTICES = 3;

/** mark-stale-agents: how many agents or sites went offline, and how many were pruned. */
export function staleSummary(offline: number, pruned: number): string {
  const went = offline ? `${plural(offline, "agent or site", "agents or sites")} went offline` : "every agent with a recent heartbeat is online";
  return pruned ? `${went}; ${plural(pruned, "agent")} silent past the retention pruned` : went;
}

/** expire-pending-approvals. */
export function expiredSummary(expired: number): string {
  return `${plural(expired, "pending approval")} expired`;
}

/** sync-health: each site whose state changed, and its new state. */
export function healthSummary(changed: readonly { site: string; state: string }[]): string {
  return changed.length === 0 ? "no site changed state" : changed.map((t) => `${t.site} ${t.state}`).join("; ");
}

/** daily-digest: the day covered, and whether its message was queued (the outbox sends it). */
export function digestSummary(day: string, episodes: number, sites: number, queued: boolean): string {
  return `digest for ${day}: ${plural(episodes, "episode")} from ${plural(sites, "site")}${queued ? "; queued for Telegram" : ""}`;
}

/** cleanup-old-episodes: `files` where the server counts them (here; the hub's sweep does not). */
export function archiveSummary(archived: number, days: number, files?: number, failures: readonly string[] = []): string {
  const wrote = files === undefined ? "" : `, ${plural(files, "file")} written`;
  const failed = failures.length === 0 ? "" : `; ${plural(failures.length, "week")} failed: ${failures.join("; ")}`;
  return `${plural(archived, "episode")} older than ${plural(days, "day")} archived${wrote}${failed}`;
}

/**
 * alerts: how many signals were observed, and what was said: each notice's kind and subject
 * (`down offline:vm`), the first NAMED_NOTICES named and the rest counted, so that the line stays
 * short however much a sweep says.
 */
export function alertsSummary(observed: number, said: readonly (readonly [kind: string, subject: string])[]): string {
  const seen = `${plural(observed, "signal")} observed`;
  if (said.length === 0) return `${seen}, nothing to say`;
  const named = said.slice(0, NAMED_NOTICES).map(([kind, subject]) => `${kind} ${subject}`).join(", ");
  const more = said.length > NAMED_NOTICES ? ` and ${said.length - NAMED_NOTICES} more` : "";
  return `${seen}; ${plural(said.length, "notice")}: ${named}${more}`;
}
