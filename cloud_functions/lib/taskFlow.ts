/**
 * What an approval's mutation does to the tasks waiting on it, and a task's creation and linking,
 * in the caller's one transaction (lib/taskPolicy.ts decides; sync/backbone/hub/fleet/tasks.py does the
 * same on the embedded hub).
 */
import type { Doc, Id } from "../_generated/dataModel";
import type { MutationCtx, QueryCtx } from "../_generated/server";
import { fail } from "./errors";
import { type ApprovalEvent, LINK_EVENT, type TaskStatus, taskStatusAfter } from "./taskPolicy";

export function checkedTitle(title: string): string {
  if (title.trim() === "") fail("INVALID", "a task needs a title: say in a few words what is to be done");
  return title;
}

/** The task an id names, any site's, or null (also for a malformed id). */
export async function taskOf(ctx: QueryCtx, taskId: string): Promise<Doc<"tasks"> | null> {
  const id = ctx.db.normalizeId("tasks", taskId);
  return id === null ? null : await ctx.db.get(id);
}

/** A new task of `site`, "pending" or, waiting on `approval`, as the approval's status makes it. */
export async function insertTask(
  ctx: MutationCtx,
  task: { site: string; title: string; agentName: string; assignedTo?: string },
  approval: Doc<"approvals"> | null,
  now: number,
): Promise<Id<"tasks">> {
  let status: TaskStatus = "pending";
  if (approval !== null) status = taskStatusAfter(LINK_EVENT[approval.status], status) ?? status;
  return await ctx.db.insert("tasks", {
    title: checkedTitle(task.title),
    agentName: task.agentName,
    site: task.site,
    status,
    ...(task.assignedTo === undefined ? {} : { assignedTo: task.assignedTo }),
    ...(approval === null ? {} : { approvalId: approval._id }),
    createdAt: now,
    updatedAt: now,
  });
}

/** One of `site`'s tasks now waits on `approval` and takes its status's event (NOT_FOUND for none). */
export async function linkTask(ctx: MutationCtx, site: string, taskId: string, approval: Doc<"approvals">, now: number) {
  const task = await taskOf(ctx, taskId);
  if (task === null || task.site !== site) fail("NOT_FOUND", `no task '${taskId}' from site ${site} in the deployment`);
  const status = taskStatusAfter(LINK_EVENT[approval.status], task.status) ?? task.status;
  await ctx.db.patch(task._id, { approvalId: approval._id, status, updatedAt: now });
}

/** The tasks waiting on `approvalId` move as `event` says. */
export async function followTasks(ctx: MutationCtx, approvalId: Id<"approvals">, event: ApprovalEvent, now: number) {
  const waiting = await ctx.db
    .query("tasks")
    .withIndex("by_approval", (q) => q.eq("approvalId", approvalId))
    .collect();
  for (const task of waiting) {
    const status = taskStatusAfter(event, task.status);
    if (status !== null) await ctx.db.patch(task._id, { status, updatedAt: now });
  }
}
