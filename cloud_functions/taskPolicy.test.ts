/**
 * lib/taskPolicy.ts gives the answers of sync/tasks.py: what an approval's event does to a linked
 * task, from contracts/task_status.json, which tests/contracts/test_task_policy.py runs too.
 */
import { describe, expect, test } from "vitest";
import { type ApprovalEvent, EVENT_STATUS, FINISHED, LINK_EVENT, TASK_STATUSES, type TaskStatus, taskStatusAfter } from "./lib/taskPolicy";
import { taskStatus } from "./lib/validators";
import { contract } from "./test.contracts";

type Policy = {
  statuses: string[];
  finished: string[];
  events: Record<string, string>;
  link: Record<string, string>;
  cases: { event: ApprovalEvent; task: TaskStatus; becomes: TaskStatus | null }[];
};
const policy = contract<Policy>("task_status.json");

describe("an approval's events move its tasks (contracts/task_status.json)", () => {
  test("the tables are the contract's, and the statuses are the schema's", () => {
    expect(TASK_STATUSES).toEqual(policy.statuses);
    expect(taskStatus.members.map((m) => m.value)).toEqual(policy.statuses);
    expect([...FINISHED].sort()).toEqual([...policy.finished].sort());
    expect(EVENT_STATUS).toEqual(policy.events);
    expect(LINK_EVENT).toEqual(policy.link);
  });

  test.each(policy.cases)("$event moves a $task task to $becomes", ({ event, task, becomes }) => {
    expect(taskStatusAfter(event, task)).toBe(becomes);
  });

  test("every event meets every status in the cases", () => {
    const seen = new Set(policy.cases.map((c) => `${c.event}/${c.task}`));
    expect(seen.size).toBe(Object.keys(policy.events).length * policy.statuses.length);
  });
});
