/**
 * The hub's settings on Convex (lib/settings.ts): the names and defaults of contracts/settings.json
 * (tests/contracts/test_settings_contract.py holds the daemons to the same file), a bad value refused by name,
 * and the crons honouring what the deployment's environment says.
 */
import { afterEach, describe, expect, test, vi } from "vitest";
import { api, internal } from "./_generated/api";
import { envName, READERS } from "./lib/settings";
import { useTelegramBackend } from "./test.botApi";
import { contract } from "./test.contracts";
import { item } from "./test.fixtures";

type Entry = { key: string; env: string | null; default: unknown; convex: "honoured" | "refused"; example: { env?: string; value?: unknown } };
const settingsContract = contract<{ settings: Entry[] }>("settings.json");
const honoured = settingsContract.settings.filter((s) => s.convex === "honoured");
const readers = READERS as Record<string, (env: Record<string, string | undefined>) => unknown>;

describe("the contract (contracts/settings.json)", () => {
  test("the deployment reads exactly the settings the file says it honours", () => {
    expect(Object.keys(READERS).sort()).toEqual(honoured.map((s) => s.key).sort());
  });

  test.each(honoured.map((s) => [s.key, s] as const))("%s: the daemons' variable, default and reading", (key, s) => {
    expect(envName(key)).toBe(s.env);
    expect(readers[key]({})).toEqual(s.default);
    expect(readers[key]({ [s.env!]: s.example.env })).toEqual(s.example.value);
    expect(readers[key]({ [s.env!]: s.example.env })).not.toEqual(s.default);
  });
});

describe("a bad value is refused by name, never read as the default", () => {
  const bad: [string, string][] = [
    ["jobs.stale_after", "three minutes"],
    ["jobs.stale_after", "0"],
    ["jobs.silent_after", ""],
    ["jobs.agent_retention_days", "-1"],
    ["jobs.archive_after_days", "Infinity"],
    ["jobs.approval_timeouts", "send_message=60"],
    ["jobs.approval_timeouts", '{"send_message": -5}'],
    ["jobs.approval_timeouts", "[60]"],
    ["jobs.default_approval_timeout", "-1"],
    ["alerts.enabled", "maybe"],
    ["alerts.reminders", "1,4,24"],
    ["alerts.reminders", '{"1": 4}'],
    ["alerts.grace", '{"ofline": 15}'],
    ["alerts.grace", '{"offline": "soon"}'],
    ["alerts.approval_lead", "ten"],
  ];
  test.each(bad)("%s = %j", (key, raw) => {
    expect(() => readers[key]({ [envName(key)]: raw })).toThrow(`${envName(key)} in the deployment's environment is ${JSON.stringify(raw)}, not `);
    expect(() => readers[key]({ [envName(key)]: raw })).toThrow(`npx convex env set ${envName(key)}`);
  });

  test("an unknown signal's grace names the signals", () => {
    expect(() => readers["alerts.grace"]({ MEMSYNC_ALERTS__GRACE: '{"ofline": 15}' })).toThrow("no signal named ofline; signals: silent, offline,");
  });

  test("pydantic's words for a boolean, as the daemons read them", () => {
    for (const word of ["0", "off", "F", "false", "n", "No"]) expect(readers["alerts.enabled"]({ MEMSYNC_ALERTS__ENABLED: word })).toBe(false);
    for (const word of ["1", "ON", "t", "True", "y", "yes"]) expect(readers["alerts.enabled"]({ MEMSYNC_ALERTS__ENABLED: word })).toBe(true);
  });

  test("the retentions' former names are refused with the rename to do", () => {
    expect(() => readers["jobs.archive_after_days"]({ MEMSYNC_ARCHIVE_AFTER_DAYS: "30" })).toThrow(
      "MEMSYNC_ARCHIVE_AFTER_DAYS in the deployment's environment is now MEMSYNC_JOBS__ARCHIVE_AFTER_DAYS, the daemons' name: " +
        "`npx convex env set MEMSYNC_JOBS__ARCHIVE_AFTER_DAYS 30` and `npx convex env remove MEMSYNC_ARCHIVE_AFTER_DAYS`",
    );
    expect(() => readers["jobs.agent_retention_days"]({ MEMSYNC_AGENT_RETENTION_DAYS: "7" })).toThrow("is now MEMSYNC_JOBS__AGENT_RETENTION_DAYS");
  });
});

// The crons, with the deployment's environment set (convex-test's functions read process.env).
const NOW = Date.parse("2026-01-15T12:00:00Z");
const MINUTE = 60_000;
const HOUR = 60 * MINUTE;
const tg = useTelegramBackend(NOW, ["laptop"]);
afterEach(() => {
  for (const s of honoured) delete process.env[s.env!];
});
const setEnv = (values: Record<string, string>) => Object.assign(process.env, values);
const at = (ms: number) => vi.setSystemTime(NOW + ms);
const sent = () => tg.bot.of("sendMessage").map((b) => b.text);
async function alertsAt(ms: number) {
  at(ms);
  await tg.t.action(internal.scheduled.alerts, {});
  await tg.settle();
}
const beat = () =>
  tg.t.mutation(api.agents.heartbeatSite, {
    ...tg.laptop,
    version: "0.1.0",
    host: "laptop.lan",
    pid: 1,
    lagS: null,
    backlog: null,
    indexState: "ready",
    quarantined: 0,
    conflicts: 0,
  });
