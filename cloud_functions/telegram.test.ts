/**
 * Delivery of the Telegram outbox against a fake Bot API (a real server on 127.0.0.1): each message
 * once, in order; 429s, 5xx and refusals handled; a refused token holds the queue until it is fixed;
 * quiet hours; nothing at all when Telegram is not configured; the token nowhere but in the request URL.
 */
import { describe, expect, test, vi } from "vitest";
import { api, internal } from "./_generated/api";
import type { Doc } from "./_generated/dataModel";
import { backoffMs, MAX_ATTEMPTS } from "./telegram";
import { CHAT, configureTelegram, TOKEN, useTelegramBackend } from "./test.botApi";
import { contract } from "./test.contracts";

const NOW = Date.parse("2026-01-15T12:00:00Z");
/** The answers that hold the queue (contracts/bot_api_errors.json: the token refused). */
const HOLD = contract<{ cases: { name: string; status: number; body: Record<string, unknown>; verdict: string }[] }>(
  "bot_api_errors.json",
).cases.filter((c) => c.verdict === "hold");
const tg = useTelegramBackend(NOW, ["laptop"]);
const { settle } = tg;

/** Lets `ms` pass, running what falls due. */
async function wait(ms: number) {
  vi.advanceTimersByTime(ms);
  await settle();
}
const outbox = () => tg.t.run((ctx) => ctx.db.query("telegramOutbox").collect());

const approval = (extra: Record<string, unknown> = {}) =>
  tg.t.mutation(api.approvals.create, {
    ...tg.laptop,
    agentName: "claude",
    actionType: "deploy",
    priority: "normal",
    reviewers: ["111"],
    expiresAt: NOW + 24 * 3_600_000,
    ...extra,
  });

/** A row straight into the outbox (no deliver scheduled): for delivery's own rules. */
const queueRaw = (key: string, extra: Partial<Doc<"telegramOutbox">> = {}) =>
  tg.t.run((ctx) =>
    ctx.db.insert("telegramOutbox", {
      key,
      kind: "send",
      text: key,
      severity: "critical",
      notBefore: NOW,
      createdAt: NOW,
      attempts: 0,
      ...extra,
    }),
  );

