import { afterEach, beforeEach, describe, expect, test, vi } from "vitest";
import { api, internal } from "./_generated/api";
import { item } from "./test.fixtures";
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
    const { approvalId, status } = await create();
    expect(status).toBe("pending");
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

  test("another site lists it only with allSites, and a person may resolve it from any site", async () => {
    const { approvalId } = await create();
    expect(await t.query(api.approvals.list, vm)).toEqual([]);
    expect((await t.query(api.approvals.list, { ...vm, allSites: true })).map((a) => a._id)).toEqual([approvalId]);
    expect(await t.query(api.approvals.get, { ...vm, approvalId })).toMatchObject({ _id: approvalId, site: "laptop" });
    expect(await t.mutation(api.approvals.resolve, { ...vm, approvalId, status: "approved", by: "alice" })).toEqual({ status: "approved" });
    expect(await t.query(api.approvals.get, { ...laptop, approvalId })).toMatchObject({ status: "approved", resolvedBy: "alice" });
  });

  test("get: the fields the Python client reads (createdAt, resolvedAt, deferCount absent meaning 0, site, summary, sourceId)", async () => {
    await t.mutation(api.episodes.bulkSyncEpisodes, { ...laptop, cursor: 7, episodes: [item("7")] });
    const { approvalId } = await t.mutation(api.approvals.create, {
      ...laptop,
      agentName: "claude",
      actionType: "deploy",
      priority: "normal",
      reviewers: ["alice"],
      expiresAt: NOW + 24 * 3_600_000,
      summary: "ship it",
      sourceId: "7",
    });
    const fresh = await t.query(api.approvals.get, { ...vm, approvalId });
    expect(fresh).toMatchObject({ _id: approvalId, site: "laptop", summary: "ship it", sourceId: "7", createdAt: NOW, status: "pending" });
    expect(typeof fresh?._creationTime).toBe("number");
    // Never deferred, never settled: both absent (deferCount absent is 0 to every reader).
    expect(fresh).not.toHaveProperty("deferCount");
    expect(fresh).not.toHaveProperty("resolvedAt");
    await t.mutation(api.approvals.defer, { ...laptop, approvalId, by: "alice" });
    expect(await t.query(api.approvals.get, { ...laptop, approvalId })).toMatchObject({ deferCount: 1 });
    vi.setSystemTime(NOW + 1000);
    await t.mutation(api.approvals.resolve, { ...laptop, approvalId, status: "rejected", by: "alice" });
    expect(await t.query(api.approvals.get, { ...laptop, approvalId })).toMatchObject({
      createdAt: NOW,
      resolvedAt: NOW + 1000,
      deferCount: 1,
      site: "laptop",
      summary: "ship it",
      sourceId: "7",
    });
  });

  test("create: an episode id that names none of the site's episodes is NOT_FOUND, and nothing is created", async () => {
    const about = (auth: typeof laptop, sourceId: string) =>
      t.mutation(api.approvals.create, {
        ...auth,
        agentName: "claude",
        actionType: "deploy",
        priority: "normal",
        reviewers: [],
        expiresAt: NOW + 60_000,
        sourceId,
      });
    await t.mutation(api.episodes.bulkSyncEpisodes, { ...laptop, cursor: 7, episodes: [item("7")] });
    expect(await errorCode(about(laptop, "8"))).toBe("NOT_FOUND");
    expect(await errorMessage(about(laptop, "8"))).toMatch(/no episode '8' from site laptop/);
    // Another site's episode of that id is not this site's.
    expect(await errorCode(about(vm, "7"))).toBe("NOT_FOUND");
    expect(await t.query(api.approvals.list, { ...laptop, allSites: true })).toEqual([]);
    expect((await about(laptop, "7")).status).toBe("pending");
  });

  test("get: null for an unknown or malformed id; resolve: NOT_FOUND for an unknown one", async () => {
    const { approvalId } = await create();
    await t.run((ctx) => ctx.db.delete(approvalId));
    expect(await t.query(api.approvals.get, { ...laptop, approvalId })).toBeNull();
    expect(await t.query(api.approvals.get, { ...laptop, approvalId: "not-an-id" })).toBeNull();
    expect(await errorCode(t.mutation(api.approvals.resolve, { ...laptop, approvalId, status: "approved", by: "alice" }))).toBe("NOT_FOUND");
  });

  test("expirePending expires only pending approvals past their deadline", async () => {
    const soon = await create(laptop, NOW + 1_000);
    const later = await create(vm, NOW + 60_000);
    const settled = await create(laptop, NOW + 1_000);
    await t.mutation(api.approvals.resolve, { ...laptop, approvalId: settled.approvalId, status: "rejected", by: "alice" });
    vi.setSystemTime(NOW + 1_000);
    expect(await t.mutation(internal.approvals.expirePending, {})).toEqual({ expired: [{ approvalId: soon.approvalId, site: "laptop" }] });
    expect((await t.query(api.approvals.list, { ...laptop, status: "expired" })).map((a) => a._id)).toEqual([soon.approvalId]);
    expect((await t.query(api.approvals.list, { ...vm, status: "pending" })).map((a) => a._id)).toEqual([later.approvalId]);
    expect(await t.mutation(internal.approvals.expirePending, {})).toEqual({ expired: [] });
  });

  test("expirePending as of a given time (an admin's sweep): the clock is an argument", async () => {
    const soon = await create(laptop, NOW + 1_000);
    expect(await t.mutation(internal.approvals.expirePending, { now: NOW + 999 })).toEqual({ expired: [] });
    expect(await t.mutation(internal.approvals.expirePending, { now: NOW + 1_000 })).toMatchObject({ expired: [{ approvalId: soon.approvalId }] });
  });

  const ofCategory = (
    actionType: string,
    extra: { timeoutMs?: number; expiresAt?: number; costUsd?: number; testsPassed?: boolean } = {},
  ) =>
    t.mutation(api.approvals.create, {
      ...laptop,
      agentName: "claude",
      actionType,
      priority: "normal",
      reviewers: [],
      expiresAt: NOW + 24 * 60 * 60_000,
      ...extra,
    });

  test("a category whose timeout is 0 is approved at once, by policy", async () => {
    const research = await ofCategory("research"); // 0 in the design's table
    const given = await ofCategory("deploy", { timeoutMs: 0 }); // the caller's policy says 0
    const waits = await ofCategory("financial");
    const byId = new Map((await t.query(api.approvals.list, laptop)).map((a) => [a._id, a]));
    for (const { approvalId } of [research, given]) {
      expect(byId.get(approvalId)).toMatchObject({ status: "approved", resolvedBy: "policy", resolvedAt: NOW });
    }
    expect(byId.get(waits.approvalId)).toMatchObject({ status: "pending" });
    expect(await errorCode(ofCategory("x", { timeoutMs: -5 }))).toBe("INVALID");
  });

  test("external_api under $0.10 and code_commit with its tests passed are approved at once, by policy", async () => {
    const cheap = await ofCategory("external_api", { costUsd: 0.05 });
    const free = await ofCategory("external_api", { costUsd: 0 });
    const dear = await ofCategory("external_api", { costUsd: 0.5 });
    const atTheLine = await ofCategory("external_api", { costUsd: 0.1 }); // under, not up to
    const unpriced = await ofCategory("external_api");
    const passed = await ofCategory("code_commit", { testsPassed: true });
    const failed = await ofCategory("code_commit", { testsPassed: false });
    const untested = await ofCategory("code_commit");
    const otherCheap = await ofCategory("financial", { costUsd: 0.01, testsPassed: true }); // not its rule
    const byId = new Map((await t.query(api.approvals.list, laptop)).map((a) => [a._id, a]));
    for (const { approvalId } of [cheap, free, passed]) {
      expect(byId.get(approvalId)).toMatchObject({ status: "approved", resolvedBy: "policy", resolvedAt: NOW });
    }
    for (const { approvalId } of [dear, atTheLine, unpriced, failed, untested, otherCheap]) {
      expect(byId.get(approvalId)?.status).toBe("pending");
      expect(byId.get(approvalId)?.resolvedBy).toBeUndefined();
    }
    // What the request said is kept; what it left out stays out.
    expect(byId.get(cheap.approvalId)).toMatchObject({ costUsd: 0.05 });
    expect(byId.get(failed.approvalId)).toMatchObject({ testsPassed: false });
    expect(byId.get(unpriced.approvalId)).not.toHaveProperty("costUsd");
    expect(byId.get(unpriced.approvalId)).not.toHaveProperty("testsPassed");
    // The caller's timeout of 0 still approves whatever the cost; a negative cost is INVALID.
    const given = await ofCategory("external_api", { timeoutMs: 0, costUsd: 5 });
    const after = await t.query(api.approvals.list, { ...laptop, status: "approved" });
    expect(after.find((a) => a._id === given.approvalId)).toMatchObject({ resolvedBy: "policy", costUsd: 5 });
    expect(await errorCode(ofCategory("external_api", { costUsd: -0.01 }))).toBe("INVALID");
  });

  test("expirePending by category: the timeouts table, the default, and the approval's own deadline", async () => {
    const timeoutsMs = { send_message: 60 * 60_000, destructive: 30 * 60_000 };
    const message = await ofCategory("send_message");
    const destructive = await ofCategory("destructive");
    const other = await ofCategory("deploy"); // not in the table: the default
    const deadline = await ofCategory("send_message", { expiresAt: NOW + 10 * 60_000 });
    const sweep = async (minutes: number) => {
      const { expired } = await t.mutation(internal.approvals.expirePending, {
        now: NOW + minutes * 60_000,
        timeoutsMs,
        defaultMs: 45 * 60_000,
      });
      return { expired: expired.map((e) => e.approvalId) };
    };
    expect(await sweep(9)).toEqual({ expired: [] });
    expect(await sweep(10)).toEqual({ expired: [deadline.approvalId] });
    expect(await sweep(30)).toEqual({ expired: [destructive.approvalId] });
    expect(await sweep(45)).toEqual({ expired: [other.approvalId] });
    expect(await sweep(60)).toEqual({ expired: [message.approvalId] });
    const expired = await t.query(api.approvals.list, { ...laptop, status: "expired" });
    expect(expired.find((a) => a._id === message.approvalId)).toMatchObject({ resolvedAt: NOW + 60 * 60_000 });
  });

  test("the cron's defaults: the design's table", async () => {
    const api15 = await ofCategory("external_api");
    vi.setSystemTime(NOW + 15 * 60_000);
    expect(await t.mutation(internal.approvals.expirePending, {})).toMatchObject({ expired: [{ approvalId: api15.approvalId }] });
  });
});
