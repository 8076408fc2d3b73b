/**
 * What an approval's decision does to the tasks linked to it: a copy of sync/policy/tasks.py's policy,
 * both held to contracts/task_status.json. Asking blocks a task, a deferral keeps it blocked,
 * approving lets the work go on, a rejection cancels it, an expiry fails it; a task already
 * finished (done, failed, cancelled) is never moved by an approval.
 */
import type { Doc } from "../_generated/dataModel";

export type TaskStatus = Doc<"tasks">["status"];
export type ApprovalEvent = "requested" | "deferred" | "approved" | "rejected" | "expired";

export const TASK_STATUSES: readonly TaskStatus[] = ["pending", "in_progress", "blocked", "done", "failed", "cancelled"];
export const FINISHED: ReadonlySet<TaskStatus> = new Set<TaskStatus>(["done", "failed", "cancelled"]);

/** The status an event moves a linked task to. */
export const EVENT_STATUS: Readonly<Record<ApprovalEvent, TaskStatus>> = {
  requested: "blocked",
  deferred: "blocked",
  approved: "in_progress",
  rejected: "cancelled",
  expired: "failed",
};

/** A task linked to an approval that already has a status takes the event that status stands for. */
export const LINK_EVENT: Readonly<Record<Doc<"approvals">["status"], ApprovalEvent>> = {
  pending: "requested",
  approved: "approved",
  rejected: "rejected",
  expired: "expired",
};

/** The status a task in `current` takes when its approval has `event`; null when it stays. */
export function taskStatusAfter(event: ApprovalEvent, current: TaskStatus): TaskStatus | null {
  const target = EVENT_STATUS[event];
  if (FINISHED.has(current) || current === target) return null;
  return target;
}