describe("delivery", () => {
  test("a pending approval goes out once, to the chat, with its buttons", async () => {
    const { approvalId } = await approval({ summary: "ship 1.2 to prod", costUsd: 1.5 });
    await settle();
    await settle(); // nothing more: a message is sent once
    expect(tg.bot.requests.map((r) => [r.token, r.method])).toEqual([[TOKEN, "sendMessage"]]);
    expect(tg.bot.of("sendMessage")[0]).toEqual({
      chat_id: CHAT,
      text: `🟡 Approval needed: deploy by claude on laptop\nship 1.2 to prod\ncost $1.50 · expires 13:00 UTC\nid ${approvalId}`,
      reply_markup: {
        inline_keyboard: [
          [
            { text: "Approve", callback_data: `a:${approvalId}` },
            { text: "Reject", callback_data: `r:${approvalId}` },
            { text: "Defer", callback_data: `d:${approvalId}` },
          ],
        ],
      },
    });
    expect(await outbox()).toMatchObject([{ key: `approval:${approvalId}`, sentAt: NOW, messageId: 1, attempts: 0 }]);
    expect(await tg.t.query(api.approvals.get, { ...tg.laptop, approvalId })).toMatchObject({ messageKey: `approval:${approvalId}` });
  });

  test("a 429 waits for retry_after, then delivers once", async () => {
    tg.bot.failNext("sendMessage", 429, { description: "Too Many Requests: retry after 3", parameters: { retry_after: 3 } });
    await approval();
    await settle();
    expect(tg.bot.of("sendMessage")).toHaveLength(1);
    expect(await outbox()).toMatchObject([{ notBefore: NOW + 3000, attempts: 0 }]);
    expect((await outbox())[0].sentAt).toBeUndefined();
    await wait(2999);
    expect(tg.bot.of("sendMessage")).toHaveLength(1);
    await wait(1);
    expect(tg.bot.of("sendMessage")).toHaveLength(2);
    await wait(60_000);
    expect(tg.bot.of("sendMessage")).toHaveLength(2);
    expect(await outbox()).toMatchObject([{ sentAt: NOW + 3000, messageId: 1 }]);
  });

  test("a 5xx or no answer retries with a doubling backoff; another 4xx gives up at once", async () => {
    expect([1, 2, 3, 8, 9, 20].map(backoffMs)).toEqual([2000, 4000, 8000, 256_000, 300_000, 300_000]);
    tg.bot.failNext("sendMessage", 502);
    tg.bot.failNext("sendMessage", 500);
    await approval();
    await settle();
    expect(await outbox()).toMatchObject([{ attempts: 1, notBefore: NOW + 2000, lastError: "telegram sendMessage: HTTP 502" }]);
    await wait(2000);
    expect(await outbox()).toMatchObject([{ attempts: 2, notBefore: NOW + 2000 + 4000 }]);
    await wait(4000);
    expect(tg.bot.of("sendMessage")).toHaveLength(3);
    expect(await outbox()).toMatchObject([{ attempts: 2, messageId: 1, sentAt: NOW + 6000 }]);

    tg.bot.failNext("sendMessage", 400, { description: "Bad Request: chat not found" });
    await approval();
    await wait(60 * 60_000);
    const refused = (await outbox())[1];
    expect(refused).toMatchObject({ lastError: "telegram sendMessage: HTTP 400 (Bad Request: chat not found)", attempts: 0 });
    expect(refused.sentAt).toBeDefined();
    expect(refused.messageId).toBeUndefined();
    expect(tg.bot.of("sendMessage")).toHaveLength(4); // never again
  });

  test("a message Telegram keeps failing is given up after MAX_ATTEMPTS", async () => {
    await queueRaw("doomed", { attempts: MAX_ATTEMPTS - 1 });
    tg.bot.failNext("sendMessage", 503);
    await tg.t.action(internal.telegram.deliver, {});
    expect(await outbox()).toMatchObject([{ key: "doomed", sentAt: NOW, lastError: `telegram sendMessage: HTTP 503; gave up after ${MAX_ATTEMPTS} tries` }]);
  });

  test("no answer at all (nothing listening) is retried, and says nothing of the URL", async () => {
    await tg.bot.stop();
    await queueRaw("offline");
    await tg.t.action(internal.telegram.deliver, {});
    expect(await outbox()).toMatchObject([{ attempts: 1, lastError: "telegram sendMessage: no answer" }]);
  });

  test("two delivers at once send each row once (a row is claimed where it is handed out)", async () => {
    for (const key of ["one", "two", "three"]) await queueRaw(key);
    await tg.paced(Promise.all([tg.t.action(internal.telegram.deliver, {}), tg.t.action(internal.telegram.deliver, {})]));
    expect(tg.bot.of("sendMessage").map((b) => b.text)).toEqual(["one", "two", "three"]);
    expect((await outbox()).map((r) => r.messageId)).toEqual([1, 2, 3]);
  });

  test("a row claimed by a deliver that died is sent once its claim lapses", async () => {
    await queueRaw("stuck", { claimedUntil: NOW + 60_000 });
    expect(await tg.t.action(internal.telegram.deliver, {})).toEqual({ sent: 0, failed: 0 });
    vi.setSystemTime(NOW + 60_000);
    expect(await tg.t.mutation(internal.telegram.housekeep, {})).toMatchObject({ kicked: true });
    await settle();
    expect(tg.bot.of("sendMessage").map((b) => b.text)).toEqual(["stuck"]);
  });

  test("the answers that hold the queue are a refused (401) and an unknown (404) token", () => {
    expect(HOLD.map((c) => c.status)).toEqual([401, 404]);
  });

  test.each(HOLD.map((c) => [c.name, c] as const))("%s: the whole queue is held, no try spent, and a later pass with a good token sends each once", async (_name, { status, body }) => {
    const logged = vi.spyOn(console, "error").mockImplementation(() => {});
    const REVOKED = "999999:revoked-token";
    tg.bot.refuseToken(REVOKED, status, body);
    process.env.TELEGRAM_BOT_TOKEN = REVOKED;
    for (const key of ["one", "two", "three"]) await queueRaw(key);

    expect(await tg.t.action(internal.telegram.deliver, {})).toEqual({ sent: 0, failed: 0 });
    await settle(); // nothing scheduled: only a person can fix the token
    expect(tg.bot.requests.map((r) => [r.token, r.method])).toEqual([[REVOKED, "sendMessage"]]); // stopped at the first
    const held = await outbox();
    expect(held.map((r) => [r.key, r.sentAt, r.attempts, r.lastError, r.claimedUntil, r.notBefore])).toEqual(
      ["one", "two", "three"].map((key) => [key, undefined, 0, undefined, undefined, NOW]), // queued, unclaimed, no try spent
    );
    const said = logged.mock.calls.map((call) => String(call[0]));
    logged.mockRestore();
    expect(said).toEqual([`telegram refused the bot token (HTTP ${status} on sendMessage): check TELEGRAM_BOT_TOKEN`]);

    // Fixed: the alerts cron's housekeeping finds the queue waiting and starts a deliver.
    process.env.TELEGRAM_BOT_TOKEN = TOKEN;
    await wait(60_000);
    expect(await tg.t.mutation(internal.telegram.housekeep, {})).toMatchObject({ kicked: true });
    await settle();
    await settle(); // nothing more: each message once
    expect(tg.bot.requests.slice(1).map((r) => [r.token, r.body.text])).toEqual([
      [TOKEN, "one"],
      [TOKEN, "two"],
      [TOKEN, "three"],
    ]);
    expect((await outbox()).map((r) => [r.key, r.sentAt, r.messageId, r.attempts])).toEqual([
      ["one", NOW + 60_000, 1, 0],
      ["two", NOW + 61_000, 2, 0], // paced a second apart (contracts/outbox_rules.json)
      ["three", NOW + 62_000, 3, 0],
    ]);
  });

  test("an edit that changes nothing ('message is not modified') is done", async () => {
    await queueRaw("base", { sentAt: NOW, messageId: 9 });
    await queueRaw("edit", { kind: "edit", refKey: "base" });
    tg.bot.failNext("editMessageText", 400, { description: "Bad Request: message is not modified: specified new message content and reply markup are exactly the same" });
    await tg.t.action(internal.telegram.deliver, {});
    expect(tg.bot.of("editMessageText")).toMatchObject([{ chat_id: CHAT, message_id: 9, text: "edit", reply_markup: { inline_keyboard: [] } }]);
    expect((await outbox())[1]).toMatchObject({ sentAt: NOW, messageId: 9 });
    expect((await outbox())[1].lastError).toBeUndefined();
  });

  test("an edit of a message that was never sent is given up", async () => {
    await queueRaw("lost", { sentAt: NOW, lastError: "telegram sendMessage: HTTP 403" });
    await queueRaw("edit", { kind: "edit", refKey: "lost" });
    await tg.t.action(internal.telegram.deliver, {});
    expect(tg.bot.requests).toEqual([]);
    expect((await outbox())[1]).toMatchObject({ sentAt: NOW, lastError: "the message to edit was never sent" });
  });
});

