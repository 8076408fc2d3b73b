/**
 * lib/alertMachine.ts gives the answers of daemon/alerts/machine.py: both run the shared case table
 * contracts/alert_cases.json. And lib/alertSignals.ts reads the fleet as signals.py does.
 */
import { describe, expect, test } from "vitest";
import { type AlertState, initialState, mute, type Notice, signalSpec, snooze, step } from "./lib/alertMachine";
import { idle, observeApprovals, observeSites, SIGNALS, type SiteView } from "./lib/alertSignals";
import { contract } from "./test.contracts";

type Step = { at: number; bad?: boolean; value?: number; badSince?: number; snooze?: number; mute?: number; expect?: Partial<Notice>[] };
type Case = {
  name: string;
  spec: { severity: "warning" | "critical"; graceMs: number; badCount: number; remindersMs?: number[]; recovery?: boolean };
  steps: Step[];
};

const table = contract<{ cases: Case[] }>("alert_cases.json");

describe("the shared cases (contracts/alert_cases.json)", () => {
  test("there are cases to run", () => {
    expect(table.cases.length).toBeGreaterThan(5);
  });

  test.each(table.cases.map((c) => [c.name, c] as const))("%s", (_, c) => {
    const spec = signalSpec({ code: "case", ...c.spec });
    let state: AlertState | null = null;
    for (const [i, s] of c.steps.entries()) {
      if (s.snooze !== undefined || s.mute !== undefined) {
        const current: AlertState = state ?? initialState(s.at);
        state = s.snooze !== undefined ? snooze(current, s.snooze) : mute(current, s.mute!);
        continue;
      }
      const [next, notices] = step(spec, state, { bad: s.bad!, at: s.at, detail: "", value: s.value ?? null, badSince: s.badSince ?? null });
      state = next;
      const got = notices.map((n) =>
        n.kind === "recovered" ? { kind: n.kind, downForMs: n.downForMs, caughtUp: n.caughtUp } : { kind: n.kind, downForMs: n.downForMs },
      );
      const want = (s.expect ?? []).map((n) =>
        n.kind === "recovered" ? { kind: n.kind, downForMs: n.downForMs, caughtUp: n.caughtUp ?? null } : { kind: n.kind, downForMs: n.downForMs },
      );
      expect(got, `step ${i} at ${s.at}`).toEqual(want);
    }
  });
});

describe("observing the fleet", () => {
  const NOW = 10 * 3_600_000;
  const site = (over: Partial<SiteView>): SiteView => ({
    site: "laptop",
    totalSynced: 40,
    health: "up",
    lastSyncAt: NOW - 60_000,
    lastHeartbeat: NOW - 30_000,
    online: true,
    backlog: null,
    quarantined: 0,
    indexState: "ready",
    ...over,
  });
  const read = (views: SiteView[]) =>
    observeSites(views, NOW).map((o) => [o.signal, o.subject, o.observation.bad, o.observation.detail, o.observation.value]);

  test.each([
    [
      "all well",
      [site({})],
      [
        ["silent", "laptop", false, "is syncing again", 40],
        ["offline", "laptop", false, "daemon is back", 40],
        ["quarantine", "laptop", false, "quarantine empty", 0],
        ["paused", "laptop", false, "search indexing resumed", null],
      ],
    ],
    [
      "everything wrong",
      [site({ health: "down", lastSyncAt: NOW - 7_500_000, online: false, lastHeartbeat: NOW - 600_000, quarantined: 3, indexState: "paused" })],
      [
        ["silent", "laptop", true, "has not synced for 2 h 5 min", 40],
        ["offline", "laptop", true, "daemon silent for 10 min", 40],
        ["quarantine", "laptop", true, "3 rows quarantined (memsync quarantine list)", 3],
        ["paused", "laptop", true, "search indexing paused: the embedding quota is exhausted", null],
      ],
    ],
    ["never judged, never beat: nothing to say", [site({ health: null, lastHeartbeat: null })], []],
    // Idle (online, no backlog): quiet, not silent, whatever sync-health judged.
    [
      "an idle site judged down is not silent",
      [site({ health: "down", lastSyncAt: NOW - 7_500_000, backlog: 0 })],
      [
        ["silent", "laptop", false, "is syncing again", 40],
        ["offline", "laptop", false, "daemon is back", 40],
        ["quarantine", "laptop", false, "quarantine empty", 0],
        ["paused", "laptop", false, "search indexing resumed", null],
      ],
    ],
    [
      "an online site with a backlog, judged down, is silent",
      [site({ health: "down", lastSyncAt: NOW - 7_500_000, backlog: 40, lastHeartbeat: null })],
      [["silent", "laptop", true, "has not synced for 2 h 5 min", 40]],
    ],
    [
      "an offline site judged down is silent, even with no backlog",
      [site({ health: "down", lastSyncAt: NOW - 7_500_000, backlog: 0, online: false, lastHeartbeat: null })],
      [["silent", "laptop", true, "has not synced for 2 h 5 min", 40]],
    ],
    [
      "an online site of unknown backlog judged down is silent",
      [site({ health: "down", lastSyncAt: null, backlog: null, lastHeartbeat: null })],
      [["silent", "laptop", true, "has not synced", 40]],
    ],
    ["down with no cursor", [site({ health: "down", lastSyncAt: null, lastHeartbeat: null, totalSynced: null })], [["silent", "laptop", true, "has not synced", null]]],
  ])("%s", (_, views, expected) => {
    expect(read(views as SiteView[])).toEqual(expected);
  });

  test.each([
    [true, 0, true],
    [true, 40, false],
    [true, null, false],
    [false, 0, false],
  ])("idle(online=%s, backlog=%s) is %s", (online, backlog, expected) => {
    expect(idle({ online, backlog })).toBe(expected);
  });

  test("approvals: only pending ones, bad within the lead time", () => {
    const approval = { approvalId: "k1", status: "pending", actionType: "deploy", agentName: "claude", site: "vm", priority: "normal" };
    const found = observeApprovals(
      [
        { ...approval, expiresAt: NOW + 10 * 60_000 },
        { ...approval, approvalId: "k2", expiresAt: NOW + 11 * 60_000 },
        { ...approval, approvalId: "k3", status: "approved", expiresAt: NOW },
      ],
      NOW,
    );
    expect(found.map((o) => [o.subject, o.observation.bad, o.observation.detail])).toEqual([
      ["k1", true, "approval k1 (deploy by claude on vm) expires in 10 min, unanswered"],
      ["k2", false, "approval k2 (deploy by claude on vm) expires in 11 min, unanswered"],
    ]);
    expect(SIGNALS.expiring).toMatchObject({ remindersMs: [], recovery: false });
  });
});
