/**
 * POST /telegram (http.ts) and what a button press does: approvals answered from the chat, by
 * reviewers only, once; defers; expiry; the digest. Through the fake Bot API on 127.0.0.1.
 */
import { describe, expect, test, vi } from "vitest";
import { api, internal } from "./_generated/api";
import type { Id } from "./_generated/dataModel";
import { machineId } from "./lib/alertStore";
import { findEpisode } from "./lib/push";
import { CHAT, useTelegramBackend, WEBHOOK_SECRET } from "./test.botApi";
import { item } from "./test.fixtures";
import { errorCode } from "./test.setup";

const NOW = Date.parse("2026-01-15T12:00:00Z");
const MINUTE = 60_000;
const REVIEWER = 111;
const tg = useTelegramBackend(NOW, ["laptop", "vm"]);
const { settle } = tg;
let updateId = 1000;

const outbox = () => tg.t.run((ctx) => ctx.db.query("telegramOutbox").collect());
const episode = () => tg.t.run((ctx) => findEpisode(ctx.db, "laptop", "7"));

/** A pending approval about episode 7 of laptop, its message sent (message id 1). */
async function pending(): Promise<Id<"approvals">> {
  await tg.t.mutation(api.episodes.bulkSyncEpisodes, { ...tg.laptop, cursor: 7, episodes: [item("7")] });
  const { approvalId } = await tg.t.mutation(api.approvals.create, {
    ...tg.laptop,
    agentName: "claude",
    actionType: "deploy", // 60 minutes
    priority: "normal",
    reviewers: [String(REVIEWER)],
    expiresAt: NOW + 24 * 60 * MINUTE,
    summary: "ship it",
    sourceId: "7",
  });
  await settle();
  return approvalId;
}

function post(body: unknown, secret: string | null = WEBHOOK_SECRET) {
  return tg.t.fetch("/telegram", {
    method: "POST",
    headers: { "Content-Type": "application/json", ...(secret === null ? {} : { "X-Telegram-Bot-Api-Secret-Token": secret }) },
    body: typeof body === "string" ? body : JSON.stringify(body),
  });
}

/** A button press as Telegram posts it; returns the HTTP status and the answer shown to the presser. */
async function press(data: string, from: number = REVIEWER, id = (updateId += 1)) {
  const before = tg.bot.of("answerCallbackQuery").length;
  const response = await post({
    update_id: id,
    callback_query: {
      id: `cb${id}`,
      from: { id: from, is_bot: false, first_name: "Ada", last_name: "Lovelace", username: "ada" },
      message: { message_id: 1, chat: { id: Number(CHAT) } },
      data,
    },
  });
  await settle();
  const answers = tg.bot.of("answerCallbackQuery");
  return { status: response.status, answer: answers.length > before ? answers[answers.length - 1].text : undefined };
}

describe("the webhook's door", () => {
  test("a wrong or missing secret is a 401, and so is any secret when none is set", async () => {
    const update = { update_id: 1, message: { text: "hi" } };
    expect((await post(update, "wrong")).status).toBe(401);
    expect((await post(update, null)).status).toBe(401);
    expect((await post(update)).status).toBe(200);
    delete process.env.TELEGRAM_WEBHOOK_SECRET;
    expect((await post(update, "")).status).toBe(401);
    expect((await post(update, WEBHOOK_SECRET)).status).toBe(401);
  });

  test("malformed JSON is a 400; an update that is not a button press is a 200 and nothing", async () => {
    expect((await post("{nope")).status).toBe(400);
    expect((await post({ update_id: 5, message: { text: "/start" } })).status).toBe(200);
    expect(tg.bot.requests).toEqual([]);
    expect(await tg.t.run((ctx) => ctx.db.query("telegramUpdates").collect())).toEqual([]);
  });
});

