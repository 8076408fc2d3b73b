/**
 * Telegram, from the deployment: deliver sends the outbox (lib/outbox.ts) through the Bot API, and
 * press acts on a button pressed under one of our messages (http.ts's webhook calls it).
 */
import { v } from "convex/values";
import { internal } from "./_generated/api";
import type { Doc, Id } from "./_generated/dataModel";
import { internalAction, internalMutation, type MutationCtx } from "./_generated/server";
import { mute, snooze } from "./lib/alertMachine";
import { machineById, stateOf } from "./lib/alertStore";
import { MUTE_MS, SNOOZE_MS } from "./lib/alertText";
import { closedReason, defer, settle } from "./lib/approvalFlow";
import { clockUtc } from "./lib/approvalMessage";
import { MAX_DEFERS } from "./lib/approvalPolicy";
import { parseButton, reviewerRefusal } from "./lib/buttonPresses";
import { collaboratorsOf } from "./lib/collaborators";
import { ownChats } from "./lib/routing";
import { outboxRow } from "./lib/outbox";
import { type BotReply, callBotApi, clip, keyboard, type TelegramConfig, telegramConfig } from "./lib/telegram";

const SECOND = 1000;
const DAY = 24 * 60 * 60 * SECOND;
/** How long a deliver may hold a row it took: longer than any send, short enough to recover from a crash. */
export const CLAIM_MS = 60 * SECOND;
/** The messages one claim hands out: a round (the hub's sender's limit a round; contracts/outbox_rules.json). */
export const ROUND_SIZE = 10;
/**
 * Between two messages to a chat, as the hub's sender paces (Telegram allows about one message a
 * second per chat; contracts/outbox_rules.json): each message handed out may go this long after
 * the one handed out before it to the same chat, whichever deliver has it (two delivers run at once when two
 * mutations queue at once), and its deliver waits for that moment (an action may await a timer).
 */
export const PER_CHAT_PAUSE_MS = 1000;
// Then another deliver goes on: 20 rounds, paced, take 200 s, well inside an action's time limit.
const MAX_ROUNDS = 20;
const FIRST_BACKOFF_MS = 2 * SECOND;
const MAX_BACKOFF_MS = 5 * 60 * SECOND;
/** A message Telegram keeps failing (5xx, no answer) is given up after this many tries (about 2 h). */
export const MAX_ATTEMPTS = 30;

export function backoffMs(attempts: number): number {
  return Math.min(FIRST_BACKOFF_MS * 2 ** Math.max(0, attempts - 1), MAX_BACKOFF_MS);
}

const button = v.object({ text: v.string(), data: v.string() });
const claimed = v.object({
  id: v.id("telegramOutbox"),
  kind: v.union(v.literal("send"), v.literal("edit")),
  text: v.string(),
  buttons: v.optional(v.array(v.array(button))),
  attempts: v.number(),
  refMessageId: v.optional(v.number()),
  sendAt: v.number(), // its moment: PER_CHAT_PAUSE_MS after the one handed out before it to its chat
  chatId: v.optional(v.string()), // a collaborator's chat; none: the default chat
});

/**
 * Hands out a round of the rows due now, each to one deliver with its moment to go (sendAt): a row
 * is claimed until CLAIM_MS after its moment in the same transaction that hands it out, so two
 * delivers never send the same row, and the moments of one chat's messages are a pause apart across
 * delivers (each chat is paced on its own, as Telegram limits each chat). Handed out in the order
 * of their moments. An edit waits for the message it edits; it is given up if that message never
 * went out.
 */
