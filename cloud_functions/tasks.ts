import { v } from "convex/values";
import { mutation, query } from "./_generated/server";
import { authenticate, siteArgs } from "./lib/auth";
import { ownedRow } from "./lib/owned";
import { taskStatus } from "./lib/validators";

export const create = mutation({
  args: {
    ...siteArgs,
    title: v.string(),
    agentName: v.string(),
    assignedTo: v.optional(v.string()),
    approvalId: v.optional(v.id("approvals")),
  },
  returns: v.object({ taskId: v.id("tasks") }),
  handler: async (ctx, args) => {
    const site = await authenticate(ctx, args);
    // A task may only wait on its own site's approval.
    if (args.approvalId !== undefined) await ownedRow(ctx.db, args.approvalId, site);
    const taskId = await ctx.db.insert("tasks", {
      title: args.title,
      agentName: args.agentName,
      site,
      status: "pending",
      assignedTo: args.assignedTo,
      approvalId: args.approvalId,
    });
    return { taskId };
  },
});

export const update = mutation({
  args: { ...siteArgs, taskId: v.id("tasks"), status: taskStatus, assignedTo: v.optional(v.string()) },
  returns: v.object({ taskId: v.id("tasks"), status: taskStatus }),
  handler: async (ctx, args) => {
    const site = await authenticate(ctx, args);
    await ownedRow(ctx.db, args.taskId, site);
    // assignedTo left out keeps the current assignee.
    const change = args.assignedTo === undefined ? { status: args.status } : { status: args.status, assignedTo: args.assignedTo };
    await ctx.db.patch(args.taskId, change);
    return { taskId: args.taskId, status: args.status };
  },
});

export const list = query({
  args: { ...siteArgs, status: v.optional(taskStatus) },
  handler: async (ctx, args) => {
    const site = await authenticate(ctx, args);
    return await ctx.db
      .query("tasks")
      .withIndex("by_site_status", (q) =>
        args.status === undefined ? q.eq("site", site) : q.eq("site", site).eq("status", args.status),
      )
      .collect();
  },
});
