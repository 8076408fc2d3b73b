/** The alerts cron on Convex: the fleet's signals, each alert said once, through the fake Bot API. */
import { describe, expect, test, vi } from "vitest";
import { api, internal } from "./_generated/api";
import { machineId } from "./lib/alertStore";
import { useTelegramBackend } from "./test.botApi";
import { item } from "./test.fixtures";

const NOW = Date.parse("2026-01-15T12:00:00Z");
const MINUTE = 60_000;
const HOUR = 60 * MINUTE;
const tg = useTelegramBackend(NOW, ["laptop"]);
const { settle } = tg;

/** The cron, `ms` after NOW, with what it queued delivered. */
async function cronAt(ms: number) {
  vi.setSystemTime(NOW + ms);
  await tg.t.action(internal.scheduled.alerts, {});
  await settle();
}
const sent = () => tg.bot.of("sendMessage").map((b) => b.text);
const beat = (indexState: string, backlog: number | null = null) =>
  tg.t.mutation(api.agents.heartbeatSite, {
    ...tg.laptop,
    version: "0.1.0",
    host: "laptop.lan",
    pid: 1,
    lagS: null,
    backlog,
    indexState,
    quarantined: 0,
    conflicts: 0,
  });

describe("alerts", () => {
  test("a silent site: one alert with Snooze and Mute, once; one recovery with the duration and episodes caught up", async () => {
    await tg.t.mutation(api.episodes.bulkSyncEpisodes, { ...tg.laptop, cursor: 1, episodes: [item("1")] });
    vi.setSystemTime(NOW + 2 * HOUR);
    await tg.t.mutation(internal.health.syncHealthAlert, {});
    await cronAt(2 * HOUR);
    await cronAt(2 * HOUR + MINUTE);
    expect(sent()).toEqual(["🟠 laptop has not synced for 2 h"]);
    const id = await machineId("silent:laptop");
    expect(tg.bot.of("sendMessage")[0].reply_markup).toEqual({
      inline_keyboard: [
        [
          { text: "Snooze 1 h", callback_data: `s:${id}` },
          { text: "Mute 1 day", callback_data: `m:${id}` },
        ],
      ],
    });

    vi.setSystemTime(NOW + 3 * HOUR + 30 * MINUTE);
    await tg.t.mutation(api.episodes.bulkSyncEpisodes, { ...tg.laptop, cursor: 4, episodes: [item("2"), item("3"), item("4")] });
    await tg.t.mutation(internal.health.syncHealthAlert, {});
    await cronAt(3 * HOUR + 30 * MINUTE);
    await cronAt(3 * HOUR + 31 * MINUTE);
    // Silent from its last sync (NOW) to the recovery: 3 h 30 min, not the 1 h 30 min since the alert.
    expect(sent()).toEqual(["🟠 laptop has not synced for 2 h", "✅ laptop recovered after 3 h 30 min, 3 episodes caught up"]);
    expect(tg.bot.of("sendMessage")[1].reply_markup).toBeUndefined();
  });

  test("an idle site (online, no backlog) judged down is quiet, not silent; with a backlog it is silent", async () => {
    await tg.t.mutation(api.episodes.bulkSyncEpisodes, { ...tg.laptop, cursor: 1, episodes: [item("1")] });
    vi.setSystemTime(NOW + 2 * HOUR);
    await tg.t.mutation(internal.health.syncHealthAlert, {});
    await beat("ready", 0);
    await cronAt(2 * HOUR);
    expect(sent()).toEqual([]);
    await beat("ready", 40);
    await cronAt(2 * HOUR + MINUTE);
    expect(sent()).toEqual(["🟠 laptop has not synced for 2 h 1 min"]);
  });

  test("a daemon gone offline is critical; reminders after 1 h, not while snoozed", async () => {
    await beat("ready");
    vi.setSystemTime(NOW + 4 * MINUTE);
    await tg.t.mutation(internal.agents.markStale, {});
    await cronAt(4 * MINUTE);
    expect(sent()).toEqual(["🔴 laptop daemon silent for 4 min"]);
    await cronAt(HOUR + 4 * MINUTE);
    // Down since its last heartbeat (NOW), as the text says, not since the alert job first saw it.
    expect(sent()[1]).toBe("⏰ still: laptop daemon silent for 1 h 4 min (down 1 h 4 min)");
    const id = await machineId("offline:laptop");
    await tg.t.run(async (ctx) => {
      const machine = await ctx.db.query("alertMachines").withIndex("by_short_id", (q) => q.eq("id", id)).unique();
      await ctx.db.patch(machine!._id, { snoozedUntil: NOW + 10 * HOUR });
    });
    await cronAt(4 * HOUR + 4 * MINUTE);
    expect(sent()).toHaveLength(2);
    await cronAt(10 * HOUR);
    expect(sent()[2]).toBe("⏰ still: laptop daemon silent for 10 h (down 10 h)");
  });

  test("flapping inside the grace says nothing (paused: 10 minutes)", async () => {
    await beat("paused");
    await cronAt(0);
    await cronAt(5 * MINUTE);
    await beat("ready");
    await cronAt(6 * MINUTE);
    await beat("paused");
    await cronAt(7 * MINUTE);
    await beat("paused");
    await cronAt(16 * MINUTE);
    expect(sent()).toEqual([]);
    await beat("paused");
    await cronAt(17 * MINUTE);
    expect(sent()).toEqual(["🟠 laptop search indexing paused: the embedding quota is exhausted"]);
  });

  test("an approval about to expire unanswered is said once, with Defer; its machine goes with it", async () => {
    const { approvalId } = await tg.t.mutation(api.approvals.create, {
      ...tg.laptop,
      agentName: "claude",
      actionType: "destructive", // 30 minutes
      priority: "high",
      reviewers: [],
      expiresAt: NOW + 24 * HOUR,
    });
    await settle();
    await cronAt(19 * MINUTE);
    expect(sent()).toHaveLength(1); // the approval itself
    await cronAt(20 * MINUTE);
    await cronAt(21 * MINUTE);
    expect(sent()[1]).toBe(`⏳ approval ${approvalId} (destructive by claude on laptop) expires in 10 min, unanswered`);
    expect(sent()).toHaveLength(2);
    expect(tg.bot.of("sendMessage")[1].reply_markup).toEqual({ inline_keyboard: [[{ text: "Defer", callback_data: `d:${approvalId}` }]] });
    await tg.t.mutation(api.approvals.resolve, { ...tg.laptop, approvalId, status: "approved", by: "ada" });
    await cronAt(22 * MINUTE);
    expect(await tg.t.run((ctx) => ctx.db.query("alertMachines").collect())).toEqual([]);
  });
});
