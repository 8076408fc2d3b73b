/**
 * What memsync watches, and how each fleet observation is read from what the backbone knows. Pure.
 * A copy of daemon/alerts/signals.py (same table, same rules, same texts): change both together.
 * On Convex the deployment's own `alerts` cron reads the fleet (alerts.ts), so a site that stopped
 * is reported even when every site has stopped. The local signals (backbone, agentdb) are listed
 * for the table's sake: only a site's own daemon can observe them.
 */
import { type Observation, type Severity, type SignalSpec, signalSpec } from "./alertMachine";
import { APPROVAL_TIMEOUTS_MS, DEFAULT_APPROVAL_TIMEOUT_MS, effectiveExpiry, severityOfPriority } from "./approvalPolicy";

export const MINUTE_MS = 60_000;

export const SIGNALS: Readonly<Record<string, SignalSpec>> = {
  // Fleet: from the registry and the approvals.
  silent: signalSpec({ code: "silent", severity: "warning", graceMs: 0, badCount: 1 }), // the sync-health job judged it down
  offline: signalSpec({ code: "offline", severity: "critical", graceMs: 0, badCount: 1 }), // its daemon's heartbeat went stale
  quarantine: signalSpec({ code: "quarantine", severity: "warning", graceMs: 0, badCount: 1 }),
  paused: signalSpec({ code: "paused", severity: "warning", graceMs: 10 * MINUTE_MS, badCount: 0 }), // indexing paused (quota)
  expiring: signalSpec({ code: "expiring", severity: "warning", graceMs: 0, badCount: 1, remindersMs: [], recovery: false }),
  // Local: the site's own daemon.
  backbone: signalSpec({ code: "backbone", severity: "critical", graceMs: 5 * MINUTE_MS, badCount: 0 }),
  agentdb: signalSpec({ code: "agentdb", severity: "critical", graceMs: MINUTE_MS, badCount: 0 }),
};
export const FLEET_SIGNALS = ["silent", "offline", "quarantine", "paused"] as const;
export const APPROVAL_LEAD_MS = 10 * MINUTE_MS; // warn this long before an unanswered approval expires

/** One machine's identity: a signal about a subject (a site name, or an approval id). */
export type Subject = { signal: string; subject: string };
export const subjectKey = ({ signal, subject }: Subject): string => `${signal}:${subject}`;
export type Observed = Subject & { observation: Observation };

/** What observeSites reads of a site: agents:sites' rows (lib/fleet.ts). */
export type SiteView = {
  site: string;
  totalSynced: number | null;
  health: "up" | "down" | null;
  lastSyncAt: number | null;
  lastHeartbeat: number | null;
  online: boolean;
  backlog: number | null;
  quarantined: number;
  indexState: string | null;
};

/** What observeApprovals reads of an approval; expiresAt is when it will expire unanswered. */
export type ApprovalView = {
  approvalId: string;
  status: string;
  expiresAt: number;
  actionType: string;
  agentName: string;
  site: string;
  priority: string;
};

/** '45 s', '12 min', '2 h 5 min', '3 d 4 h': how people say how long. */
export function duration(ms: number): string {
  const seconds = Math.floor(Math.max(ms, 0) / 1000);
  if (seconds < 60) return `${seconds} s`;
  let minutes = Math.floor(seconds / 60);
  if (minutes < 60) return `${minutes} min`;
  let hours = Math.floor(minutes / 60);
  minutes %= 60;
  if (hours < 24) return minutes ? `${hours} h ${minutes} min` : `${hours} h`;
  const days = Math.floor(hours / 24);
  hours %= 24;
  return hours ? `${days} d ${hours} h` : `${days} d`;
}

const observation = (
  bad: boolean,
  at: number,
  detail: string,
  value: number | null = null,
  badSince: number | null = null,
): Observation => ({ bad, at, detail, value, badSince });

/** '1 episode', '2 episodes', '0 episodes'. */
export const plural = (n: number, one: string, many = `${one}s`): string => `${n} ${n === 1 ? one : many}`;

/**
 * A site with nothing to sync: its daemon is online and says it has no backlog. Such a site is
 * quiet, not silent (an agent idle for the night must not page anyone).
 */
export function idle(site: Pick<SiteView, "online" | "backlog">): boolean {
  return site.online && site.backlog === 0;
}

/**
 * Each site's fleet signals as observed now. A site that never heartbeated has no daemon to judge
 * offline (and no counts); one never judged by sync-health is not silent, nor is an idle one.
 * Silent and offline went bad when the site last synced and when its daemon last beat: the figures
 * their texts give, and what their alerts' durations count from.
 */
