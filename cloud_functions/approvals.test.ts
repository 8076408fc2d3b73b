import { afterEach, beforeEach, describe, expect, test, vi } from "vitest";
import { api, internal } from "./_generated/api";
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

const create = (auth = laptop, expiresAt = NOW + 60_000) =>
  t.mutation(api.approvals.create, {
    ...auth,
    agentName: "claude",
    actionType: "deploy",
    priority: "high",
    reviewers: ["alice"],
    expiresAt,
  });

describe("approvals", () => {
  test("create, list, resolve once", async () => {
    const { approvalId } = await create();
    expect(await t.query(api.approvals.list, { ...laptop, status: "pending" })).toMatchObject([
      { _id: approvalId, site: "laptop", status: "pending", priority: "high", reviewers: ["alice"], createdAt: NOW },
    ]);
    expect(await t.mutation(api.approvals.resolve, { ...laptop, approvalId, status: "approved", by: "alice" })).toEqual({ status: "approved" });
    const [approval] = await t.query(api.approvals.list, laptop);
    expect(approval).toMatchObject({ status: "approved", resolvedBy: "alice", resolvedAt: NOW });
    expect(await errorCode(t.mutation(api.approvals.resolve, { ...laptop, approvalId, status: "rejected", by: "bob" }))).toBe("CONFLICT");
    expect(await t.query(api.approvals.list, { ...laptop, status: "pending" })).toEqual([]);
  });

  test("an expiry in the past is INVALID; a bad priority fails the validator", async () => {
    expect(await errorCode(create(laptop, NOW))).toBe("INVALID");
    const bad = { ...laptop, agentName: "a", actionType: "x", priority: "urgent", reviewers: [], expiresAt: NOW + 1 };
    expect(await errorMessage(t.mutation(api.approvals.create, bad as never))).toMatch(/Validator error/);
  });

  test("resolving past expiresAt, or after expirePending, is a CONFLICT", async () => {
    const { approvalId } = await create();
    vi.setSystemTime(NOW + 60_000);
    expect(await errorCode(t.mutation(api.approvals.resolve, { ...laptop, approvalId, status: "approved", by: "alice" }))).toBe("CONFLICT");
    await t.mutation(internal.approvals.expirePending, {});
    expect(await errorCode(t.mutation(api.approvals.resolve, { ...laptop, approvalId, status: "approved", by: "alice" }))).toBe("CONFLICT");
  });

  test("another site can neither see nor resolve it", async () => {
    const { approvalId } = await create();
    expect(await t.query(api.approvals.list, vm)).toEqual([]);
    expect(await errorCode(t.mutation(api.approvals.resolve, { ...vm, approvalId, status: "approved", by: "mallory" }))).toBe("NOT_FOUND");
  });

  test("expirePending expires only pending approvals past their deadline", async () => {
    const soon = await create(laptop, NOW + 1_000);
    const later = await create(vm, NOW + 60_000);
    const settled = await create(laptop, NOW + 1_000);
    await t.mutation(api.approvals.resolve, { ...laptop, approvalId: settled.approvalId, status: "rejected", by: "alice" });
    vi.setSystemTime(NOW + 1_000);
    expect(await t.mutation(internal.approvals.expirePending, {})).toEqual({ expired: [soon.approvalId] });
    expect((await t.query(api.approvals.list, { ...laptop, status: "expired" })).map((a) => a._id)).toEqual([soon.approvalId]);
    expect((await t.query(api.approvals.list, { ...vm, status: "pending" })).map((a) => a._id)).toEqual([later.approvalId]);
    expect(await t.mutation(internal.approvals.expirePending, {})).toEqual({ expired: [] });
  });

  test("expirePending as of a given time (an admin's sweep): the clock is an argument", async () => {
    const soon = await create(laptop, NOW + 1_000);
    expect(await t.mutation(internal.approvals.expirePending, { now: NOW + 999 })).toEqual({ expired: [] });
    expect(await t.mutation(internal.approvals.expirePending, { now: NOW + 1_000 })).toEqual({ expired: [soon.approvalId] });
  });
});
