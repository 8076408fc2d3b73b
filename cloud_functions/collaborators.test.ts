/**
 * Collaborators end to end on Convex (the real functions under convex-test, Telegram a fake Bot API
 * on 127.0.0.1): two collaborators with different notifyOn beside the default chat; an alert of
 * each kind the deployment says (the fleet's: silent, offline, quarantine, paused, expiring; a
 * daemon's own backbone and agentdb alerts go through its own outbox: tests/e2e/test_collaborators.py),
 * approvals of two categories and a digest; each chat receives exactly what its notifyOn asks for,
 * nothing more. A press by someone who is no reviewer is refused, by a collaborator with approve
 * accepted, and the decision edits the approval's message in every chat it went to.
 */
import { expect, test, vi } from "vitest";
import { api, internal } from "./_generated/api";
import { CHAT, useTelegramBackend, WEBHOOK_SECRET } from "./test.botApi";
import { item } from "./test.fixtures";

const NOW = Date.parse("2026-01-15T12:00:00Z");
const MINUTE = 60_000;
const HOUR = 60 * MINUTE;
const ADA = "111"; // her private chat with the bot: its id is her user id
const BOB_CHAT = "-100222"; // a group: Bob is known by his user id
const BOB = "222";
const REVIEWER = "42";
const tg = useTelegramBackend(NOW, ["laptop"]);

const COLLABORATORS = [
  { name: "ada", role: "lead", telegramChatId: ADA, permissions: ["approve"], notifyOn: ["offline", "approval:financial", "digest"] },
  { name: "bob", role: "ops", telegramChatId: BOB_CHAT, telegramUserId: BOB, permissions: [], notifyOn: ["silent", "quarantine", "paused", "approvals"] },
];

/** The first line of each message sent to `chat`, in order. */
const heard = (chat: string) =>
  tg.bot
    .of("sendMessage")
    .filter((b) => String(b.chat_id) === chat)
    .map((b) => String(b.text).split("\n")[0]);

async function press(chat: string, fromId: string, data: string, updateId: number, messageId = 1): Promise<string | undefined> {
  const before = tg.bot.of("answerCallbackQuery").length;
  const response = await tg.t.fetch("/telegram", {
    method: "POST",
    headers: { "Content-Type": "application/json", "X-Telegram-Bot-Api-Secret-Token": WEBHOOK_SECRET },
    body: JSON.stringify({
      update_id: updateId,
      callback_query: { id: `cb${updateId}`, from: { id: Number(fromId), first_name: `user ${fromId}` }, message: { message_id: messageId, chat: { id: Number(chat) } }, data },
    }),
  });
  await tg.settle();
  expect(response.status).toBe(200);
  const answers = tg.bot.of("answerCallbackQuery");
  return answers.length > before ? String(answers[answers.length - 1].text) : undefined;
}