export const claim = internalMutation({
  args: { now: v.number() },
  returns: v.array(claimed),
  handler: async (ctx, { now }) => {
    const pacing = await ctx.db.query("telegramPacing").collect(); // one row per chat
    const moments = new Map<string | undefined, number>();
    const due = await ctx.db
      .query("telegramOutbox")
      .withIndex("by_pending", (q) => q.eq("sentAt", undefined).lte("notBefore", now))
      .take(ROUND_SIZE * 10);
    const out: (typeof claimed.type)[] = [];
    for (const row of due) {
      if (out.length >= ROUND_SIZE) break;
      if (row.claimedUntil !== undefined && row.claimedUntil > now) continue;
      let refMessageId: number | undefined;
      if (row.kind === "edit") {
        const ref = row.refKey === undefined ? null : await outboxRow(ctx.db, row.refKey);
        if (ref === null || (ref.sentAt !== undefined && ref.messageId === undefined)) {
          await ctx.db.patch(row._id, { sentAt: now, lastError: "the message to edit was never sent" });
          continue;
        }
        if (ref.sentAt === undefined) continue;
        refMessageId = ref.messageId;
      }
      const moment = moments.get(row.chatId) ?? Math.max(now, pacing.find((p) => p.chatId === row.chatId)?.nextSendAt ?? 0);
      await ctx.db.patch(row._id, { claimedUntil: moment + CLAIM_MS });
      out.push({
        id: row._id,
        kind: row.kind,
        text: row.text,
        ...(row.buttons === undefined ? {} : { buttons: row.buttons }),
        attempts: row.attempts,
        ...(refMessageId === undefined ? {} : { refMessageId }),
        sendAt: moment,
        ...(row.chatId === undefined ? {} : { chatId: row.chatId }),
      });
      moments.set(row.chatId, moment + PER_CHAT_PAUSE_MS);
    }
    for (const [chatId, nextSendAt] of moments) {
      const row = pacing.find((p) => p.chatId === chatId);
      if (row === undefined) await ctx.db.insert("telegramPacing", { nextSendAt, ...(chatId === undefined ? {} : { chatId }) });
      else await ctx.db.patch(row._id, { nextSendAt });
    }
    return out.sort((a, b) => a.sendAt - b.sendAt); // stable: a chat's own order is kept
  },
});

/** Done: sent (messageId), or given up (no messageId, and why). Never tried again. */
export const finish = internalMutation({
  args: { id: v.id("telegramOutbox"), messageId: v.optional(v.number()), error: v.optional(v.string()) },
  returns: v.null(),
  handler: async (ctx, { id, messageId, error }) => {
    await ctx.db.patch(id, { sentAt: Date.now(), messageId, lastError: error, claimedUntil: undefined });
    return null;
  },
});

/** Back to the queue, due at `notBefore` (if given); `failed` counts a try. */
export const release = internalMutation({
  args: { ids: v.array(v.id("telegramOutbox")), notBefore: v.optional(v.number()), failed: v.optional(v.string()) },
  returns: v.null(),
  handler: async (ctx, { ids, notBefore, failed }) => {
    for (const id of ids) {
      const row = await ctx.db.get(id);
      if (row === null || row.sentAt !== undefined) continue;
      await ctx.db.patch(id, {
        claimedUntil: undefined,
        ...(notBefore === undefined ? {} : { notBefore }),
        ...(failed === undefined ? {} : { attempts: row.attempts + 1, lastError: failed }),
      });
    }
    return null;
  },
});

async function send(config: TelegramConfig, row: typeof claimed.type): Promise<BotReply> {
  // Each message to its own chat (a collaborator's, or the default one), each edit to its message's.
  const chatId = row.chatId ?? config.chatId;
  if (row.kind === "edit") {
    return await callBotApi(config, "editMessageText", {
      chat_id: chatId,
      message_id: row.refMessageId,
      text: clip(row.text),
      reply_markup: keyboard(row.buttons),
    });
  }
  return await callBotApi(config, "sendMessage", {
    chat_id: chatId,
    text: clip(row.text),
    ...(row.buttons === undefined ? {} : { reply_markup: keyboard(row.buttons) }),
  });
}

/** Waits `ms`: a timer, which an action may await (tests let it pass: test.botApi.ts). */
const pause = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms));

/**
 * Sends what is due, in order, a round of ROUND_SIZE at a time, each at its moment (a pause after
 * the one before: claim). How each answer is taken: contracts/bot_api_errors.json. A 429 or 5xx saying when stops the
 * run until Telegram's retry_after; one not saying when, a 408 or no answer retries that message
 * after a backoff (2 s doubling, at most 5 min; given up after MAX_ATTEMPTS); a refused token (401,
 * 404) stops the run and gives nothing up; any other 4xx gives the message up at once, except an
 * edit that changes nothing ("message is not modified"), which is as good as done.
 */