export function observeSites(sites: Iterable<SiteView>, nowMs: number): Observed[] {
  const found: Observed[] = [];
  for (const site of sites) {
    const synced = site.totalSynced;
    if (site.health !== null) {
      const silentFor = site.lastSyncAt !== null ? nowMs - site.lastSyncAt : null;
      const detail = "has not synced" + (silentFor === null ? "" : ` for ${duration(silentFor)}`);
      const silent = site.health === "down" && !idle(site);
      found.push({ signal: "silent", subject: site.site, observation: observation(silent, nowMs, silent ? detail : "is syncing again", synced, site.lastSyncAt) });
    }
    if (site.lastHeartbeat === null) continue;
    const quietFor = duration(nowMs - site.lastHeartbeat);
    found.push({
      signal: "offline",
      subject: site.site,
      observation: observation(
        !site.online,
        nowMs,
        !site.online ? `daemon silent for ${quietFor}` : "daemon is back",
        synced,
        site.lastHeartbeat,
      ),
    });
    found.push({
      signal: "quarantine",
      subject: site.site,
      observation: observation(
        site.quarantined > 0,
        nowMs,
        site.quarantined ? `${plural(site.quarantined, "row")} quarantined (memsync quarantine list)` : "quarantine empty",
        site.quarantined,
      ),
    });
    const paused = site.indexState === "paused";
    found.push({
      signal: "paused",
      subject: site.site,
      observation: observation(
        paused,
        nowMs,
        paused ? "search indexing paused: the embedding quota is exhausted" : "search indexing resumed",
      ),
    });
  }
  return found;
}

/** A pending approval that expires within `leadMs` and nobody answered. */
export function observeApprovals(pending: Iterable<ApprovalView>, nowMs: number, leadMs = APPROVAL_LEAD_MS): Observed[] {
  const found: Observed[] = [];
  for (const a of pending) {
    if (a.status !== "pending") continue;
    found.push({
      signal: "expiring",
      subject: a.approvalId,
      observation: observation(
        a.status === "pending" && a.expiresAt - nowMs <= leadMs,
        nowMs,
        `approval ${a.approvalId} (${a.actionType} by ${a.agentName} on ${a.site || "?"}) expires in ` +
          `${duration(a.expiresAt - nowMs)}, unanswered`,
      ),
    });
  }
  return found;
}

/** A pending approval as the sweep reads it: its stored deadline, and what decides its effective one. */
export type PendingApproval = Omit<ApprovalView, "expiresAt"> & {
  createdAt: number;
  expiresAt: number; // its own deadline (a deferral moves it)
  deferCount?: number;
};

/**
 * What the fleet's sweep decides with, from the deployment's settings: how long before an
 * unanswered approval expires it is said (alerts.approval_lead), and the approval timeouts that
 * decide when it expires, as the expire-pending-approvals cron applies them.
 */
export type FleetRules = { approvalLeadMs: number; timeoutsMs: Record<string, number>; defaultTimeoutMs: number };
export const DEFAULT_FLEET_RULES: FleetRules = {
  approvalLeadMs: APPROVAL_LEAD_MS,
  timeoutsMs: APPROVAL_TIMEOUTS_MS,
  defaultTimeoutMs: DEFAULT_APPROVAL_TIMEOUT_MS,
};

export type FleetObserved = Observed & { severity: Severity };

/**
 * The alerts cron's decision from the fleet at `nowMs` (daemon/alerts/signals.py's observe_fleet;
 * contracts/alert_sweep.json): every site's signals and every pending approval's, each with the
 * severity it is said at, in the order of their keys (the order the hub steps them). An approval
 * expires when the expiry cron would expire it (effectiveExpiry under the rules' timeouts).
 */
export function observeFleet(sites: Iterable<SiteView>, pending: Iterable<PendingApproval>, nowMs: number, rules: FleetRules): FleetObserved[] {
  const approvals = new Map<string, ApprovalView>();
  for (const a of pending) approvals.set(a.approvalId, { ...a, expiresAt: effectiveExpiry(a, rules.timeoutsMs, rules.defaultTimeoutMs) });
  const observed = [...observeSites(sites, nowMs), ...observeApprovals(approvals.values(), nowMs, rules.approvalLeadMs)];
  const key = (o: Observed) => subjectKey(o);
  return observed
    .sort((a, b) => (key(a) < key(b) ? -1 : key(a) > key(b) ? 1 : 0))
    .map((o) => ({ ...o, severity: severityOf(o, approvals) }));
}

/** An approval's own priority raises its expiry warning to critical. */
export function severityOf(subject: Subject, approvals: ReadonlyMap<string, ApprovalView>): Severity {
  const spec = SIGNALS[subject.signal];
  if (subject.signal === "expiring") {
    const found = approvals.get(subject.subject);
    if (found !== undefined && severityOfPriority(found.priority) === "critical") return "critical";
  }
  return spec.severity;
}