describe("approval buttons", () => {
  test("a reviewer's Approve: approved, the episode marked, the message edited, the press answered", async () => {
    const approvalId = await pending();
    expect((await episode())?.approvalStatus).toBe("pending");
    expect(await press(`a:${approvalId}`)).toEqual({ status: 200, answer: "Approved." });
    expect(await tg.t.query(api.approvals.get, { ...tg.vm, approvalId })).toMatchObject({
      status: "approved",
      resolvedBy: "Ada Lovelace",
      resolvedAt: NOW,
    });
    expect((await episode())?.approvalStatus).toBe("approved");
    expect((await outbox()).map((r) => r.key)).toEqual([`approval:${approvalId}`, `approval:${approvalId}:approved`]);
    expect(tg.bot.of("editMessageText")).toEqual([
      {
        chat_id: CHAT,
        message_id: 1,
        text: `✅ Approved by Ada Lovelace at 12:00 UTC\n🟡 Approval needed: deploy by claude on laptop\nship it\nepisode laptop:7 · expires 13:00 UTC\nid ${approvalId}`,
        reply_markup: { inline_keyboard: [] },
      },
    ]);
    expect(tg.bot.of("answerCallbackQuery")).toEqual([{ callback_query_id: `cb${updateId}`, text: "Approved." }]);
  });

  test("Reject, and a resolve from another site edits the message too", async () => {
    const first = await pending();
    expect(await press(`r:${first}`)).toMatchObject({ answer: "Rejected." });
    expect(tg.bot.of("editMessageText")[0].text).toMatch(/^❌ Rejected by Ada Lovelace at 12:00 UTC\n/);
    expect((await episode())?.approvalStatus).toBe("rejected");
    const { approvalId: second } = await tg.t.mutation(api.approvals.create, {
      ...tg.laptop,
      agentName: "claude",
      actionType: "deploy",
      priority: "normal",
      reviewers: [],
      expiresAt: NOW + 60 * MINUTE,
    });
    await settle();
    await tg.t.mutation(api.approvals.resolve, { ...tg.vm, approvalId: second, status: "approved", by: "bob" });
    await settle();
    expect(tg.bot.of("editMessageText")[1]).toMatchObject({ message_id: 2, text: expect.stringMatching(/^✅ Approved by bob at 12:00 UTC\n/) });
  });

  test("a presser who is not a reviewer may not approve, reject or defer, and nothing changes", async () => {
    const approvalId = await pending();
    const refused = "You are not a reviewer of this approval.";
    expect(await press(`a:${approvalId}`, 222)).toEqual({ status: 200, answer: refused });
    expect(await press(`r:${approvalId}`, 222)).toMatchObject({ answer: refused });
    expect(await press(`d:${approvalId}`, 222)).toMatchObject({ answer: refused });
    const after = await tg.t.query(api.approvals.get, { ...tg.laptop, approvalId });
    expect(after).toMatchObject({ status: "pending", expiresAt: NOW + 24 * 60 * MINUTE });
    expect(after?.deferCount).toBeUndefined();
    expect((await episode())?.approvalStatus).toBe("pending");
    expect(tg.bot.of("editMessageText")).toEqual([]);
  });

  test("a double press and a repeated update resolve once", async () => {
    const approvalId = await pending();
    expect(await press(`a:${approvalId}`, REVIEWER, 1)).toMatchObject({ answer: "Approved." });
    vi.setSystemTime(NOW + MINUTE);
    // Telegram retrying the same update: the same answer, nothing done again.
    expect(await press(`r:${approvalId}`, REVIEWER, 1)).toMatchObject({ status: 200, answer: "Approved." });
    expect(await press(`r:${approvalId}`, REVIEWER, 2)).toMatchObject({ answer: `Approval ${approvalId} is already approved by Ada Lovelace.` });
    expect(await tg.t.query(api.approvals.get, { ...tg.laptop, approvalId })).toMatchObject({ status: "approved", resolvedAt: NOW });
    expect(tg.bot.of("editMessageText")).toHaveLength(1);
    expect(await tg.t.run((ctx) => ctx.db.query("telegramUpdates").collect())).toHaveLength(2);
  });

  test("Defer pushes the deadline by the category's timeout, three times at most", async () => {
    const approvalId = await pending();
    expect(await press(`d:${approvalId}`)).toMatchObject({ answer: "Deferred until 14:00 UTC." });
    expect(await tg.t.query(api.approvals.get, { ...tg.laptop, approvalId })).toMatchObject({
      status: "pending",
      expiresAt: NOW + 120 * MINUTE,
      deferCount: 1,
    });
    expect(tg.bot.of("editMessageText")[0]).toMatchObject({
      message_id: 1,
      text: `⏸ Deferred until 14:00 UTC\n🟡 Approval needed: deploy by claude on laptop\nship it\nepisode laptop:7 · expires 14:00 UTC\nid ${approvalId}`,
      reply_markup: { inline_keyboard: [[expect.objectContaining({ text: "Approve" }), expect.anything(), expect.anything()]] },
    });
    expect(await tg.t.mutation(api.approvals.defer, { ...tg.vm, approvalId, by: "bob" })).toEqual({ expiresAt: NOW + 180 * MINUTE, deferCount: 2 });
    expect(await tg.t.mutation(api.approvals.defer, { ...tg.vm, approvalId, by: "bob" })).toEqual({ expiresAt: NOW + 240 * MINUTE, deferCount: 3 });
    expect(await errorCode(tg.t.mutation(api.approvals.defer, { ...tg.vm, approvalId, by: "bob" }))).toBe("CONFLICT");
    expect(await press(`d:${approvalId}`)).toMatchObject({ answer: `Approval ${approvalId} was deferred 3 times already: approve or reject it.` });
    // Deferred past its category's timeout: only the deferred deadline counts now.
    expect((await tg.t.mutation(internal.approvals.expirePending, { now: NOW + 239 * MINUTE })).expired).toEqual([]);
    expect((await tg.t.mutation(internal.approvals.expirePending, { now: NOW + 240 * MINUTE })).expired).toHaveLength(1);
  });

  test("expiry marks the episode and edits the message", async () => {
    const approvalId = await pending();
    vi.setSystemTime(NOW + 60 * MINUTE);
    expect(await errorCode(tg.t.mutation(api.approvals.resolve, { ...tg.laptop, approvalId, status: "approved", by: "ada" }))).toBe("CONFLICT");
    expect(await press(`a:${approvalId}`)).toMatchObject({ answer: `Approval ${approvalId} is expired.` });
    await tg.t.action(internal.scheduled.expirePendingApprovals, {});
    await settle();
    expect((await episode())?.approvalStatus).toBe("expired");
    expect(tg.bot.of("editMessageText")).toMatchObject([{ message_id: 1, text: expect.stringMatching(/^⌛ Expired unanswered at 13:00 UTC\n🟡/) }]);
  });

  test("an approval the policy approves sends nothing and marks its episode", async () => {
    await tg.t.mutation(api.episodes.bulkSyncEpisodes, { ...tg.laptop, cursor: 7, episodes: [item("7")] });
    const created = await tg.t.mutation(api.approvals.create, {
      ...tg.laptop,
      agentName: "claude",
      actionType: "research",
      priority: "normal",
      reviewers: [],
      expiresAt: NOW + MINUTE,
      sourceId: "7",
    });
    await settle();
    expect(created.status).toBe("approved");
    expect((await episode())?.approvalStatus).toBe("approved");
    expect(await outbox()).toEqual([]);
    expect(tg.bot.requests).toEqual([]);
  });

  test("unknown buttons and approvals, and a press from another chat", async () => {
    expect(await press("z:1")).toMatchObject({ answer: "Unknown button." });
    expect(await press("a:not-an-id")).toMatchObject({ answer: "No such approval." });
    expect(await press("s:0123456789abcdef")).toMatchObject({ answer: "This alert is no longer known." });
    const approvalId = await pending();
    const response = await post({
      update_id: 99,
      callback_query: { id: "cbx", from: { id: REVIEWER, first_name: "Ada" }, message: { chat: { id: 5 } }, data: `a:${approvalId}` },
    });
    expect(response.status).toBe(200);
    expect(await tg.t.query(api.approvals.get, { ...tg.laptop, approvalId })).toMatchObject({ status: "pending" });
  });
});

