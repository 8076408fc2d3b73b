/**
 * What happens to a pending approval, however it is asked for (a site's call, a Telegram button,
 * the expiry cron): the approval, the episode it is about, the tasks waiting on it
 * (lib/taskFlow.ts) and its Telegram message move together, in the caller's one transaction.
 */
import type { Doc } from "../_generated/dataModel";
import type { MutationCtx } from "../_generated/server";
import { deferredExpiry, MAX_DEFERS } from "./approvalPolicy";
import { approvalButtons, deferredText, expiredText, resolvedText } from "./approvalMessage";
import { ChangeSequence } from "./changes";
import { isMemsync } from "./episodeView";
import { fail } from "./errors";
import { enqueue } from "./outbox";
import { approvalEditKey } from "./outboxKeys";
import { approvalTimeouts, deploymentExpiry } from "./settings";
import { followTasks } from "./taskFlow";

type Approval = Doc<"approvals">;
type Status = Approval["status"];

/** The episode's approvalStatus follows its approval's (when the episode has reached the backbone). */
export async function markEpisode(ctx: MutationCtx, approval: Approval, status: Status): Promise<void> {
  const { sourceSite, sourceId } = approval;
  if (sourceSite === undefined || sourceId === undefined) return;
  const episode = await ctx.db
    .query("episodes")
    .withIndex("by_site_source", (q) => q.eq("sourceSite", sourceSite).eq("sourceId", sourceId))
    .unique();
  // A seed document not adopted yet is not memsync's to mark (adopt.ts).
  if (episode === null || !isMemsync(episode) || episode.approvalStatus === status) return;
  // A change in the feed (not of the content): search indexes rewrite the payload, embed nothing.
  const sequence = new ChangeSequence(ctx.db);
  await ctx.db.patch(episode._id, { approvalStatus: status, changeSeq: await sequence.next() });
  await sequence.save();
}

/** Why `approval` can no longer be answered, or null while it can. */
export function closedReason(approval: Approval, now: number): string | null {
  if (approval.status !== "pending") {
    return `already ${approval.status}${approval.resolvedBy ? ` by ${approval.resolvedBy}` : ""}`;
  }
  // Past its deadline but not yet swept by the cron: as good as expired.
  if (deploymentExpiry(approval) <= now) return "already expired";
  return null;
}

/** Approves or rejects a pending approval (CONFLICT when it is settled or past its deadline). */
export async function settle(ctx: MutationCtx, approval: Approval, status: "approved" | "rejected", by: string, now: number) {
  const closed = closedReason(approval, now);
  if (closed !== null) fail("CONFLICT", `approval is ${closed}`);
  await ctx.db.patch(approval._id, { status, resolvedAt: now, resolvedBy: by });
  await markEpisode(ctx, approval, status);
  await followTasks(ctx, approval._id, status, now);
  if (approval.messageKey !== undefined) {
    await enqueue(
      ctx,
      { kind: "edit", key: approvalEditKey(approval._id, status, approval.deferCount ?? 0), refKey: approval.messageKey, text: resolvedText(approval, status, by, now), severity: "critical" },
      now,
    );
  }
}

/**
 * Gives a pending approval another category timeout from its current deadline, at most MAX_DEFERS
 * times (CONFLICT after, or once it is settled or past its deadline).
 */
export async function defer(ctx: MutationCtx, approval: Approval, by: string, now: number) {
  const closed = closedReason(approval, now);
  if (closed !== null) fail("CONFLICT", `approval is ${closed}`);
  // The deployment's timeouts (lib/settings.ts), by the policy both servers share (deferredExpiry).
  const { timeoutsMs, defaultMs } = approvalTimeouts();
  const expiresAt = deferredExpiry(approval, now, timeoutsMs, defaultMs);
  if (expiresAt === null) fail("CONFLICT", `approval was deferred ${MAX_DEFERS} times already`);
  const deferCount = (approval.deferCount ?? 0) + 1;
  await ctx.db.patch(approval._id, { expiresAt, deferCount });
  await followTasks(ctx, approval._id, "deferred", now);
  if (approval.messageKey !== undefined) {
    const deferred = { ...approval, expiresAt, deferCount };
    await enqueue(
      ctx,
      {
        kind: "edit",
        key: approvalEditKey(approval._id, "pending", deferCount),
        refKey: approval.messageKey,
        text: deferredText(deferred),
        buttons: approvalButtons(approval._id),
        severity: "critical",
      },
      now,
    );
  }
  return { expiresAt, deferCount };
}

/** Expires a pending approval nobody answered in time. */
export async function expire(ctx: MutationCtx, approval: Approval, now: number): Promise<void> {
  await ctx.db.patch(approval._id, { status: "expired", resolvedAt: now });
  await markEpisode(ctx, approval, "expired");
  await followTasks(ctx, approval._id, "expired", now);
  if (approval.messageKey !== undefined) {
    await enqueue(
      ctx,
      { kind: "edit", key: approvalEditKey(approval._id, "expired", approval.deferCount ?? 0), refKey: approval.messageKey, text: expiredText(approval, now), severity: "critical" },
      now,
    );
  }
}
