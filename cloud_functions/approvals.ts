import { v } from "convex/values";
import type { Doc, Id } from "./_generated/dataModel";
import { type QueryCtx, internalMutation, mutation, query } from "./_generated/server";
import { defer as deferApproval, expire, markEpisode, settle } from "./lib/approvalFlow";
import { approvalButtons, approvalText } from "./lib/approvalMessage";
import { APPROVED_BY_POLICY, approvedAtCreation, effectiveExpiry, severityOfPriority } from "./lib/approvalPolicy";
import { authenticate, siteArgs } from "./lib/auth";
import { fail } from "./lib/errors";
import { enqueueRouted } from "./lib/outbox";
import { approvalKey } from "./lib/outboxKeys";
import { approvalTimeouts, deploymentTimeoutOf } from "./lib/settings";
import { checkedTitle, insertTask, linkTask } from "./lib/taskFlow";
import { approvalPriority, approvalStatus, isCount } from "./lib/validators";

export {
  APPROVAL_TIMEOUTS_MS,
  APPROVED_BY_POLICY,
  AUTO_APPROVE_UNDER_USD,
  approvedAtCreation,
  DEFAULT_APPROVAL_TIMEOUT_MS,
  MAX_DEFERS,
} from "./lib/approvalPolicy";

/**
 * A new approval of category `actionType`, stored with `costUsd` and `testsPassed` (what the
 * request says of itself, if anything), `summary` (what a person reads) and `sourceId` (the
 * caller's episode it is about, whose approvalStatus then follows the approval). `timeoutMs` is the
 * category's timeout under the caller's policy (left out: the deployment's, lib/settings.ts). What
 * approvedAtCreation approves never waits for a person: approved at once, by "policy"; a pending
 * one is put to the reviewers on Telegram (if configured). A negative or non-finite cost is INVALID.
 * `task` creates a task of the caller's linked to it, `taskId` links one of the caller's tasks
 * (NOT_FOUND for none; INVALID both), in this same mutation: the task is blocked while the approval
 * waits, or goes on at once when the policy approves it (lib/taskPolicy.ts).
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
    summary: v.optional(v.string()),
    sourceId: v.optional(v.string()),
    task: v.optional(v.object({ title: v.string(), assignedTo: v.optional(v.string()) })),
    taskId: v.optional(v.string()),
  },
  returns: v.object({
    approvalId: v.id("approvals"),
    status: v.union(v.literal("pending"), v.literal("approved")),
    taskId: v.optional(v.id("tasks")),
  }),
  handler: async (ctx, args) => {
    const site = await authenticate(ctx, args);
    const now = Date.now();
    if (!(args.expiresAt > now)) fail("INVALID", `expiresAt ${args.expiresAt} is not in the future`);
    const timeout = args.timeoutMs ?? deploymentTimeoutOf(args.actionType);
    if (!isCount(timeout)) fail("INVALID", `timeoutMs must be a whole number of ms, not ${timeout}`);
    const { costUsd, testsPassed, summary, sourceId } = args;
    if (costUsd !== undefined && !(Number.isFinite(costUsd) && costUsd >= 0)) {
      fail("INVALID", `costUsd must be a finite amount, not negative, got ${costUsd}`);
    }
    if (args.task !== undefined && args.taskId !== undefined) fail("INVALID", "an approval creates a task or links one, not both");
    if (args.task !== undefined) checkedTitle(args.task.title);
    // Its decision is written to that episode (markEpisode): an id naming none of this site's
    // episodes (hot or archived) is refused, never kept dangling.
    if (sourceId !== undefined) {
      const episode = await ctx.db
        .query("episodes")
        .withIndex("by_site_source", (q) => q.eq("sourceSite", site).eq("sourceId", sourceId))
        .unique();
      if (episode === null) fail("NOT_FOUND", `no episode '${sourceId}' from site ${site} in the deployment`);
    }
    const approved = approvedAtCreation(args.actionType, timeout, costUsd, testsPassed);
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
      ...(summary === undefined ? {} : { summary }),
      ...(sourceId === undefined ? {} : { sourceSite: site, sourceId }),
      ...(approved
        ? { status: "approved" as const, resolvedAt: now, resolvedBy: APPROVED_BY_POLICY }
        : { status: "pending" as const }),
    });
    const approval = (await ctx.db.get(approvalId))!;
    await markEpisode(ctx, approval, approval.status);
    let taskId: Id<"tasks"> | undefined;
    if (args.task !== undefined) {
      const { title, assignedTo } = args.task;
      taskId = await insertTask(ctx, { site, title, agentName: args.agentName, ...(assignedTo === undefined ? {} : { assignedTo }) }, approval, now);
    } else if (args.taskId !== undefined) {
      await linkTask(ctx, site, args.taskId, approval, now);
      taskId = ctx.db.normalizeId("tasks", args.taskId)!;
    }
    if (!approved) {
      const messageKey = approvalKey(approvalId);
      // To the default chat and each collaborator's that hears this category (lib/routing.ts).
      const queued = await enqueueRouted(
        ctx,
        { kind: "send", key: messageKey, text: approvalText(approval), buttons: approvalButtons(approvalId), severity: severityOfPriority(approval.priority) },
        { kind: "approval", name: approval.actionType },
        now,
      );
      if (queued) await ctx.db.patch(approvalId, { messageKey });
    }
    return { approvalId, status: approved ? ("approved" as const) : ("pending" as const), ...(taskId === undefined ? {} : { taskId }) };
  },
});

/** The approval an id names, any site's; NOT_FOUND for an unknown or malformed id. */
async function findApproval(ctx: QueryCtx, approvalId: string): Promise<Doc<"approvals">> {
  const id = ctx.db.normalizeId("approvals", approvalId);
  const approval = id === null ? null : await ctx.db.get(id);
  if (approval === null) fail("NOT_FOUND", `no approval ${approvalId}`);
  return approval;
}