export const deliver = internalAction({
  args: {},
  returns: v.object({ sent: v.number(), failed: v.number() }),
  handler: async (ctx): Promise<{ sent: number; failed: number }> => {
    const config = telegramConfig();
    const tally = { sent: 0, failed: 0 };
    if (config === null) return tally;
    for (let round = 0; round < MAX_ROUNDS; round += 1) {
      const rows = await ctx.runMutation(internal.telegram.claim, { now: Date.now() });
      if (rows.length === 0) return tally;
      for (const [i, row] of rows.entries()) {
        const wait = row.sendAt - Date.now();
        if (wait > 0) await pause(wait);
        const reply = await send(config, row);
        const rest = rows.slice(i + 1).map((r) => r.id);
        if (reply.outcome === "ok") {
          const result = reply.result as { message_id?: unknown } | true;
          const sentId = typeof result === "object" && typeof result?.message_id === "number" ? result.message_id : undefined;
          await ctx.runMutation(internal.telegram.finish, { id: row.id, messageId: sentId ?? row.refMessageId });
          tally.sent += 1;
        } else if (reply.outcome === "retry") {
          await ctx.runMutation(internal.telegram.release, { ids: [row.id, ...rest], notBefore: Date.now() + reply.afterMs });
          await ctx.scheduler.runAfter(reply.afterMs, internal.telegram.deliver, {});
          return tally;
        } else if (reply.outcome === "auth") {
          // Only a person can fix the token: everything stays queued (the alerts cron's housekeep tries again).
          console.error(reply.error);
          await ctx.runMutation(internal.telegram.release, { ids: [row.id, ...rest] });
          return tally;
        } else if (reply.outcome === "transient") {
          tally.failed += 1;
          if (row.attempts + 1 >= MAX_ATTEMPTS) {
            await ctx.runMutation(internal.telegram.finish, { id: row.id, error: `${reply.error}; gave up after ${MAX_ATTEMPTS} tries` });
            continue;
          }
          const wait = backoffMs(row.attempts + 1);
          await ctx.runMutation(internal.telegram.release, { ids: [row.id], notBefore: Date.now() + wait, failed: reply.error });
          await ctx.runMutation(internal.telegram.release, { ids: rest });
          await ctx.scheduler.runAfter(wait, internal.telegram.deliver, {});
          return tally;
        } else if (row.kind === "edit" && /message is not modified/i.test(reply.description)) {
          await ctx.runMutation(internal.telegram.finish, { id: row.id, messageId: row.refMessageId });
          tally.sent += 1;
        } else {
          await ctx.runMutation(internal.telegram.finish, { id: row.id, error: reply.error });
          tally.failed += 1;
        }
      }
    }
    await ctx.scheduler.runAfter(0, internal.telegram.deliver, {});
    return tally;
  },
});

type Press = { fromId: string; fromName: string; data: string; chatId?: string };

/** The answer to a press in another chat than memsync's own (a bot may be added to other chats), whatever it asks. */
export const OTHER_CHAT = "This chat does not decide memsync's approvals.";
/**
 * The answer to a press whose data asks nothing memsync knows (a button of an older memsync, of
 * another bot): answered all the same, or Telegram's client spins until it gives up.
 */
export const UNKNOWN_BUTTON = "Unknown button.";

/**
 * Why a press may not decide this approval any more (decided, or past its deadline), in the
 * hub's words (contracts/press_answers.json), or null.
 */
function closedAnswer(approval: Doc<"approvals">, now: number): string | null {
  if (closedReason(approval, now) === null) return null;
  if (approval.status === "pending") return `Approval ${approval._id} is expired.`;
  return `Approval ${approval._id} is already ${approval.status}${approval.resolvedBy ? ` by ${approval.resolvedBy}` : ""}.`;
}

