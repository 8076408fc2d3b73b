/**
 * lib/quietHours.ts reads windows and zones, and holds warnings, as daemon/quiet_hours.py does:
 * both run contracts/quiet_hours.json (tests/contracts/test_quiet_hours.py is the Python side).
 */
import { describe, expect, test } from "vitest";
import type { Severity } from "./lib/alertMachine";
import { readQuietHours, releaseAt, zoneProblem } from "./lib/quietHours";
import { contract } from "./test.contracts";

type Quiet = {
  parse: { text: string; window?: [number, number]; problem?: string }[];
  zones: { zone: string; problem?: string }[];
  send_after: { why: string; quiet_hours: string | null; zone: string; severity: Severity; at: string; sends: string }[];
};

const quiet = contract<Quiet>("quiet_hours.json");

describe("quiet hours (contracts/quiet_hours.json)", () => {
  test.each(quiet.parse.map((c) => [c.text, c] as const))("reading %j", (_, c) => {
    const expected = c.window !== undefined ? { startMin: c.window[0], endMin: c.window[1] } : { problem: c.problem };
    expect(readQuietHours(c.text)).toEqual(expected);
  });

  test.each(quiet.zones.map((c) => [c.zone, c] as const))("the zone %s", (_, c) => {
    expect(zoneProblem(c.zone)).toBe(c.problem ?? null);
  });

  test.each(quiet.send_after.map((c) => [c.why, c] as const))("%s", (_, c) => {
    const window = c.quiet_hours === null ? null : readQuietHours(c.quiet_hours);
    if (window !== null && "problem" in window) throw new Error(window.problem);
    expect(new Date(releaseAt(Date.parse(c.at), c.severity, window, c.zone)).toISOString()).toBe(new Date(Date.parse(c.sends)).toISOString());
  });
});
