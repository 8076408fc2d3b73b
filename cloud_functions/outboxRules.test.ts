/**
 * The Telegram outbox's rules (contracts/outbox_rules.json) and keys (contracts/outbox_keys.json),
 * as tests/contracts/test_outbox_rules.py holds the hub's to them: the key each message is queued under, the
 * pacing (a pause between two messages, a round's size) against the fake Bot API under fake timers,
 * how an edit is queued (lib/outbox.ts's enqueue, then deliver), the backoff by tries failed, and
 * the tries before a message is given up (deliver's giving up at MAX_ATTEMPTS is telegram.test.ts's).
 */
import { describe, expect, test, vi } from "vitest";
import { internal } from "./_generated/api";
import { enqueue, type OutboxItem } from "./lib/outbox";
import { alertKey, approvalEditKey, approvalKey, chatKey, digestKey, digestSentKey } from "./lib/outboxKeys";
import { backoffMs, MAX_ATTEMPTS, PER_CHAT_PAUSE_MS, ROUND_SIZE } from "./telegram";
import { CHAT, useTelegramBackend } from "./test.botApi";
import { contract } from "./test.contracts";

type KeyCase = Record<string, unknown> & { message: string; key: string };
const KEYS = contract<{ cases: KeyCase[] }>("outbox_keys.json").cases;
const KEYED: Record<string, (c: KeyCase) => string> = {
  alert: (c) => alertKey(c.subject as string, c.kind as string, c.spell as number, c.reminders as number),
  approval: (c) => approvalKey(c.approval as string),
  "approval edit": (c) => approvalEditKey(c.approval as string, c.status as string, c.defer_count as number),
  digest: (c) => digestKey(c.day as string),
  "digest asked for": (c) => digestSentKey(c.day as string, c.at as number),
  "in a chat": (c) => chatKey(c.of as string, (c.chat as string | null) ?? undefined),
};

describe("each message is queued under the contract's key (contracts/outbox_keys.json)", () => {
  test.each(KEYS.map((c) => [c.key, c] as const))("%s", (key, c) => {
    expect(KEYED[c.message](c)).toBe(key);
  });

  test("every message of the outbox has key cases", () => {
    expect(new Set(KEYS.map((c) => c.message))).toEqual(new Set(Object.keys(KEYED)));
  });
});

const RULES = contract<{ max_attempts: number; hub_jitter_ms: number; backoff_ms: { tries: number; wait_ms: number }[] }>("outbox_rules.json");

describe("the outbox's retry rules", () => {
  test.each(RULES.backoff_ms.map((c) => [c.tries, c.wait_ms] as const))("after %i failed tries a message waits %i ms", (tries, waitMs) => {
    expect(backoffMs(tries)).toBe(waitMs);
  });

  test("a message Telegram keeps failing is given up after the contract's tries", () => {
    expect(MAX_ATTEMPTS).toBe(RULES.max_attempts);
  });
});

type Step = { queue?: string; chat?: string; edit?: string; of?: string; text?: string; queued?: boolean; deliver?: boolean; fail?: number; wait_ms?: number };
const PACING = contract<{
  per_chat_pause_ms: number;
  round_size: number;
  edits: { name: string; steps: Step[]; telegram: [string, string][]; chats?: string[] }[];
  two_chats: { queue: { key: string; chat?: string }[]; moments_ms: Record<string, number> };
}>("outbox_rules.json");
const NOW = Date.parse("2026-01-15T12:00:00Z");
const tg = useTelegramBackend(NOW, ["laptop"]);
const queue = (item: OutboxItem) => tg.t.run((ctx) => enqueue(ctx, item, Date.now()));
/** What is due goes: the delivers the queue scheduled, then one more, with its pauses let pass. */
async function deliverDue() {
  await tg.settle();
  await tg.paced(tg.t.action(internal.telegram.deliver, {}));
  await tg.settle();
}

describe("pacing", () => {
  test("the pause and the round's size are the contract's", () => {
    expect([PER_CHAT_PAUSE_MS, ROUND_SIZE]).toEqual([PACING.per_chat_pause_ms, PACING.round_size]);
  });

  test("a claim hands out a round at most", async () => {
    for (let n = 0; n < ROUND_SIZE + 2; n += 1) await queue({ kind: "send", key: `m${n}`, text: `message ${n}`, severity: "critical" });
    expect(await tg.t.mutation(internal.telegram.claim, { now: NOW })).toHaveLength(ROUND_SIZE);
    expect(await tg.t.mutation(internal.telegram.claim, { now: NOW })).toHaveLength(2);
  });

  test("messages go a pause apart, from one round to the next and whichever deliver sends them", async () => {
    // Each message queued has a deliver run (lib/outbox.ts's enqueue): twelve at once, two of them
    // with a round to send, paced together.
    for (let n = 0; n < ROUND_SIZE + 2; n += 1) await queue({ kind: "send", key: `m${n}`, text: `message ${n}`, severity: "critical" });
    await deliverDue();
    const sent = tg.bot.requests.filter((r) => r.method === "sendMessage");
    expect(sent.map((r) => r.body.text)).toEqual(Array.from({ length: ROUND_SIZE + 2 }, (_, n) => `message ${n}`));
    expect(sent[0].at).toBe(NOW);
    expect(sent.slice(1).map((r, i) => r.at - sent[i].at)).toEqual(Array(ROUND_SIZE + 1).fill(PER_CHAT_PAUSE_MS));
  });
});

describe("an edit is queued as the contract says", () => {
  test.each(PACING.edits.map((c) => [c.name, c] as const))("%s", async (_name, c) => {
    for (const [i, step] of c.steps.entries()) {
      if (step.wait_ms !== undefined) {
        vi.advanceTimersByTime(step.wait_ms);
        await tg.settle();
      } else if (step.deliver) {
        for (let n = 0; n < (step.fail ?? 0); n += 1) tg.bot.failNext(null, 503);
        await deliverDue();
      } else {
        const item: OutboxItem =
          step.edit !== undefined
            ? { kind: "edit", key: step.edit, refKey: step.of!, text: step.text!, severity: "critical" }
            : { kind: "send", key: step.queue!, text: step.text!, severity: "critical", ...(step.chat === undefined ? {} : { chatId: step.chat }) };
        expect(await queue(item), `step ${i}`).toBe(step.queued ?? true);
      }
    }
    expect(tg.bot.requests.filter((r) => r.ok).map((r) => [r.method, r.body.text])).toEqual(c.telegram);
    if (c.chats !== undefined) {
      expect(tg.bot.requests.filter((r) => r.ok).map((r) => String(r.body.chat_id))).toEqual(c.chats.map((chat) => (chat === "default" ? CHAT : chat)));
    }
  });
});

test("each chat is paced on its own (contracts/outbox_rules.json's two_chats)", async () => {
  for (const q of PACING.two_chats.queue) {
    await queue({ kind: "send", key: q.key, text: q.key, severity: "critical", ...(q.chat === undefined ? {} : { chatId: q.chat }) });
  }
  const handed = await tg.t.mutation(internal.telegram.claim, { now: NOW });
  const keys = await tg.t.run(async (ctx) => Promise.all(handed.map(async (h) => (await ctx.db.get(h.id))!.key)));
  expect(Object.fromEntries(handed.map((h, i) => [keys[i], h.sendAt - NOW]))).toEqual(PACING.two_chats.moments_ms);
  expect(handed.map((h) => h.sendAt)).toEqual([...handed.map((h) => h.sendAt)].sort((a, b) => a - b));
});