test("each chat hears what its notifyOn asks for, nothing more; a collaborator with approve decides, others are refused", async () => {
  await tg.t.mutation(internal.collaborators.replace, { collaborators: COLLABORATORS });
  // The site synced once, its daemon says it is paused (quota) with rows quarantined and a backlog.
  await tg.t.mutation(api.episodes.bulkSyncEpisodes, { ...tg.laptop, cursor: 1, episodes: [item("1")] });
  await tg.t.mutation(api.agents.heartbeatSite, {
    ...tg.laptop, version: "0.1.0", host: "laptop.lan", pid: 1, lagS: null, backlog: 5, indexState: "paused", quarantined: 2, conflicts: 0,
  });
  // Two hours later its daemon is gone and it has not synced: the crons see it.
  vi.setSystemTime(NOW + 2 * HOUR);
  await tg.t.mutation(internal.agents.markStale, {});
  await tg.t.mutation(internal.health.syncHealthAlert, {});
  const ask = (actionType: string) =>
    tg.t.mutation(api.approvals.create, {
      ...tg.laptop, agentName: "claude", actionType, priority: "high", reviewers: [REVIEWER], expiresAt: NOW + 2 * HOUR + 15 * MINUTE, summary: `do ${actionType}`,
    });
  const financial = (await ask("financial")).approvalId;
  const destructive = (await ask("destructive")).approvalId;
  await tg.t.mutation(internal.alerts.sweep, {});
  await tg.settle();
  vi.setSystemTime(NOW + 2 * HOUR + 11 * MINUTE); // paused past its grace; both approvals expire in 4 min
  await tg.t.mutation(internal.alerts.sweep, {});
  await tg.t.mutation(internal.digest.build, { day: "2026-01-15", now: Date.now() });
  await tg.t.mutation(api.digest.send, { ...tg.laptop });
  await tg.settle();

  const approvalLine = (category: string) => `🟡 Approval needed: ${category} by claude on laptop`;
  const everything = [
    approvalLine("financial"),
    approvalLine("destructive"),
    "🟠 laptop has not synced for 2 h",
    "🔴 laptop daemon silent for 2 h",
    "🟠 laptop 2 rows quarantined (memsync quarantine list)",
    "🟠 laptop search indexing paused: the embedding quota is exhausted",
    `⏳ approval ${financial} (financial by claude on laptop) expires in 4 min, unanswered`,
    `⏳ approval ${destructive} (destructive by claude on laptop) expires in 4 min, unanswered`,
    "☀️ memsync digest for 2026-01-15",
  ];
  expect(heard(CHAT).sort()).toEqual([...everything].sort());
  expect(heard(ADA).sort()).toEqual([approvalLine("financial"), "🔴 laptop daemon silent for 2 h", "☀️ memsync digest for 2026-01-15"].sort());
  expect(heard(BOB_CHAT).sort()).toEqual(
    [
      approvalLine("financial"),
      approvalLine("destructive"),
      "🟠 laptop has not synced for 2 h",
      "🟠 laptop 2 rows quarantined (memsync quarantine list)",
      "🟠 laptop search indexing paused: the embedding quota is exhausted",
    ].sort(),
  );
  expect(new Set(tg.bot.of("sendMessage").map((b) => String(b.chat_id)))).toEqual(new Set([CHAT, ADA, BOB_CHAT]));

  // Bob hears approvals but may not decide them; nor may a stranger; nor counts a chat not ours.
  const data = `a:${financial}`;
  expect(await press(BOB_CHAT, BOB, data, 1)).toBe("You are not a reviewer of this approval.");
  expect(await press(CHAT, "7", data, 2)).toBe("You are not a reviewer of this approval.");
  expect(await press("-100999", ADA, data, 3)).toBe("This chat does not decide memsync's approvals.");
  expect(await tg.t.run((ctx) => ctx.db.get(financial))).toMatchObject({ status: "pending" });
  // Ada, a collaborator with approve, decides from her own chat; the reviewer the approval lists, from the default chat.
  expect(await press(ADA, ADA, data, 4)).toBe("Approved.");
  expect(await tg.t.run((ctx) => ctx.db.get(financial))).toMatchObject({ status: "approved", resolvedBy: `user ${ADA}` });
  expect(await press(CHAT, REVIEWER, `r:${destructive}`, 5)).toBe("Rejected.");

  // Each decision edits the approval's message in every chat it went to, in that chat.
  const sentIds = (category: string) =>
    tg.bot
      .ok("sendMessage")
      .filter((r) => String(r.body.text).startsWith(approvalLine(category)))
      .map((r) => [String(r.body.chat_id), r.messageId] as const);
  const edited = (prefix: string) =>
    tg.bot
      .of("editMessageText")
      .filter((b) => String(b.text).startsWith(prefix))
      .map((b) => [String(b.chat_id), b.message_id] as const);
  expect(edited("✅ Approved by user 111").sort()).toEqual(sentIds("financial").sort());
  expect(sentIds("financial").map(([chat]) => chat).sort()).toEqual([CHAT, ADA, BOB_CHAT].sort());
  expect(edited("❌ Rejected by user 42").sort()).toEqual(sentIds("destructive").sort());
  expect(sentIds("destructive").map(([chat]) => chat).sort()).toEqual([CHAT, BOB_CHAT].sort());
});