const approval = (actionType: string) =>
  tg.t.mutation(api.approvals.create, { ...tg.laptop, agentName: "claude", actionType, priority: "normal", reviewers: [], expiresAt: NOW + 24 * HOUR });

describe("the crons honour the deployment's environment", () => {
  test("jobs.stale_after: mark-stale-agents", async () => {
    await beat();
    at(MINUTE + 1_000);
    expect(await tg.t.action(internal.scheduled.markStaleAgents, {})).toBe("every agent with a recent heartbeat is online");
    setEnv({ MEMSYNC_JOBS__STALE_AFTER: "60" });
    expect(await tg.t.action(internal.scheduled.markStaleAgents, {})).toBe("1 agent or site went offline");
  });

  test("jobs.silent_after: sync-health", async () => {
    await tg.t.mutation(api.episodes.bulkSyncEpisodes, { ...tg.laptop, cursor: 1, episodes: [item("1")] });
    setEnv({ MEMSYNC_JOBS__SILENT_AFTER: "7200" });
    at(2 * HOUR - 1);
    expect(await tg.t.action(internal.scheduled.syncHealth, {})).toBe("no site changed state");
    at(2 * HOUR);
    expect(await tg.t.action(internal.scheduled.syncHealth, {})).toBe("laptop down");
  });

  test("jobs.approval_timeouts replaces the table; jobs.default_approval_timeout is the rest's", async () => {
    setEnv({ MEMSYNC_JOBS__APPROVAL_TIMEOUTS: '{"send_message": 5}', MEMSYNC_JOBS__DEFAULT_APPROVAL_TIMEOUT: "0" });
    const { approvalId, status } = await approval("send_message");
    expect(status).toBe("pending");
    // Out of the table, "internal" takes the default: 0 approves it at once.
    expect((await approval("internal")).status).toBe("approved");
    at(5 * MINUTE - 1);
    expect(await tg.t.action(internal.scheduled.expirePendingApprovals, {})).toBe("0 pending approvals expired");
    at(5 * MINUTE);
    expect(await tg.t.action(internal.scheduled.expirePendingApprovals, {})).toBe("1 pending approval expired");
    expect((await tg.t.query(api.approvals.get, { ...tg.laptop, approvalId }))?.status).toBe("expired");
  });

  test("alerts.approval_lead: the expiry warning", async () => {
    setEnv({ MEMSYNC_ALERTS__APPROVAL_LEAD: "25" });
    const { approvalId } = await approval("destructive"); // 30 minutes
    await tg.settle();
    await alertsAt(4 * MINUTE);
    expect(sent()).toHaveLength(1); // the approval itself
    await alertsAt(5 * MINUTE);
    expect(sent()[1]).toBe(`⏳ approval ${approvalId} (destructive by claude on laptop) expires in 25 min, unanswered`);
  });

  test("alerts.grace and alerts.reminders: an offline daemon", async () => {
    setEnv({ MEMSYNC_ALERTS__GRACE: '{"offline": 15}', MEMSYNC_ALERTS__REMINDERS: "[2]" });
    await beat();
    at(4 * MINUTE);
    await tg.t.mutation(internal.agents.markStale, {});
    await alertsAt(4 * MINUTE);
    await alertsAt(15 * MINUTE - 1_000);
    expect(sent()).toEqual([]);
    await alertsAt(15 * MINUTE);
    expect(sent()).toEqual(["🔴 laptop daemon silent for 15 min"]);
    await alertsAt(15 * MINUTE + HOUR + 30 * MINUTE); // past the default 1 h reminder
    expect(sent()).toHaveLength(1);
    await alertsAt(15 * MINUTE + 2 * HOUR);
    expect(sent()).toHaveLength(2);
  });

  test("alerts.enabled = false: nothing observed, nothing said", async () => {
    setEnv({ MEMSYNC_ALERTS__ENABLED: "false" });
    await beat();
    at(4 * MINUTE);
    await tg.t.mutation(internal.agents.markStale, {});
    await alertsAt(4 * MINUTE);
    expect(sent()).toEqual([]);
    expect(await tg.t.run((ctx) => ctx.db.query("alertMachines").collect())).toEqual([]);
  });

  test("a bad value fails the cron that reads it, and its run says why", async () => {
    setEnv({ MEMSYNC_ALERTS__GRACE: '{"ofline": 15}' });
    await expect(tg.t.action(internal.scheduled.alerts, {})).rejects.toThrow("MEMSYNC_ALERTS__GRACE in the deployment's environment");
    const runs = await tg.t.run((ctx) => ctx.db.query("jobRuns").collect());
    expect(runs.map((r) => [r.job, r.outcome])).toEqual([["alerts", "failed"]]);
    expect(runs[0].summary).toContain("no signal named ofline");
    // Another cron, which does not read it, runs.
    expect(await tg.t.action(internal.scheduled.markStaleAgents, {})).toBe("every agent with a recent heartbeat is online");
  });
});
