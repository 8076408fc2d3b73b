/**
 * jobs.ts's decide gives the answers of sync/leases.py, and keeps runs as long as the hub: both
 * run contracts/job_leases.json (tests/contracts/test_leases.py is the Python side).
 */
import { describe, expect, test } from "vitest";
import { type Claim, decide, RUNS_KEPT_MS } from "./jobs";
import { contract } from "./test.contracts";

type Leases = {
  runs_kept_ms: number;
  decide: { why: string; current: { holder: string; expires_at: number; done: boolean } | null; site: string; now: number; claim: Claim }[];
};

const leases = contract<Leases>("job_leases.json");

describe("job leases (contracts/job_leases.json)", () => {
  test.each(leases.decide.map((c) => [c.why, c] as const))("decide: %s", (_, c) => {
    const current = c.current === null ? null : { holder: c.current.holder, expiresAt: c.current.expires_at, done: c.current.done };
    expect(decide(current, c.site, c.now)).toBe(c.claim);
  });

  test("runs are kept as long as the contract says", () => {
    expect(RUNS_KEPT_MS).toBe(leases.runs_kept_ms);
  });
});
