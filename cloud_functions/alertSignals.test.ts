/**
 * lib/alertSignals.ts watches what daemon/alerts/signals.py watches, with the same settings, and
 * says durations in the same words: both run contracts/alert_signals.json
 * (tests/contracts/test_alert_signals.py is the Python side).
 */
import { describe, expect, test } from "vitest";
import { APPROVAL_LEAD_MS, duration, FLEET_SIGNALS, SIGNALS } from "./lib/alertSignals";
import { contract } from "./test.contracts";

type Table = {
  signals: Record<string, { code: string; severity: string; grace_ms: number; bad_count: number; reminders_ms: number[]; recovery: boolean }>;
  fleet_signals: string[];
  approval_lead_ms: number;
  duration: { ms: number; said: string }[];
};

const table = contract<Table>("alert_signals.json");

describe("the signals (contracts/alert_signals.json)", () => {
  test("the signal table is the contract's", () => {
    const ours = Object.fromEntries(
      Object.entries(SIGNALS).map(([name, s]) => [
        name,
        { code: s.code, severity: s.severity, grace_ms: s.graceMs, bad_count: s.badCount, reminders_ms: [...s.remindersMs], recovery: s.recovery },
      ]),
    );
    expect(ours).toEqual(table.signals);
    expect([...FLEET_SIGNALS]).toEqual(table.fleet_signals);
    expect(APPROVAL_LEAD_MS).toBe(table.approval_lead_ms);
  });

  test.each(table.duration.map((c) => [c.ms, c.said] as const))("%d ms reads %s", (ms, said) => {
    expect(duration(ms)).toBe(said);
  });
});