describe("quiet hours", () => {
  // 23:30 in Berlin (UTC+1 in January): inside 22:00-07:00, which ends at 06:00 UTC.
  const NIGHT = Date.parse("2026-01-15T22:30:00Z");
  const MORNING = Date.parse("2026-01-16T06:00:00Z");

  test("hold a warning until they end, let a critical through at once", async () => {
    configureTelegram(tg.bot, { TELEGRAM_QUIET_HOURS: "22:00-07:00", TELEGRAM_TIMEZONE: "Europe/Berlin" });
    vi.setSystemTime(NIGHT);
    const normal = await approval({ expiresAt: NIGHT + 24 * 3_600_000 });
    const urgent = await approval({ priority: "critical", expiresAt: NIGHT + 24 * 3_600_000 });
    await settle();
    expect(tg.bot.of("sendMessage").map((b) => b.text)).toEqual([expect.stringContaining("expires 23:30 UTC")]);
    const rows = await outbox();
    expect(rows.find((r) => r.key === `approval:${urgent.approvalId}`)).toMatchObject({ notBefore: NIGHT, messageId: 1 });
    expect(rows.find((r) => r.key === `approval:${normal.approvalId}`)).toMatchObject({ notBefore: MORNING });

    // Deferred while it waits: the waiting message is rewritten, not edited after it goes out.
    await tg.t.mutation(api.approvals.defer, { ...tg.laptop, approvalId: normal.approvalId, by: "ada" });
    await wait(MORNING - NIGHT - 1);
    expect(tg.bot.of("sendMessage")).toHaveLength(1);
    await wait(1);
    expect(tg.bot.of("sendMessage").map((b) => b.text)).toEqual([
      expect.any(String),
      expect.stringMatching(/^⏸ Deferred until 00:30 UTC\n🟡 Approval needed/),
    ]);
    expect(tg.bot.of("editMessageText")).toEqual([]);
  });

  test("a malformed window or zone holds nothing back, and the log says why in the hub's words", async () => {
    const logged = vi.spyOn(console, "error").mockImplementation(() => {});
    configureTelegram(tg.bot, { TELEGRAM_QUIET_HOURS: "all night", TELEGRAM_TIMEZONE: "Mars/Olympus" });
    vi.setSystemTime(NIGHT);
    await approval({ expiresAt: NIGHT + 3_600_000 });
    await settle();
    expect(tg.bot.of("sendMessage")).toHaveLength(1);
    const said = new Set(logged.mock.calls.map((call) => String(call[0])));
    logged.mockRestore();
    expect([...said].sort()).toEqual([
      "TELEGRAM_QUIET_HOURS: write quiet hours as HH:MM-HH:MM (e.g. 22:00-07:00), not 'all night'; warnings go out at once until it is fixed",
      "TELEGRAM_TIMEZONE: unknown time zone 'Mars/Olympus' (use an IANA name such as Europe/Paris); quiet hours are read in UTC until it is fixed",
    ]);
  });
});

