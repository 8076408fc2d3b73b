import { beforeEach, expect, test } from "vitest";
import { api } from "./_generated/api";
import { backend, errorCode, errorMessage, registerSite, type Backend } from "./test.setup";

let t: Backend;
let laptop: { site: string; secret: string };
let vm: { site: string; secret: string };

beforeEach(async () => {
  t = backend();
  laptop = await registerSite(t, "laptop");
  vm = await registerSite(t, "vm");
});

test("create, update, list by status", async () => {
  const { taskId } = await t.mutation(api.tasks.create, { ...laptop, title: "write tests", agentName: "claude" });
  expect(await t.query(api.tasks.list, { ...laptop, status: "pending" })).toMatchObject([
    { _id: taskId, title: "write tests", site: "laptop", status: "pending" },
  ]);
  expect(await t.mutation(api.tasks.update, { ...laptop, taskId, status: "in_progress", assignedTo: "bob" })).toEqual({
    taskId,
    status: "in_progress",
  });
  await t.mutation(api.tasks.update, { ...laptop, taskId, status: "done" });
  expect(await t.query(api.tasks.list, laptop)).toMatchObject([{ status: "done", assignedTo: "bob" }]);
  expect(await t.query(api.tasks.list, { ...laptop, status: "pending" })).toEqual([]);
});

test("a task may wait on its own site's approval, not another's", async () => {
  const { approvalId } = await t.mutation(api.approvals.create, {
    ...vm,
    agentName: "a",
    actionType: "x",
    priority: "low",
    reviewers: [],
    expiresAt: Date.now() + 60_000,
  });
  expect(await errorCode(t.mutation(api.tasks.create, { ...laptop, title: "t", agentName: "a", approvalId }))).toBe("NOT_FOUND");
  const { taskId } = await t.mutation(api.tasks.create, { ...vm, title: "t", agentName: "a", approvalId });
  expect((await t.query(api.tasks.list, vm))[0]).toMatchObject({ _id: taskId, approvalId });
});

test("another site can neither see nor update a task", async () => {
  const { taskId } = await t.mutation(api.tasks.create, { ...laptop, title: "t", agentName: "a" });
  expect(await t.query(api.tasks.list, vm)).toEqual([]);
  expect(await errorCode(t.mutation(api.tasks.update, { ...vm, taskId, status: "cancelled" }))).toBe("NOT_FOUND");
});

test("validators refuse an unknown status and an id of another table", async () => {
  const { taskId } = await t.mutation(api.tasks.create, { ...laptop, title: "t", agentName: "a" });
  expect(await errorMessage(t.mutation(api.tasks.update, { ...laptop, taskId, status: "later" } as never))).toMatch(/Validator error/);
  expect(await errorMessage(t.mutation(api.tasks.create, { ...laptop, title: "t", agentName: "a", approvalId: taskId } as never))).toMatch(
    /Validator error|approvals/,
  );
});
