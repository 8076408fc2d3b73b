import type { Doc } from "../_generated/dataModel";
import type { Severity } from "./alertMachine";

const MINUTE = 60_000;

/**
 * The design's approval policy: how long a pending approval of each category (its actionType)
 * waits before it expires; 0 approves it at once. A copy of sync/policy/approvals.py's
 * APPROVAL_TIMEOUTS_MS, both held to contracts/approval_policy.json (the daemon's jobs.approval_timeouts starts from the same table): the
 * expire-pending-approvals cron runs with it, and create applies it when no timeout is given.
 */
export const APPROVAL_TIMEOUTS_MS: Record<string, number> = {
  send_message: 60 * MINUTE,
  financial: 120 * MINUTE,
  destructive: 30 * MINUTE,
  external_api: 15 * MINUTE,
  code_commit: 30 * MINUTE,
  internal: 0,
  research: 0,
};
export const DEFAULT_APPROVAL_TIMEOUT_MS = 60 * MINUTE;
/** resolvedBy of an approval the policy approves at once. */
export const APPROVED_BY_POLICY = "policy";
/** An external_api call cheaper than this (in USD) needs nobody. */
export const AUTO_APPROVE_UNDER_USD = 0.1;
/** How often one approval may be deferred: a person who keeps deferring should decide instead. */
export const MAX_DEFERS = 3;

/**
 * Does the policy approve a new approval at once? The same rule as sync/policy/approvals.py's
 * approved_at_creation, which is its source (change both together): a category timeout of 0, an
 * external_api whose cost is under AUTO_APPROVE_UNDER_USD, a code_commit whose tests passed. A
 * cost or test result the request leaves out approves nothing.
 */
export function approvedAtCreation(
  actionType: string,
  timeoutMs: number,
  costUsd: number | undefined,
  testsPassed: boolean | undefined,
): boolean {
  if (timeoutMs === 0) return true;
  if (actionType === "external_api") return costUsd !== undefined && costUsd < AUTO_APPROVE_UNDER_USD;
  if (actionType === "code_commit") return testsPassed === true;
  return false;
}

export function timeoutOf(
  category: string,
  timeoutsMs: Record<string, number> = APPROVAL_TIMEOUTS_MS,
  defaultMs: number = DEFAULT_APPROVAL_TIMEOUT_MS,
): number {
  return Object.prototype.hasOwnProperty.call(timeoutsMs, category) ? timeoutsMs[category] : defaultMs;
}

/**
 * When a pending approval expires unanswered: its own expiresAt or its category's timeout after
 * creation, whichever comes first; once deferred, the deferred expiresAt alone (a defer that the
 * category's timeout cut short would defer nothing).
 */
export function effectiveExpiry(
  approval: Pick<Doc<"approvals">, "actionType" | "createdAt" | "expiresAt" | "deferCount">,
  timeoutsMs: Record<string, number> = APPROVAL_TIMEOUTS_MS,
  defaultMs: number = DEFAULT_APPROVAL_TIMEOUT_MS,
): number {
  if ((approval.deferCount ?? 0) > 0) return approval.expiresAt;
  // A negative timeout counts as 0, as in sync/policy/approvals.py (contracts/approval_policy.json).
  return Math.min(approval.expiresAt, approval.createdAt + Math.max(timeoutOf(approval.actionType, timeoutsMs, defaultMs), 0));
}

/**
 * The new deadline when a person defers a pending approval at `now`: its effective expiry pushed
 * out by its category's timeout; null when it may not be deferred (past its deadline, or deferred
 * MAX_DEFERS times already). sync/policy/approvals.py's deferred_expiry.
 */
export function deferredExpiry(
  approval: Pick<Doc<"approvals">, "actionType" | "createdAt" | "expiresAt" | "deferCount">,
  now: number,
  timeoutsMs: Record<string, number> = APPROVAL_TIMEOUTS_MS,
  defaultMs: number = DEFAULT_APPROVAL_TIMEOUT_MS,
): number | null {
  const current = effectiveExpiry(approval, timeoutsMs, defaultMs);
  if ((approval.deferCount ?? 0) >= MAX_DEFERS || now >= current) return null;
  return current + Math.max(timeoutOf(approval.actionType, timeoutsMs, defaultMs), 0);
}

/**
 * How loud an approval's Telegram messages are, by its priority: a critical message goes at once
 * and may wake people; a warning waits out the quiet hours. An unknown priority is a warning.
 * sync/policy/approvals.py's PRIORITY_SEVERITY (contracts/priority_severity.json).
 */
export const PRIORITY_SEVERITY: Readonly<Record<string, Severity>> = {
  low: "warning",
  normal: "warning",
  high: "critical",
  critical: "critical",
};

export function severityOfPriority(priority: string): Severity {
  return Object.prototype.hasOwnProperty.call(PRIORITY_SEVERITY, priority) ? PRIORITY_SEVERITY[priority] : "warning";
}
