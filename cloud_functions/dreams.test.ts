/**
 * dreams.ts: the dream cycle's records as the hub keeps them (tests/conformance/test_dream_conformance.py
 * holds both backbones to the same calls): a step hides its members in export and the feed, keeps
 * every episode, and its undo puts back exactly what it changed; a forgotten canonical shows its
 * members again.
 */
import { afterEach, beforeEach, describe, expect, test, vi } from "vitest";
import { api } from "./_generated/api";
import { item } from "./test.fixtures";
import { backend, errorCode, registerSite, type Backend } from "./test.setup";

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
  await t.mutation(api.episodes.bulkSyncEpisodes, { ...laptop, cursor: 3, episodes: [item("1"), item("2"), item("3")] });
  await t.mutation(api.episodes.bulkSyncEpisodes, { ...vm, cursor: 2, episodes: [item("1"), item("2")] });
});
afterEach(() => vi.useRealTimers());

const k = (site: string, sourceId: string) => ({ site, sourceId });
const exported = async (auth: typeof laptop) =>
  (await t.query(api.episodes.listEpisodes, { ...auth, after: null, limit: 100 })).episodes as Record<string, unknown>[];

describe("dreams", () => {
  test("a fold and a supersede hide, keep, link, and undo exactly", async () => {
    const before = await exported(laptop);
    const feedBefore = await t.query(api.episodes.feedEnd, laptop);
    const [fold, sup] = await t.mutation(api.dreams.record, {
      ...laptop,
      run: "dream@2026-01-01T02:00:00Z on laptop",
      steps: [
        { kind: "consolidates", canonical: k("vm", "1"), members: [k("laptop", "1"), k("laptop", "2")], reason: "3 alike" },
        { kind: "supersedes", canonical: k("vm", "2"), members: [k("laptop", "3")], reason: "pool_size: 20 -> 30" },
      ],
    });
    expect(fold).toMatchObject({ kind: "consolidates", canonical: k("vm", "1"), at: NOW, undoneAt: null });
    const after = await exported(laptop);
    expect(after).toHaveLength(before.length);
    expect(after.find((e) => e.sourceId === "1")!.dream).toEqual({ role: "merged", by: "vm:1", step: fold!.stepId });
    expect(after.find((e) => e.sourceId === "3")!.dream).toEqual({ role: "superseded", by: "vm:2", step: sup!.stepId });
    expect(after.map(({ dream: _, ...rest }) => rest)).toEqual(before);
    const changes = await t.query(api.episodes.changes, { ...vm, after: feedBefore, limit: 100 });
    expect(changes.map((c) => `${c.sourceSite}:${c.sourceId}`).sort()).toEqual(["laptop:1", "laptop:2", "laptop:3"]);
    expect(await t.query(api.dreams.links, { ...vm, of: k("vm", "1") })).toEqual([
      { source: k("vm", "1"), target: k("laptop", "1"), kind: "consolidates", stepId: fold!.stepId },
      { source: k("vm", "1"), target: k("laptop", "2"), kind: "consolidates", stepId: fold!.stepId },
    ]);
    expect((await t.query(api.dreams.steps, vm)).map((s) => s.stepId)).toEqual([sup!.stepId, fold!.stepId]);
    // Hidden already: the step is left out.
    expect(await t.mutation(api.dreams.record, { ...laptop, run: "r", steps: [{ kind: "consolidates", canonical: k("vm", "2"), members: [k("laptop", "1")], reason: "again" }] })).toEqual([]);

    vi.setSystemTime(NOW + 1000);
    expect(await t.mutation(api.dreams.undo, { ...vm, stepId: fold!.stepId, by: "ann" })).toMatchObject({ undoneAt: NOW + 1000, undoneBy: "ann" });
    expect(await errorCode(t.mutation(api.dreams.undo, { ...vm, stepId: fold!.stepId, by: "ann" }))).toBe("CONFLICT");
    expect(await errorCode(t.mutation(api.dreams.undo, { ...vm, stepId: "not-an-id", by: "ann" }))).toBe("NOT_FOUND");
    await t.mutation(api.dreams.undo, { ...vm, stepId: sup!.stepId, by: "ann" });
    expect(await exported(laptop)).toEqual(before);
    expect(await t.query(api.dreams.links, { ...vm, of: k("vm", "1") })).toEqual([]);
    expect(await t.query(api.dreams.steps, { ...vm, standingOnly: true })).toEqual([]);
    expect(await t.query(api.dreams.steps, vm)).toHaveLength(2);
  });

  test("bad steps are refused whole", async () => {
    const self = { kind: "consolidates", canonical: k("laptop", "1"), members: [k("laptop", "1")], reason: "self" };
    expect(await errorCode(t.mutation(api.dreams.record, { ...laptop, run: "r", steps: [self] }))).toBe("INVALID");
    const odd = { kind: "merges", canonical: k("laptop", "1"), members: [k("laptop", "2")], reason: "?" };
    expect(await errorCode(t.mutation(api.dreams.record, { ...laptop, run: "r", steps: [odd] }))).toBe("INVALID");
    const gone = { kind: "consolidates", canonical: k("laptop", "1"), members: [k("laptop", "404")], reason: "gone" };
    expect(await t.mutation(api.dreams.record, { ...laptop, run: "r", steps: [gone] })).toEqual([]);
    expect(await errorCode(t.query(api.dreams.steps, { site: "laptop", secret: "wrong" }))).toBe("UNAUTHORIZED");
  });

  test("forgetting a canonical shows its members again", async () => {
    const [step] = await t.mutation(api.dreams.record, {
      ...laptop,
      run: "r",
      steps: [{ kind: "consolidates", canonical: k("laptop", "1"), members: [k("laptop", "2")], reason: "2 alike" }],
    });
    await t.action(api.episodes.forget, { ...laptop, sourceId: "1" });
    const left = await exported(laptop);
    expect(left.map((e) => e.sourceId)).toEqual(["2", "3"]);
    expect(left[0]!.dream).toBeUndefined();
    expect((await t.query(api.dreams.steps, laptop)).map((s) => [s.stepId, s.undoneBy])).toEqual([[step!.stepId, "forget"]]);
  });
});
