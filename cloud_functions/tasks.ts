import { v } from "convex/values";
import type { Doc } from "./_generated/dataModel";
import { mutation, query } from "./_generated/server";
import { authenticate, siteArgs } from "./lib/auth";
import { fail } from "./lib/errors";
import { checkedTitle, insertTask, taskOf } from "./lib/taskFlow";
import { taskStatus } from "./lib/validators";

/**
 * A new task of the caller's site, "pending"; waiting on one of its own approvals (`approvalId`,
 * NOT_FOUND for none), it takes at once what the approval's status makes it (lib/taskPolicy.ts).
 * An approval's request may create its task itself (approvals.ts create's `task`).
 */
export const create = mutation({
  args: {
    ...siteArgs,
    title: v.string(),
    agentName: v.string(),
    assignedTo: v.optional(v.string()),
    // A string, not v.id: an id someone typed wrong is NOT_FOUND, as on the embedded hub.
    approvalId: v.optional(v.string()),
  },
  returns: v.object({ taskId: v.id("tasks") }),
  handler: async (ctx, args) => {
    const site = await authenticate(ctx, args);
    checkedTitle(args.title);
    let approval: Doc<"approvals"> | null = null;
    if (args.approvalId !== undefined) {
      // A task may only wait on its own site's approval.
      const id = ctx.db.normalizeId("approvals", args.approvalId);
      approval = id === null ? null : await ctx.db.get(id);
      if (approval === null || approval.site !== site) fail("NOT_FOUND", `no approval '${args.approvalId}' from site ${site} in the deployment`);
    }
    const { title, agentName, assignedTo } = args;
    const taskId = await insertTask(ctx, { site, title, agentName, ...(assignedTo === undefined ? {} : { assignedTo }) }, approval, Date.now());
    return { taskId };
  },
});

/**
 * Sets any site's task's status and/or assignee (people manage the fleet's tasks from any site, as
 * they decide its approvals); a field left out is kept, and at least one is needed (INVALID).
 */
export const update = mutation({
  args: { ...siteArgs, taskId: v.string(), status: v.optional(taskStatus), assignedTo: v.optional(v.string()) },
  handler: async (ctx, args) => {
    await authenticate(ctx, args);
    const { status, assignedTo } = args;
    if (status === undefined && assignedTo === undefined) fail("INVALID", "nothing to change: give a status or an assignee");
    const task = await taskOf(ctx, args.taskId);
    if (task === null) fail("NOT_FOUND", `no task '${args.taskId}'`);
    await ctx.db.patch(task._id, {
      ...(status === undefined ? {} : { status }),
      ...(assignedTo === undefined ? {} : { assignedTo }),
      updatedAt: Date.now(),
    });
    return (await ctx.db.get(task._id))!;
  },
});

/** Any site's task, or null (also for a malformed id). */
export const get = query({
  args: { ...siteArgs, taskId: v.string() },
  handler: async (ctx, args) => {
    await authenticate(ctx, args);
    return await taskOf(ctx, args.taskId);
  },
});

/**
 * The fleet's tasks, oldest first, narrowed by each filter given: `ofSite` (one site's; `site` is
 * the caller's, for its secret), `status`, `agentName`, `approvalId` (those waiting on it).
 */
export const list = query({
  args: {
    ...siteArgs,
    ofSite: v.optional(v.string()),
    status: v.optional(taskStatus),
    agentName: v.optional(v.string()),
    approvalId: v.optional(v.string()),
  },
  handler: async (ctx, args) => {
    await authenticate(ctx, args);
    const { ofSite, status, agentName } = args;
    let rows: Doc<"tasks">[];
    if (args.approvalId !== undefined) {
      const approvalId = ctx.db.normalizeId("approvals", args.approvalId);
      if (approvalId === null) return [];
      rows = await ctx.db
        .query("tasks")
        .withIndex("by_approval", (q) => q.eq("approvalId", approvalId))
        .collect();
    } else if (ofSite !== undefined) {
      rows = await ctx.db
        .query("tasks")
        .withIndex("by_site_status", (q) => (status === undefined ? q.eq("site", ofSite) : q.eq("site", ofSite).eq("status", status)))
        .collect();
    } else if (status !== undefined) {
      rows = await ctx.db
        .query("tasks")
        .withIndex("by_status", (q) => q.eq("status", status))
        .collect();
    } else {
      rows = await ctx.db.query("tasks").collect();
    }
    return rows
      .filter(
        (t) =>
          (ofSite === undefined || t.site === ofSite) &&
          (status === undefined || t.status === status) &&
          (agentName === undefined || t.agentName === agentName),
      )
      .sort((a, b) => a._creationTime - b._creationTime);
  },
});
