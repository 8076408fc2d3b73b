import { defineSchema, defineTable } from "convex/server";
import { v } from "convex/values";
import { convexTest } from "convex-test";
import { afterEach, beforeEach, describe, expect, test, vi } from "vitest";
import { api, internal } from "./_generated/api";
import type { Doc } from "./_generated/dataModel";
import { ADOPTED_HASH, adoptSeed, epochMs, sameAsSeed, sameValue, seedOf, usablePointId } from "./lib/adoption";
import { isMemsync, type MemsyncEpisode, type SeedEpisode } from "./lib/episodeView";
import { memsyncEpisode, seedEpisode } from "./lib/validators";
import { insertSeed, seedFixtures } from "./test.seed";
import { backend, errorCode, modules, registerSite, type Backend } from "./test.setup";
import { item } from "./test.fixtures";

let t: Backend;
const NOW = 1_770_000_000_000;

beforeEach(() => {
  vi.useFakeTimers();
  vi.setSystemTime(NOW);
  t = backend();
});
afterEach(() => vi.useRealTimers());

const seed = seedFixtures();
const allEpisodes = () => t.run((ctx) => ctx.db.query("episodes").collect());
const byKey = async (site: string, id: string) =>
  (await allEpisodes()).find((d) => d.sourceSite === site && d.sourceId === id)!;

/** Every document's fields but Convex's own, so a document can be compared with a fixture. */
function own(doc: Record<string, unknown>): Record<string, unknown> {
  const { _id: _i, _creationTime: _c, ...rest } = doc;
  return rest;
}

async function adoptAll(limit = 500): Promise<number[]> {
  const batches: number[] = [];
  for (;;) {
    const { adopted, more } = await t.mutation(internal.adopt.adoptEpisodes, { limit });
    batches.push(adopted);
    if (!more) return batches;
  }
}

/** The schema memsync had before the staged one: its own episode shape only, tasks with a site. */
const strictSchema = defineSchema({
  episodes: defineTable(v.object(memsyncEpisode)),
  tasks: defineTable({
    title: v.string(),
    agentName: v.string(),
    site: v.string(),
    status: v.string(),
    assignedTo: v.optional(v.string()),
    approvalId: v.optional(v.string()),
  }),
});

/** The seed design's own schema, as far as these tests need it: its episode shape only. */
const seedSchema = defineSchema({ episodes: defineTable(v.object(seedEpisode)) });

describe("the staged schema", () => {
  test("takes every seed document as the seed wrote it", async () => {
    const counts = await t.run((ctx) => insertSeed(ctx.db));
    expect(counts).toEqual({ episodes: 7, approvals: 2, tasks: 4, agents: 2, syncCursors: 2, collaborators: 2 });
    const stored = await allEpisodes();
    expect(stored.map(own)).toEqual(seed.episodes);
  });

  test("the schema before it refused the seed's episodes and tasks", async () => {
    const strict = convexTest(strictSchema, modules);
    const episode = seed.episodes[0]!;
    await expect(strict.run((ctx) => ctx.db.insert("episodes", episode as never))).rejects.toThrow(/metadata|identityHash/);
    const task = seed.tasks[2]!;
    await expect(strict.run((ctx) => ctx.db.insert("tasks", task as never))).rejects.toThrow(/site/);
  });

  test("a push to a key still holding a seed document is refused: adopt first", async () => {
    await t.run((ctx) => insertSeed(ctx.db));
    const laptop = await registerSite(t, "laptop");
    const push = t.mutation(api.episodes.bulkSyncEpisodes, { ...laptop, cursor: 1, episodes: [item("1")] });
    expect(await errorCode(push)).toBe("NOT_ADOPTED");
    // A key the seed never had goes in as ever.
    const other = await t.mutation(api.episodes.bulkSyncEpisodes, { ...laptop, cursor: 9, episodes: [item("9")] });
    expect(other.results[0]!.outcome).toBe("inserted");
  });
});