describe("not configured", () => {
  test.each([["TELEGRAM_BOT_TOKEN"], ["TELEGRAM_CHAT_ID"]])("without %s nothing is queued and nothing fails", async (name) => {
    delete process.env[name];
    const { status } = await approval();
    expect(status).toBe("pending");
    await tg.t.mutation(internal.digest.build, { day: "2026-01-14" });
    expect(await tg.t.mutation(internal.digest.announce, { day: "2026-01-14" })).toEqual({ queued: false });
    expect(await tg.t.mutation(api.digest.send, tg.laptop)).toEqual({ day: "2026-01-14", queued: false });
    await tg.t.run((ctx) => ctx.db.insert("healthStates", { site: "laptop", state: "down", since: NOW }));
    expect((await tg.t.mutation(internal.alerts.sweep, {}))?.notices).toHaveLength(1);
    await tg.t.action(internal.telegram.deliver, {});
    await settle();
    expect(await outbox()).toEqual([]);
    expect(tg.bot.requests).toEqual([]);
  });
});

test("the token is in no stored row and no error, even when Telegram echoes it", async () => {
  tg.bot.failNext("sendMessage", 400, { description: `Bad Request: bot${TOKEN} is confused` });
  tg.bot.failNext("sendMessage", 502, { description: `upstream bot${TOKEN}` });
  await approval();
  await approval();
  await settle();
  await wait(2000);
  await tg.t.action(internal.scheduled.alerts, {});
  await tg.t.run((ctx) => ctx.db.insert("telegramOutbox", { key: "x", kind: "send", text: "x", severity: "critical", notBefore: NOW, createdAt: NOW, attempts: 0 }));
  await tg.bot.stop();
  await tg.paced(tg.t.action(internal.telegram.deliver, {})); // after the last message's pause
  const everything = await tg.t.run(async (ctx) => {
    const tables = ["telegramOutbox", "telegramUpdates", "approvals", "jobRuns", "alertMachines", "digests"] as const;
    const rows = await Promise.all(tables.map((table) => ctx.db.query(table).collect()));
    return JSON.stringify(rows);
  });
  expect(everything).toContain("Bad Request: bot<token> is confused"); // the description, with the token cut out
  expect(everything).not.toContain(TOKEN);
  expect(everything).not.toContain(TOKEN.split(":")[1]);
});
