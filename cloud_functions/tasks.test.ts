import { afterEach, beforeEach, describe, expect, test, vi } from "vitest";
import { api, internal } from "./_generated/api";
import type { Id } from "./_generated/dataModel";
import { backend, errorCode, errorMessage, registerSite, type Backend } from "./test.setup";

const NOW = 1_770_000_000_000;
let t: Backend;
let laptop: { site: string; secret: string };
let vm: { site: string; secret: string };

beforeEach(async () => {
  vi.useFakeTimers();
  vi.setSystemTime(NOW);
  t = backend();
  laptop = await registerSite(t, "laptop");
  vm = await registerSite(t, "vm");
});
afterEach(() => vi.useRealTimers());

const ask = (auth = laptop, more: Record<string, unknown> = {}) =>
  t.mutation(api.approvals.create, {
    ...auth,
    agentName: "claude",
    actionType: "deploy",
    priority: "high",
    reviewers: ["42"],
    expiresAt: NOW + 3_600_000,
    ...more,
  });
const statusOf = async (taskId: Id<"tasks">) => (await t.run((ctx) => ctx.db.get(taskId)))!.status;

describe("tasks", () => {
  test("create, get, update and list by each filter", async () => {
    const { taskId } = await t.mutation(api.tasks.create, { ...laptop, title: "write tests", agentName: "claude" });
    const other = (await t.mutation(api.tasks.create, { ...vm, title: "deploy", agentName: "codex", assignedTo: "bob" })).taskId;
    expect(await t.query(api.tasks.get, { ...vm, taskId })).toMatchObject({ _id: taskId, title: "write tests", site: "laptop", status: "pending", createdAt: NOW, updatedAt: NOW });
    expect(await t.query(api.tasks.get, { ...vm, taskId: "not-an-id" })).toBeNull();

    vi.setSystemTime(NOW + 5);
    expect(await t.mutation(api.tasks.update, { ...laptop, taskId, status: "in_progress", assignedTo: "ann" })).toMatchObject({
      status: "in_progress",
      assignedTo: "ann",
      updatedAt: NOW + 5,
    });
    // A field left out is kept.
    expect(await t.mutation(api.tasks.update, { ...laptop, taskId, status: "done" })).toMatchObject({ status: "done", assignedTo: "ann" });
    expect(await t.mutation(api.tasks.update, { ...laptop, taskId: other, assignedTo: "cy" })).toMatchObject({ status: "pending", assignedTo: "cy" });

    const ids = async (filters: Record<string, unknown>) => (await t.query(api.tasks.list, { ...laptop, ...filters })).map((x) => x._id);
    expect(await ids({})).toEqual([taskId, other]); // the fleet's, oldest first
    expect(await ids({ ofSite: "vm" })).toEqual([other]);
    expect(await ids({ status: "done" })).toEqual([taskId]);
    expect(await ids({ ofSite: "laptop", status: "pending" })).toEqual([]);
    expect(await ids({ agentName: "codex" })).toEqual([other]);
    expect(await ids({ approvalId: "not-an-id" })).toEqual([]);
  });

  test("people update any site's task, as they decide any site's approval", async () => {
    const { taskId } = await t.mutation(api.tasks.create, { ...laptop, title: "t", agentName: "a" });
    expect(await t.mutation(api.tasks.update, { ...vm, taskId, status: "cancelled" })).toMatchObject({ site: "laptop", status: "cancelled" });
  });

  test("refused: an unknown status, an empty title, nothing to change, an id that names no task", async () => {
    const { taskId } = await t.mutation(api.tasks.create, { ...laptop, title: "t", agentName: "a" });
    expect(await errorMessage(t.mutation(api.tasks.update, { ...laptop, taskId, status: "later" } as never))).toMatch(/Validator error/);
    expect(await errorCode(t.mutation(api.tasks.create, { ...laptop, title: "  ", agentName: "a" }))).toBe("INVALID");
    expect(await errorCode(t.mutation(api.tasks.update, { ...laptop, taskId }))).toBe("INVALID");
    expect(await errorCode(t.mutation(api.tasks.update, { ...laptop, taskId: "nope", status: "done" }))).toBe("NOT_FOUND");
    // A task id where an approval's is wanted names no approval.
    expect(await errorCode(t.mutation(api.tasks.create, { ...laptop, title: "t", agentName: "a", approvalId: taskId }))).toBe("NOT_FOUND");
  });

  test("a task may wait on its own site's approval, not another's, and takes its status at once", async () => {
    const { approvalId } = await ask(vm);
    expect(await errorCode(t.mutation(api.tasks.create, { ...laptop, title: "t", agentName: "a", approvalId }))).toBe("NOT_FOUND");
    const { taskId } = await t.mutation(api.tasks.create, { ...vm, title: "t", agentName: "a", approvalId });
    expect(await t.query(api.tasks.get, { ...vm, taskId })).toMatchObject({ approvalId, status: "blocked" });
    await t.mutation(api.approvals.resolve, { ...laptop, approvalId, status: "rejected", by: "ann" });
    const late = (await t.mutation(api.tasks.create, { ...vm, title: "t2", agentName: "a", approvalId })).taskId;
    expect(await statusOf(late)).toBe("cancelled");
  });
});