describe("the migration", () => {
  beforeEach(async () => {
    await t.run((ctx) => insertSeed(ctx.db));
  });

  test("adopts in batches, resumes where it stopped, and a second run changes nothing", async () => {
    expect(await adoptAll(3)).toEqual([3, 3, 1]);
    const once = (await allEpisodes()).map(own);
    expect(once.every((doc) => doc.archived === false)).toBe(true);
    vi.setSystemTime(NOW + 60_000);
    expect(await adoptAll(3)).toEqual([0]);
    expect((await allEpisodes()).map(own)).toEqual(once);
  });

  test("fills memsync's fields, keeps the content, the metadata and the point ids", async () => {
    await adoptAll();
    const fixture = seed.episodes[0]! as Record<string, unknown>;
    const doc = await byKey("laptop", "1");
    expect(isMemsync(doc)).toBe(true);
    if (!isMemsync(doc)) return;
    expect(doc).toMatchObject({
      identityHash: ADOPTED_HASH,
      contentHash: ADOPTED_HASH,
      task: fixture.task,
      ts: (fixture.ts as number) * 1000,
      createdAt: fixture.createdAt,
      syncedAt: Math.floor(doc._creationTime),
      updatedAt: NOW,
      archived: false,
      qdrantPointId: fixture.qdrantPointId,
      seedPointId: fixture.qdrantPointId,
      latencyMs: null,
      agentPlatform: null,
    });
    // As memsync's push writes an object: JSON.stringify of it as Convex hands it over (keys sorted).
    expect(doc.metadataJson).toBe('{"agent_name":"claude","attempt":1,"model":{"name":"sonnet","temperature":0.2}}');
    expect(JSON.parse(doc.metadataJson!)).toEqual(fixture.metadata);
    expect(doc.adopted?.fields).toEqual(["sessionId", "task", "input", "output", "critique", "reward", "success", "tags", "metadata", "ts", "createdAt"]);
    // A point id memsync's index cannot write (not a UUID) is kept as the seed had it, and not carried.
    const odd = await byKey("laptop", "4");
    expect(odd).toMatchObject({ qdrantPointId: "not-a-uuid-41" });
    expect("seedPointId" in odd).toBe(false);
  });

  test("the change feed carries every adopted episode once, with the seed's point id", async () => {
    await adoptAll(2);
    const laptop = await registerSite(t, "laptop");
    const feed = await t.query(api.episodes.changes, { ...laptop, after: 0, limit: 100 });
    expect(feed.map((c) => `${c.sourceSite}:${c.sourceId}`).sort()).toEqual(
      seed.episodes.map((e) => `${e.sourceSite}:${e.sourceId}`).sort(),
    );
    const first = feed.find((c) => c.sourceSite === "laptop" && c.sourceId === "1")!;
    expect(first.seedPointId).toBe(seed.episodes[0]!.qdrantPointId);
    expect(first.episode?.metadata).toEqual(seed.episodes[0]!.metadata);
    expect(feed.find((c) => c.sourceSite === "vm" && c.sourceId === "2")!.seedPointId).toBeUndefined();
  });

  test("the seed's tasks get their site from their approval or their agent", async () => {
    const placed = await t.mutation(internal.adopt.placeTasks, { after: null, limit: 500 });
    expect(placed).toEqual({ placed: 3, unplaced: 1, next: null });
    const tasks = await t.run((ctx) => ctx.db.query("tasks").collect());
    expect(Object.fromEntries(tasks.map((task) => [task.title, task.site ?? null]))).toEqual({
      "deploy billing api to staging": "laptop",
      "prune old backups": "vm",
      "write the runbook": "vm",
      "triage the flaky test": null,
    });
  });

  test("a site's first push: the same content is unchanged and completes the document; an edit updates", async () => {
    await adoptAll();
    const laptop = await registerSite(t, "laptop");
    const fixture = seed.episodes[0]! as Record<string, unknown>;
    const same = item("1", {
      identity: "id-1",
      content: "hash-1",
      fields: {
        sessionId: fixture.sessionId as string,
        task: fixture.task as string,
        input: fixture.input as string,
        output: fixture.output as string,
        critique: fixture.critique as string,
        reward: 1,
        success: true,
        tags: ["seed"],
        // Python's canonical JSON: sorted keys, no spaces; the same values.
        metadata: undefined,
        metadataJson: '{"agent_name":"claude","attempt":1,"model":{"name":"sonnet","temperature":0.2}}',
        ts: (fixture.ts as number) * 1000,
        createdAt: fixture.createdAt as number,
        latencyMs: 1200,
      },
    });
    const edited = { ...same, sourceId: "3", identityHash: "id-3", contentHash: "hash-3" };
    const { results } = await t.mutation(api.episodes.bulkSyncEpisodes, { ...laptop, cursor: 3, episodes: [same, edited] });
    expect(results.map((r) => r.outcome)).toEqual(["unchanged", "updated"]);
    const doc = await byKey("laptop", "1");
    expect(doc).toMatchObject({ identityHash: "id-1", contentHash: "hash-1", latencyMs: 1200, qdrantPointId: fixture.qdrantPointId });
    expect("adopted" in doc).toBe(false);
    const again = await t.mutation(api.episodes.bulkSyncEpisodes, { ...laptop, cursor: 3, episodes: [same] });
    expect(again.results[0]!.outcome).toBe("unchanged");
    // Nothing was inserted: the seed's keys are the keys.
    expect((await allEpisodes()).length).toBe(seed.episodes.length);
  });

  test("undo: every hot episode back to the seed's shape, which the seed's schema takes again", async () => {
    await t.mutation(internal.adopt.placeTasks, { after: null, limit: 500 });
    await adoptAll();
    const laptop = await registerSite(t, "laptop");
    await t.mutation(api.episodes.bulkSyncEpisodes, { ...laptop, cursor: 9, episodes: [item("9")] });
    const undo = [];
    for (;;) {
      const step = await t.mutation(internal.adopt.undoEpisodes, { limit: 3 });
      undo.push(step.undone);
      if (!step.more) break;
    }
    expect(undo.reduce((a, b) => a + b, 0)).toBe(seed.episodes.length + 1);
    await t.mutation(internal.adopt.unplaceTasks, { after: null, limit: 500 });
    const docs = (await allEpisodes()).map(own);
    // The adopted ones, never pushed since, are exactly the seed's documents again.
    for (const fixture of seed.episodes) {
      expect(docs).toContainEqual(fixture);
    }
    const old = convexTest(seedSchema, modules);
    for (const doc of docs) await old.run((ctx) => ctx.db.insert("episodes", doc as never));
    const tasks = await t.run((ctx) => ctx.db.query("tasks").collect());
    expect(tasks.every((task) => task.site === undefined)).toBe(true);
  });

  test("a batch refuses a limit out of range", async () => {
    expect(await errorCode(t.mutation(internal.adopt.adoptEpisodes, { limit: 0 }))).toBe("INVALID");
    expect(await errorCode(t.mutation(internal.adopt.undoEpisodes, { limit: 501 }))).toBe("INVALID");
  });

  test("survey counts documents by shape without changing any", async () => {
    const before = (await allEpisodes()).map(own);
    const page = await t.query(internal.adopt.survey, { table: "episodes", after: null, limit: 500 });
    expect(page).toEqual({ shapes: { seed: 7 }, seedSites: ["laptop", "vm"], seedPoints: 3, next: null });
    expect((await allEpisodes()).map(own)).toEqual(before);
    await adoptAll(4);
    const after = await t.query(internal.adopt.survey, { table: "episodes", after: null, limit: 500 });
    expect(after.shapes).toEqual({ adopted: 7 });
    expect(await t.query(internal.adopt.unregistered, { sites: ["laptop", "vm"] })).toEqual(["laptop", "vm"]);
  });
});

