/**
 * What the alerts cron decides from the fleet at an instant (contracts/alert_sweep.json): each case
 * through lib/alertSignals.ts's observeFleet, as tests/contracts/test_alert_sweep.py runs it through the hub's
 * observe_fleet; and the cron itself over convex-test, deciding with the deployment's settings and
 * summing its run up in the contract's words (contracts/run_summaries.json).
 */
import { afterEach, describe, expect, test, vi } from "vitest";
import { api, internal } from "./_generated/api";
import { DEFAULT_FLEET_RULES, type FleetRules, observeFleet, type PendingApproval, type SiteView } from "./lib/alertSignals";
import { useTelegramBackend } from "./test.botApi";
import { contract } from "./test.contracts";

type Observed = { signal: string; subject: string; bad: boolean; detail: string; value: number | null; badSince: number | null; severity: string };
type Case = { name: string; sites: Partial<SiteView>[]; approvals: Partial<PendingApproval>[]; rules?: FleetRules; observed: Observed[] };
const SWEEP = contract<{ now: number; site: SiteView; approval: PendingApproval; rules: FleetRules; cases: Case[] }>("alert_sweep.json");

describe("the sweep observes what the contract says", () => {
  test.each(SWEEP.cases.map((c) => [c.name, c] as const))("%s", (_name, c) => {
    const found = observeFleet(
      c.sites.map((s) => ({ ...SWEEP.site, ...s })),
      c.approvals.map((a) => ({ ...SWEEP.approval, ...a })),
      SWEEP.now,
      c.rules ?? SWEEP.rules,
    );
    expect(
      found.map(({ signal, subject, observation, severity }) => ({
        signal,
        subject,
        bad: observation.bad,
        detail: observation.detail,
        value: observation.value,
        badSince: observation.badSince,
        severity,
      })),
    ).toEqual(c.observed);
  });

  test("the default rules are the contract's", () => {
    expect(DEFAULT_FLEET_RULES).toEqual(SWEEP.rules);
  });
});

const MINUTE = 60_000;
const tg = useTelegramBackend(SWEEP.now, ["laptop"]);
const alertsCron = async (ms: number) => {
  vi.setSystemTime(SWEEP.now + ms);
  return await tg.t.action(internal.scheduled.alerts, {});
};

describe("the alerts cron", () => {
  afterEach(() => {
    delete process.env.MEMSYNC_JOBS__APPROVAL_TIMEOUTS;
    delete process.env.MEMSYNC_ALERTS__ENABLED;
  });

  test("warns of an approval that the deployment's timeout for its category expires soon", async () => {
    // Its own deadline is a day away, but send_message waits 30 minutes here: the expiry cron
    // expires it then, so the warning comes 10 minutes before that.
    process.env.MEMSYNC_JOBS__APPROVAL_TIMEOUTS = '{"send_message": 30}';
    await tg.t.mutation(api.agents.heartbeatSite, {
      ...tg.laptop,
      version: "0.1.0",
      host: "laptop.lan",
      pid: 1,
      lagS: null,
      backlog: 0,
      indexState: "ready",
      quarantined: 0,
      conflicts: 0,
    });
    const { approvalId } = await tg.t.mutation(api.approvals.create, {
      ...tg.laptop,
      agentName: "claude",
      actionType: "send_message",
      priority: "normal",
      reviewers: ["42"],
      expiresAt: SWEEP.now + 24 * 60 * MINUTE,
    });
    expect(await alertsCron(19 * MINUTE)).toBe("4 signals observed, nothing to say");
    expect(await alertsCron(20 * MINUTE)).toBe(`4 signals observed; 1 notice: down expiring:${approvalId}`);
  });

  test("with alerts off observes nothing", async () => {
    process.env.MEMSYNC_ALERTS__ENABLED = "false";
    expect(await alertsCron(0)).toBe("alerts are off");
    expect(await tg.t.run((ctx) => ctx.db.query("alertMachines").collect())).toEqual([]);
  });
});
