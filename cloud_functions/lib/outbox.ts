/**
 * Queuing a Telegram message from a mutation. Mutations cannot call the Bot API (no fetch in a
 * transaction), and a message must go out once even if the mutation that decided it is retried:
 * so the decision writes a row under a unique key, and an action (telegram.ts's deliver) sends it.
 */
import { internal } from "../_generated/api";
import type { Doc } from "../_generated/dataModel";
import type { MutationCtx, QueryCtx } from "../_generated/server";
import type { Severity } from "./alertMachine";
import { releaseAt } from "./quietHours";
import { type Button, telegramConfig } from "./telegram";

export type OutboxItem = {
  key: string;
  text: string;
  buttons?: Button[][];
  severity: Severity;
} & ({ kind: "send" } | { kind: "edit"; refKey: string });

export async function outboxRow(db: QueryCtx["db"], key: string): Promise<Doc<"telegramOutbox"> | null> {
  return await db
    .query("telegramOutbox")
    .withIndex("by_key", (q) => q.eq("key", key))
    .unique();
}

/**
 * Earlier edits of one message still waiting are dropped: sent after the newest (a retry after a
 * failure), they would put back what it replaced.
 */
async function supersede(ctx: MutationCtx, refKey: string, now: number): Promise<void> {
  const waiting = await ctx.db
    .query("telegramOutbox")
    .withIndex("by_pending", (q) => q.eq("sentAt", undefined))
    .collect();
  for (const row of waiting) {
    const inFlight = row.claimedUntil !== undefined && row.claimedUntil > now;
    if (row.kind === "edit" && row.refKey === refKey && !inFlight) {
      await ctx.db.patch(row._id, { sentAt: now, lastError: "superseded by a later edit" });
    }
  }
}

/**
 * Queues `item` unless its key was queued before, and has a deliver run when it is due. Nothing
 * when Telegram is not configured. A warning waits out the quiet hours; an edit never does (it
 * notifies nobody). An edit of a message still waiting in the queue rewrites that message instead,
 * so the message goes out once, as it now reads. Returns whether anything was queued.
 */
export async function enqueue(ctx: MutationCtx, item: OutboxItem, now = Date.now()): Promise<boolean> {
  const config = telegramConfig();
  if (config === null || (await outboxRow(ctx.db, item.key)) !== null) return false;
  const buttons = item.buttons === undefined ? {} : { buttons: item.buttons };
  if (item.kind === "edit") {
    const ref = await outboxRow(ctx.db, item.refKey);
    if (ref === null) return false;
    const inFlight = ref.claimedUntil !== undefined && ref.claimedUntil > now;
    if (ref.sentAt === undefined && !inFlight) {
      await ctx.db.patch(ref._id, { text: item.text, buttons: item.buttons });
      await ctx.db.insert("telegramOutbox", {
        key: item.key,
        kind: "edit",
        refKey: item.refKey,
        text: item.text,
        ...buttons,
        severity: item.severity,
        notBefore: now,
        createdAt: now,
        sentAt: now,
        attempts: 0,
      });
      return true;
    }
  }
  if (item.kind === "edit") await supersede(ctx, item.refKey, now);
  const notBefore = item.kind === "edit" ? now : releaseAt(now, item.severity, config.quietHours, config.timeZone);
  await ctx.db.insert("telegramOutbox", {
    key: item.key,
    kind: item.kind,
    ...(item.kind === "edit" ? { refKey: item.refKey } : {}),
    text: item.text,
    ...buttons,
    severity: item.severity,
    notBefore,
    createdAt: now,
    attempts: 0,
  });
  await ctx.scheduler.runAfter(notBefore - now, internal.telegram.deliver, {});
  return true;
}
