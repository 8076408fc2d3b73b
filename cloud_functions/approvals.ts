import { v } from "convex/values";
import { internalMutation, mutation, query } from "./_generated/server";
import { authenticate, siteArgs } from "./lib/auth";
import { fail } from "./lib/errors";
import { ownedRow } from "./lib/owned";
import { approvalPriority, approvalStatus } from "./lib/validators";

export const create = mutation({
  args: {
    ...siteArgs,
    agentName: v.string(),
    actionType: v.string(),
    priority: approvalPriority,
    reviewers: v.array(v.string()),
    expiresAt: v.number(),
  },
  returns: v.object({ approvalId: v.id("approvals") }),
  handler: async (ctx, args) => {
    const site = await authenticate(ctx, args);
    const now = Date.now();
    if (!(args.expiresAt > now)) fail("INVALID", `expiresAt ${args.expiresAt} is not in the future`);
    const approvalId = await ctx.db.insert("approvals", {
      agentName: args.agentName,
      site,
      actionType: args.actionType,
      status: "pending",
      priority: args.priority,
      reviewers: args.reviewers,
      expiresAt: args.expiresAt,
      createdAt: now,
    });
    return { approvalId };
  },
});

/** Settles a pending approval once; an expired or already settled one is a CONFLICT. */
export const resolve = mutation({
  args: {
    ...siteArgs,
    approvalId: v.id("approvals"),
    status: v.union(v.literal("approved"), v.literal("rejected")),
    by: v.string(),
  },
  returns: v.object({ status: v.union(v.literal("approved"), v.literal("rejected")) }),
  handler: async (ctx, args) => {
    const site = await authenticate(ctx, args);
    const approval = await ownedRow(ctx.db, args.approvalId, site);
    const now = Date.now();
    if (approval.status !== "pending") fail("CONFLICT", `approval is already ${approval.status}`);
    // Past its deadline but not yet swept by the cron: as good as expired.
    if (approval.expiresAt <= now) fail("CONFLICT", "approval is expired");
    await ctx.db.patch(approval._id, { status: args.status, resolvedAt: now, resolvedBy: args.by });
    return { status: args.status };
  },
});

export const list = query({
  args: { ...siteArgs, status: v.optional(approvalStatus) },
  handler: async (ctx, args) => {
    const site = await authenticate(ctx, args);
    return await ctx.db
      .query("approvals")
      .withIndex("by_site_status", (q) =>
        args.status === undefined ? q.eq("site", site) : q.eq("site", site).eq("status", args.status),
      )
      .collect();
  },
});

/** Cron expire-pending-approvals: pending approvals past expiresAt become expired. */
export const expirePending = internalMutation({
  // `now` lets an admin (or a test) run the sweep as of another time; crons leave it out.
  args: { now: v.optional(v.number()) },
  handler: async (ctx, args) => {
    const now = args.now ?? Date.now();
    const due = await ctx.db
      .query("approvals")
      .withIndex("by_status_expires", (q) => q.eq("status", "pending").lte("expiresAt", now))
      .collect();
    for (const approval of due) await ctx.db.patch(approval._id, { status: "expired", resolvedAt: now });
    return { expired: due.map((approval) => approval._id) };
  },
});