/**
 * Settles a pending approval once, whichever site asked for it (a person answers for the fleet);
 * an expired or already settled one is a CONFLICT, an unknown one NOT_FOUND.
 */
export const resolve = mutation({
  args: {
    ...siteArgs,
    // A string, not v.id: an id someone typed wrong is NOT_FOUND, as on the embedded hub.
    approvalId: v.string(),
    status: v.union(v.literal("approved"), v.literal("rejected")),
    by: v.string(),
  },
  returns: v.object({ status: v.union(v.literal("approved"), v.literal("rejected")) }),
  handler: async (ctx, args) => {
    await authenticate(ctx, args);
    const approval = await findApproval(ctx, args.approvalId);
    await settle(ctx, approval, args.status, args.by, Date.now());
    return { status: args.status };
  },
});

/**
 * Gives a pending approval one more category timeout, from its current deadline; at most
 * MAX_DEFERS times, then CONFLICT (as for a settled or expired one). Any site's approval.
 */
export const defer = mutation({
  args: { ...siteArgs, approvalId: v.string(), by: v.string() },
  returns: v.object({ expiresAt: v.number(), deferCount: v.number() }),
  handler: async (ctx, args) => {
    await authenticate(ctx, args);
    const approval = await findApproval(ctx, args.approvalId);
    return await deferApproval(ctx, approval, args.by, Date.now());
  },
});

/** The caller's approvals, or with `allSites` every site's; optionally of one status. */
export const list = query({
  args: { ...siteArgs, status: v.optional(approvalStatus), allSites: v.optional(v.boolean()) },
  handler: async (ctx, args) => {
    const site = await authenticate(ctx, args);
    const { status } = args;
    if (args.allSites) {
      return status === undefined
        ? await ctx.db.query("approvals").collect()
        : await ctx.db
            .query("approvals")
            .withIndex("by_status_expires", (q) => q.eq("status", status))
            .collect();
    }
    return await ctx.db
      .query("approvals")
      .withIndex("by_site_status", (q) => (status === undefined ? q.eq("site", site) : q.eq("site", site).eq("status", status)))
      .collect();
  },
});

/** Any site's approval, as list gives it, or null (also for a malformed id). */
export const get = query({
  args: { ...siteArgs, approvalId: v.string() },
  handler: async (ctx, args) => {
    await authenticate(ctx, args);
    const id = ctx.db.normalizeId("approvals", args.approvalId);
    return id === null ? null : await ctx.db.get(id);
  },
});

/**
 * Sweep expire-pending-approvals: a pending approval expires once its deadline has passed
 * (lib/approvalPolicy.ts's effectiveExpiry: its own expiresAt or, never deferred, its category's
 * timeout after creation if sooner, timeoutsMs[C] or defaultMs for a category not in the table).
 * Its episode's approvalStatus turns "expired", and its Telegram message says so. The cron leaves
 * every argument out (the deployment's policy, lib/settings.ts, and the time now); an admin or a
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
    const policy = args.timeoutsMs === undefined || args.defaultMs === undefined ? approvalTimeouts() : null;
    const timeouts = args.timeoutsMs ?? policy!.timeoutsMs;
    const defaultMs = args.defaultMs ?? policy!.defaultMs;
    const pending = await ctx.db
      .query("approvals")
      .withIndex("by_status_expires", (q) => q.eq("status", "pending"))
      .collect();
    const due = pending.filter((a) => effectiveExpiry(a, timeouts, defaultMs) <= now);
    for (const approval of due) await expire(ctx, approval, now);
    return { expired: due.map((approval) => ({ approvalId: approval._id, site: approval.site })) };
  },
});
