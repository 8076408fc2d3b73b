/**
 * Queuing a Telegram message from a mutation. Mutations cannot call the Bot API (no fetch in a
 * transaction), and a message must go out once even if the mutation that decided it is retried:
 * so the decision writes a row under a unique key, and an action (telegram.ts's deliver) sends it.
 */
import { internal } from "../_generated/api";
import type { Doc } from "../_generated/dataModel";
import type { MutationCtx, QueryCtx } from "../_generated/server";
import type { Severity } from "./alertMachine";
import { collaboratorsOf } from "./collaborators";
import { chatKey } from "./outboxKeys";
import { releaseAt } from "./quietHours";
import { chatsFor, type RouteKind } from "./routing";
import { type Button, telegramConfig } from "./telegram";

/**
 * A message to send to one chat (`chatId`: a collaborator's; left out: the default chat), or an
 * edit of the message queued under `refKey`, which goes to every chat that message went to. Keys
 * are the messages' own (lib/outboxKeys.ts); each chat's row is keyed by chatKey.
 */
export type OutboxItem = {
  key: string;
  text: string;
  buttons?: Button[][];
  severity: Severity;
} & ({ kind: "send"; chatId?: string } | { kind: "edit"; refKey: string });

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

/** The rows a message was queued as, one per chat: its key's in the default chat, `key@chat` in a collaborator's. */
async function chatRows(db: QueryCtx["db"], key: string): Promise<Doc<"telegramOutbox">[]> {
  const inChats = await db
    .query("telegramOutbox")
    .withIndex("by_key", (q) => q.gte("key", `${key}@`).lt("key", `${key}A`)) // "A" follows "@"
    .collect();
  const own = await outboxRow(db, key);
  return [...(own === null ? [] : [own]), ...inChats].filter((row) => row.kind === "send");
}

/**
 * Queues `item` unless its key was queued before in its chat; an edit, in every chat its message
 * went to, each editing that chat's message. Has a deliver run when it is due; nothing when
 * Telegram is not configured. Returns whether anything was queued.
 */
export async function enqueue(ctx: MutationCtx, item: OutboxItem, now = Date.now()): Promise<boolean> {
  if (telegramConfig() === null) return false;
  if (item.kind === "send") return await enqueueOne(ctx, item, chatKey(item.key, item.chatId), item.chatId, undefined, now);
  let queued = false;
  for (const ref of await chatRows(ctx.db, item.refKey)) {
    const edits = chatKey(item.refKey, ref.chatId);
    queued = (await enqueueOne(ctx, item, chatKey(item.key, ref.chatId), ref.chatId, edits, now)) || queued;
  }
  return queued;
}

/**
 * `item` to each chat that hears a message of `route` (lib/routing.ts: the default chat, then the
 * collaborators' that asked for it); whether anything was queued.
 */
export async function enqueueRouted(
  ctx: MutationCtx,
  item: Omit<OutboxItem & { kind: "send" }, "chatId">,
  route: { kind: RouteKind; name: string | null },
  now = Date.now(),
): Promise<boolean> {
  const config = telegramConfig();
  if (config === null) return false;
  let queued = false;
  for (const chat of chatsFor(route.kind, route.name, config.chatId, await collaboratorsOf(ctx.db))) {
    const chatId = chat === config.chatId ? undefined : chat;
    queued = (await enqueue(ctx, { ...item, ...(chatId === undefined ? {} : { chatId }) }, now)) || queued;
  }
  return queued;
}

/**
 * One row: `item` under `key` (its chat's), editing the message of key `refKey` if given. A warning
 * waits out the quiet hours; an edit never does (it notifies nobody). An edit of a message still
 * waiting in the queue rewrites that message instead, so the message goes out once, as it now reads.
 */
async function enqueueOne(ctx: MutationCtx, item: OutboxItem, key: string, chatId: string | undefined, refKey: string | undefined, now: number): Promise<boolean> {
  const config = telegramConfig();
  if (config === null || (await outboxRow(ctx.db, key)) !== null) return false;
  const buttons = item.buttons === undefined ? {} : { buttons: item.buttons };
  const chat = chatId === undefined ? {} : { chatId };
  if (refKey !== undefined) {
    const ref = await outboxRow(ctx.db, refKey);
    if (ref === null) return false;
    const inFlight = ref.claimedUntil !== undefined && ref.claimedUntil > now;
    if (ref.sentAt === undefined && !inFlight) {
      await ctx.db.patch(ref._id, { text: item.text, buttons: item.buttons });
      await ctx.db.insert("telegramOutbox", {
        key,
        kind: "edit",
        refKey,
        text: item.text,
        ...buttons,
        ...chat,
        severity: item.severity,
        notBefore: now,
        createdAt: now,
        sentAt: now,
        attempts: 0,
      });
      return true;
    }
    await supersede(ctx, refKey, now);
  }
  const notBefore = refKey !== undefined ? now : releaseAt(now, item.severity, config.quietHours, config.timeZone);
  await ctx.db.insert("telegramOutbox", {
    key,
    kind: refKey === undefined ? "send" : "edit",
    ...(refKey === undefined ? {} : { refKey }),
    text: item.text,
    ...buttons,
    ...chat,
    severity: item.severity,
    notBefore,
    createdAt: now,
    attempts: 0,
  });
  await ctx.scheduler.runAfter(notBefore - now, internal.telegram.deliver, {});
  return true;
}