describe("the pure rules", () => {
  const base = { _id: "x" as never, _creationTime: 1_735_689_000_123.5, sourceSite: "s", sourceId: "1", sessionId: "a", task: "b" };

  test.each([
    [1_735_689_600, 1_735_689_600_000],
    [1_735_689_600.25, 1_735_689_600_250],
    [1_735_689_600_000, 1_735_689_600_000],
  ])("epochMs(%s) = %s (seconds are multiplied, ms kept)", (input, expected) => {
    expect(epochMs(input)).toBe(expected);
  });

  test.each([
    ["7B0C0F5E-3F5C-4F0E-9A57-1C9A3E9D2A11", "7b0c0f5e-3f5c-4f0e-9a57-1c9a3e9d2a11"],
    ["12345", undefined],
    [undefined, undefined],
  ])("usablePointId(%s) = %s", (input, expected) => {
    expect(usablePointId(input)).toBe(expected);
  });

  test.each([
    [{ a: 1, b: [1, { c: null }] }, { b: [1, { c: null }], a: 1 }, true],
    [{ a: 1 }, { a: 1, b: 2 }, false],
    [[1, 2], [2, 1], false],
    [1, 1.0, true],
    [null, {}, false],
    ["1", 1, false],
  ])("sameValue(%j, %j) = %s", (a, b, expected) => {
    expect(sameValue(a, b)).toBe(expected);
  });

  const adopted = (doc: Partial<SeedEpisode>) => adoptSeed({ ...base, createdAt: 1_735_689_600_000, ...doc } as SeedEpisode, NOW, 1);
  const pushed = (doc: MemsyncEpisode, over: Record<string, unknown> = {}) => ({
    ...(doc as unknown as Record<string, unknown>),
    metadataJson: doc.metadataJson!,
    ...over,
  });

  test.each([
    ["the same", {}, {}, true],
    ["metadata in another key order", { metadata: { b: 1, a: 2 } }, { metadataJson: '{"a":2,"b":1}' }, true],
    ["another output", { output: "x" }, { output: "y" }, false],
    ["a field the seed never had", {}, { latencyMs: 5, agentPlatform: "p" }, true],
    ["tags", { tags: ["a"] }, { tags: ["a", "b"] }, false],
    ["a reward of 1 against 1.0", { reward: 1 }, { reward: 1.0 }, true],
    ["ts in seconds against ms", { ts: 1_735_689_600 }, { ts: 1_735_689_600_000 }, true],
  ])("sameAsSeed: %s", (_, seedDoc, over, expected) => {
    const doc = adopted(seedDoc as Partial<SeedEpisode>) as unknown as MemsyncEpisode;
    expect(sameAsSeed(doc, pushed(doc, over), doc.adopted!.fields)).toBe(expected);
  });

  test("adoptSeed then seedOf gives the seed document back", () => {
    const doc = { ...base, createdAt: 1_735_689_600_000, ts: 1_735_689_600, metadata: { z: 1, a: [1] }, reward: null, qdrantPointId: "p" };
    const back = seedOf({ ...base, ...adoptSeed(doc as SeedEpisode, NOW, 1) } as never);
    const { _id: _i, _creationTime: _c, ...fields } = doc;
    expect(back).toEqual(fields);
  });

  test("seedOf an episode memsync inserted: every seed field, no point id, metadata memsync cannot carry as text inside", () => {
    const doc = {
      ...adoptSeed({ ...base, createdAt: 1 } as SeedEpisode, NOW, 1),
      adopted: undefined,
      seedPointId: undefined,
      qdrantPointId: "memsync-point",
      metadataJson: '{"$weird":1}',
    } as unknown as Doc<"episodes">;
    const back = seedOf(doc as never) as Record<string, unknown>;
    expect(back.metadata).toEqual({ _memsync: { metadataJson: '{"$weird":1}' } });
    expect("qdrantPointId" in back).toBe(false);
    expect(Object.keys(back)).toEqual(expect.arrayContaining(["input", "output", "critique", "reward", "success", "tags"]));
  });
});
