import { v } from "convex/values";
import { internalMutation, mutation, query } from "./_generated/server";
import { authenticate, siteArgs } from "./lib/auth";
import { fail } from "./lib/errors";
import { ownedRow } from "./lib/owned";
import { approvalPriority, approvalStatus, isCount } from "./lib/validators";

const MINUTE = 60_000;

/**
 * The design's approval policy: how long a pending approval of each category (its actionType)
 * waits before it expires; 0 approves it at once. A copy of sync/approvals.py's
 * APPROVAL_TIMEOUTS_MS (the daemon's jobs.approval_timeouts starts from the same table): the
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

/**
 * Does the policy approve a new approval at once? The same rule as sync/approvals.py's
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

function timeoutOf(category: string, timeoutsMs: Record<string, number>, defaultMs: number): number {
  return Object.prototype.hasOwnProperty.call(timeoutsMs, category) ? timeoutsMs[category] : defaultMs;
}

/**
 * A new approval of category `actionType`, stored with `costUsd` and `testsPassed` (what the
 * request says of itself, if anything). `timeoutMs` is the category's timeout under the caller's
 * policy (left out: APPROVAL_TIMEOUTS_MS). What approvedAtCreation approves never waits for a
 * person: approved at once, by "policy". A negative or non-finite cost is INVALID.
 */
export const create = mutation({
  args: {
    ...siteArgs,
    agentName: v.string(),
    actionType: v.string(),
    priority: approvalPriority,
    reviewers: v.array(v.string()),
    expiresAt: v.number(),
    timeoutMs: v.optional(v.number()),
    costUsd: v.optional(v.number()),
    testsPassed: v.optional(v.boolean()),
  },
  returns: v.object({ approvalId: v.id("approvals") }),
  handler: async (ctx, args) => {
    const site = await authenticate(ctx, args);
    const now = Date.now();
    if (!(args.expiresAt > now)) fail("INVALID", `expiresAt ${args.expiresAt} is not in the future`);
    const timeout = args.timeoutMs ?? timeoutOf(args.actionType, APPROVAL_TIMEOUTS_MS, DEFAULT_APPROVAL_TIMEOUT_MS);
    if (!isCount(timeout)) fail("INVALID", `timeoutMs must be a whole number of ms, not ${timeout}`);
    const { costUsd, testsPassed } = args;
    if (costUsd !== undefined && !(Number.isFinite(costUsd) && costUsd >= 0)) {
      fail("INVALID", `costUsd must be a finite amount, not negative, got ${costUsd}`);
    }
    const approvalId = await ctx.db.insert("approvals", {
      agentName: args.agentName,
      site,
      actionType: args.actionType,
      priority: args.priority,
      reviewers: args.reviewers,
      expiresAt: args.expiresAt,
      createdAt: now,
      ...(costUsd === undefined ? {} : { costUsd }),
      ...(testsPassed === undefined ? {} : { testsPassed }),
      ...(approvedAtCreation(args.actionType, timeout, costUsd, testsPassed)
        ? { status: "approved" as const, resolvedAt: now, resolvedBy: APPROVED_BY_POLICY }
        : { status: "pending" as const }),
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

/**
 * Sweep expire-pending-approvals: a pending approval of category C created at t expires once
 * now - t >= timeoutsMs[C] (defaultMs for a category not in the table), or once its own expiresAt
 * has passed. The cron leaves every argument out (the policy above, the time now); an admin or a
 * test may give them.
 */
export const expirePending = internalMutation({
  args: {
    now: v.optional(v.number()),
    timeoutsMs: v.optional(v.record(v.string(), v.number())),
    defaultMs: v.optional(v.number()),
  },
  returns: v.object({ expired: v.array(v.object({ approvalId: v.id("approvals"), site: v.string() })) }),
  handler: async (ctx, args) => {
    const now = args.now ?? Date.now();
    const timeouts = args.timeoutsMs ?? APPROVAL_TIMEOUTS_MS;
    const defaultMs = args.defaultMs ?? DEFAULT_APPROVAL_TIMEOUT_MS;
    const pending = await ctx.db
      .query("approvals")
      .withIndex("by_status_expires", (q) => q.eq("status", "pending"))
      .collect();
    const due = pending.filter(
      (a) => a.expiresAt <= now || now - a.createdAt >= timeoutOf(a.actionType, timeouts, defaultMs),
    );
    for (const approval of due) await ctx.db.patch(approval._id, { status: "expired", resolvedAt: now });
    return { expired: due.map((approval) => ({ approvalId: approval._id, site: approval.site })) };
  },
});