/** What a button does; the text Telegram shows the presser (contracts/press_answers.json). */
async function decide(ctx: MutationCtx, press: Press, now: number): Promise<string> {
  // Our buttons are only in our chats (the default one, the collaborators'): a press from elsewhere
  // (the bot added to another group) is refused, whatever it asks.
  const config = telegramConfig();
  if (config !== null && press.chatId !== undefined && !ownChats(config.chatId, await collaboratorsOf(ctx.db)).has(press.chatId)) {
    return OTHER_CHAT; // the hub's words (contracts/press_answers.json)
  }
  const parsed = parseButton(press.data);
  if (parsed === null) return UNKNOWN_BUTTON;
  const { action, target } = parsed;
  if (action === "s" || action === "m") {
    const machine = await machineById(ctx.db, target);
    if (machine === null) return "This alert is no longer known.";
    const until = now + (action === "s" ? SNOOZE_MS : MUTE_MS);
    const state = action === "s" ? snooze(stateOf(machine), until) : mute(stateOf(machine), until);
    await ctx.db.patch(machine._id, state);
    return `${action === "s" ? "Snoozed" : "Muted"} until ${clockUtc(until)}.`;
  }
  const id: Id<"approvals"> | null = ctx.db.normalizeId("approvals", target);
  const approval = id === null ? null : await ctx.db.get(id);
  if (approval === null) return "No such approval.";
  // Approve, reject and defer are the reviewers' decisions, and those of the collaborators with
  // `approve` (contracts/button_presses.json, notify_routing.json).
  const refused = reviewerRefusal(action, press.fromId, approval.reviewers, await collaboratorsOf(ctx.db));
  if (refused !== null) return refused;
  const closed = closedAnswer(approval, now);
  if (closed !== null) return closed;
  if (action === "d") {
    if ((approval.deferCount ?? 0) >= MAX_DEFERS) return `Approval ${approval._id} was deferred ${MAX_DEFERS} times already: approve or reject it.`;
    const { expiresAt } = await defer(ctx, approval, press.fromName, now);
    return `Deferred until ${clockUtc(expiresAt)}.`;
  }
  const status = action === "a" ? "approved" : "rejected";
  await settle(ctx, approval, status, press.fromName, now);
  return action === "a" ? "Approved." : "Rejected.";
}

/**
 * A button pressed in one of our chats (http.ts): approve, reject or defer an approval (its
 * reviewers and the collaborators with `approve` only), snooze or mute an alert (anyone in the chat). Once per Telegram update: a repeated updateId (Telegram retrying its webhook) gets the
 * first answer again and changes nothing.
 */
export const press = internalMutation({
  args: { callbackId: v.string(), fromId: v.string(), fromName: v.string(), data: v.string(), updateId: v.number(), chatId: v.optional(v.string()) },
  returns: v.object({ answer: v.string() }),
  handler: async (ctx, args) => {
    const seen = await ctx.db
      .query("telegramUpdates")
      .withIndex("by_update", (q) => q.eq("updateId", args.updateId))
      .first();
    if (seen !== null) return { answer: seen.answer };
    const now = Date.now();
    const answer = await decide(ctx, args, now);
    await ctx.db.insert("telegramUpdates", { updateId: args.updateId, answer, at: now });
    return { answer };
  },
});

const KEEP_UPDATES_MS = 7 * DAY; // Telegram stops retrying an update within a day
const KEEP_SENT_MS = 30 * DAY;
const PRUNE = 200;

/**
 * The alerts cron's housekeeping: old update ids and sent messages go (their keys' times are
 * long past, so nothing queues them again), and a deliver starts if something due waits unclaimed
 * (a deliver that died mid-run leaves its claims to lapse).
 */
export const housekeep = internalMutation({
  args: { now: v.optional(v.number()) },
  returns: v.object({ pruned: v.number(), kicked: v.boolean() }),
  handler: async (ctx, args) => {
    const now = args.now ?? Date.now();
    const updates = await ctx.db
      .query("telegramUpdates")
      .withIndex("by_at", (q) => q.lt("at", now - KEEP_UPDATES_MS))
      .take(PRUNE);
    const sent = await ctx.db
      .query("telegramOutbox")
      .withIndex("by_pending", (q) => q.gte("sentAt", 0).lt("sentAt", now - KEEP_SENT_MS))
      .take(PRUNE);
    for (const row of [...updates, ...sent]) await ctx.db.delete(row._id);
    const due = await ctx.db
      .query("telegramOutbox")
      .withIndex("by_pending", (q) => q.eq("sentAt", undefined).lte("notBefore", now))
      .take(ROUND_SIZE * 10);
    const kicked = due.some((row) => row.claimedUntil === undefined || row.claimedUntil <= now);
    if (kicked && telegramConfig() !== null) await ctx.scheduler.runAfter(0, internal.telegram.deliver, {});
    return { pruned: updates.length + sent.length, kicked };
  },
});