describe("alert buttons", () => {
  test("Snooze holds reminders for 1 h, Mute for a day; anyone in the chat may", async () => {
    await tg.t.run((ctx) => ctx.db.insert("healthStates", { site: "laptop", state: "down", since: NOW }));
    await tg.t.mutation(internal.alerts.sweep, {});
    const id = await machineId("silent:laptop");
    expect(await press(`s:${id}`, 999)).toMatchObject({ answer: "Snoozed until 13:00 UTC." });
    expect(await press(`m:${id}`, 999)).toMatchObject({ answer: "Muted until 12:00 UTC." });
    const [machine] = await tg.t.run((ctx) => ctx.db.query("alertMachines").collect());
    expect(machine).toMatchObject({ key: "silent:laptop", snoozedUntil: NOW + 60 * MINUTE, mutedUntil: NOW + 24 * 60 * MINUTE });
  });
});

describe("the digest", () => {
  test("queued once a day by the cron; digest:send queues the latest now", async () => {
    expect(await errorCode(tg.t.mutation(api.digest.send, tg.laptop))).toBe("NOT_FOUND");
    await tg.t.action(internal.scheduled.dailyDigest, {});
    await tg.t.action(internal.scheduled.dailyDigest, {});
    await settle();
    expect(tg.bot.of("sendMessage").map((b) => b.text)).toEqual([expect.stringMatching(/^☀️ memsync digest for 2026-01-14\n0 episodes from /)]);
    expect((await outbox()).map((r) => r.key)).toEqual(["digest:2026-01-14"]);
    vi.setSystemTime(NOW + MINUTE);
    expect(await tg.t.mutation(api.digest.send, tg.vm)).toEqual({ day: "2026-01-14", queued: true });
    await settle();
    expect((await outbox()).map((r) => r.key)).toEqual(["digest:2026-01-14", `digest:2026-01-14:sent:${NOW + MINUTE}`]);
    expect(tg.bot.of("sendMessage")).toHaveLength(2);
  });
});
