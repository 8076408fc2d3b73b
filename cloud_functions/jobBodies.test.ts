/**
 * The job bodies' bounds (contracts/job_bodies.json): Convex's are the file's, and what both
 * servers share is equal (tests/contracts/test_job_bodies.py holds the hub's side).
 */
import { describe, expect, test } from "vitest";
import { PRUNE_BATCH } from "./agents";
import { MAX_EPISODES, TOP } from "./digest";
import { MAX_ARCHIVE_LIMIT } from "./episodes";
import { ARCHIVE_BATCH, ORPHAN_GRACE_MS } from "./lib/archiveWrite";
import { ARCHIVE_RUN_LIMIT, PRUNE_MAX_BATCHES, SCHEDULES } from "./scheduled";
import { contract } from "./test.contracts";

type Bound = { call_limit: number | null; run_limit: number | null; why: string };
type Bodies = {
  shared: { archive_orphan_age_ms: number; digest_top: number };
  jobs: Record<string, { hub: Bound; convex: Bound }>;
};

const bodies = contract<Bodies>("job_bodies.json");
const convex = (job: string) => bodies.jobs[job]!.convex;

describe("the job bodies' bounds (contracts/job_bodies.json)", () => {
  test("each bounded job is a job of the table, and each side says why it bounds it", () => {
    expect(Object.keys(SCHEDULES)).toEqual(expect.arrayContaining(Object.keys(bodies.jobs)));
    for (const sides of Object.values(bodies.jobs)) {
      expect(Object.keys(sides).sort()).toEqual(["convex", "hub"]);
      expect(sides.convex.why).not.toBe("");
    }
  });

  test("cleanup-old-episodes archives in batches, up to a run's limit", () => {
    expect({ call_limit: ARCHIVE_BATCH, run_limit: ARCHIVE_RUN_LIMIT }).toEqual({
      call_limit: convex("cleanup-old-episodes").call_limit,
      run_limit: convex("cleanup-old-episodes").run_limit,
    });
    expect(ARCHIVE_RUN_LIMIT).toBeLessThanOrEqual(MAX_ARCHIVE_LIMIT); // what episodes:archiveOld accepts
  });

  test("mark-stale-agents prunes in batches, up to a run's limit", () => {
    expect({ call_limit: PRUNE_BATCH, run_limit: PRUNE_BATCH * PRUNE_MAX_BATCHES }).toEqual({
      call_limit: convex("mark-stale-agents").call_limit,
      run_limit: convex("mark-stale-agents").run_limit,
    });
  });

  test("daily-digest reads at most its limit of a day's episodes", () => {
    expect({ call_limit: MAX_EPISODES, run_limit: MAX_EPISODES }).toEqual({
      call_limit: convex("daily-digest").call_limit,
      run_limit: convex("daily-digest").run_limit,
    });
  });

  test("what both servers share", () => {
    expect({ archive_orphan_age_ms: ORPHAN_GRACE_MS, digest_top: TOP }).toEqual(bodies.shared);
  });
});