describe("an approval moves its tasks in its own mutation", () => {
  test("asked with a task: blocked; deferred: still blocked; approved: in progress", async () => {
    const { approvalId, taskId } = await ask(laptop, { task: { title: "ship the release", assignedTo: "bob" } });
    expect(await t.query(api.tasks.list, { ...vm, approvalId })).toMatchObject([
      { _id: taskId, title: "ship the release", agentName: "claude", site: "laptop", status: "blocked", assignedTo: "bob", approvalId },
    ]);
    await t.mutation(api.approvals.defer, { ...vm, approvalId, by: "ann" });
    expect(await statusOf(taskId!)).toBe("blocked");
    vi.setSystemTime(NOW + 7);
    await t.mutation(api.approvals.resolve, { ...vm, approvalId, status: "approved", by: "ann" });
    expect(await t.query(api.tasks.get, { ...laptop, taskId: taskId! })).toMatchObject({ status: "in_progress", updatedAt: NOW + 7 });
  });

  test("rejected: cancelled; expired: failed; approved by the policy: in progress at once", async () => {
    const rejected = await ask(laptop, { task: { title: "r" } });
    await t.mutation(api.approvals.resolve, { ...laptop, approvalId: rejected.approvalId, status: "rejected", by: "ann" });
    expect(await statusOf(rejected.taskId!)).toBe("cancelled");

    const expired = await ask(laptop, { task: { title: "e" } });
    await t.mutation(internal.approvals.expirePending, { now: NOW + 3_600_000, timeoutsMs: {}, defaultMs: 3_600_000 });
    expect(await statusOf(expired.taskId!)).toBe("failed");

    const policy = await ask(laptop, { actionType: "research", timeoutMs: 0, task: { title: "p" } });
    expect(policy.status).toBe("approved");
    expect(await statusOf(policy.taskId!)).toBe("in_progress");
  });

  test("a Telegram press moves the task with the approval", async () => {
    const { approvalId, taskId } = await ask(laptop, { task: { title: "t" } });
    await t.mutation(internal.telegram.press, { callbackId: "cb1", fromId: "42", fromName: "Ann", data: `r:${approvalId}`, updateId: 1 });
    expect(await statusOf(taskId!)).toBe("cancelled");
  });

  test("linking an existing task; a finished task is left alone; a task of another site is refused with nothing created", async () => {
    const { taskId } = await t.mutation(api.tasks.create, { ...laptop, title: "t", agentName: "claude" });
    await t.mutation(api.tasks.update, { ...laptop, taskId, status: "in_progress" });
    const { approvalId } = await ask(laptop, { taskId });
    expect(await t.query(api.tasks.get, { ...laptop, taskId })).toMatchObject({ approvalId, status: "blocked" });
    await t.mutation(api.tasks.update, { ...laptop, taskId, status: "done" }); // finished meanwhile
    await t.mutation(api.approvals.resolve, { ...laptop, approvalId, status: "rejected", by: "ann" });
    expect(await statusOf(taskId)).toBe("done");

    const before = (await t.query(api.approvals.list, { ...vm, allSites: true })).length;
    expect(await errorCode(ask(vm, { taskId }))).toBe("NOT_FOUND");
    expect(await errorCode(ask(laptop, { taskId: "nope" }))).toBe("NOT_FOUND");
    expect(await errorCode(ask(laptop, { taskId, task: { title: "x" } }))).toBe("INVALID");
    expect(await errorCode(ask(laptop, { task: { title: "" } }))).toBe("INVALID");
    expect((await t.query(api.approvals.list, { ...vm, allSites: true })).length).toBe(before);
  });
});
