/**
 * The crons' run summaries (contracts/run_summaries.json), word for word, as
 * tests/contracts/test_run_summaries.py holds the hub's jobs to the same texts.
 */
import { describe, expect, test } from "vitest";
import { ALERTS_OFF, alertsSummary, archiveSummary, digestSummary, expiredSummary, healthSummary, staleSummary } from "./lib/runSummary";
import { contract } from "./test.contracts";

type Case = Record<string, unknown> & { job: string; summary: string };
const SUMMARIES = contract<{ cases: Case[] }>("run_summaries.json");

const WORDED: Record<string, (c: Case) => string> = {
  "mark-stale-agents": (c) => staleSummary(c.offline as number, c.pruned as number),
  "expire-pending-approvals": (c) => expiredSummary(c.expired as number),
  "sync-health": (c) => healthSummary((c.changed as [string, string][]).map(([site, state]) => ({ site, state }))),
  "daily-digest": (c) => digestSummary(c.day as string, c.episodes as number, c.sites as number, c.queued as boolean),
  "cleanup-old-episodes": (c) => archiveSummary(c.archived as number, c.days as number, (c.files as number | null) ?? undefined, c.failures as string[]),
  alerts: (c) => (c.enabled ? alertsSummary(c.observed as number, c.said as [string, string][]) : ALERTS_OFF),
};

describe("a run is summed up in the contract's words", () => {
  test.each(SUMMARIES.cases.map((c) => [c.summary, c] as const))("%s", (_summary, c) => {
    expect(WORDED[c.job](c)).toBe(c.summary);
  });

  test("every job with a worded summary has cases", () => {
    expect(new Set(SUMMARIES.cases.map((c) => c.job))).toEqual(new Set(Object.keys(WORDED)));
  });
});
