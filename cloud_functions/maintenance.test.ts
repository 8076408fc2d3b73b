/** The episode sweeps: vectors for Qdrant, archival of old episodes. */
import { afterEach, beforeEach, describe, expect, test, vi } from "vitest";
import { api, internal } from "./_generated/api";
import { ARCHIVE_AFTER_MS } from "./crons";
import { isMemsync } from "./lib/episodeView";
import { backend, errorCode, registerSite, type Backend } from "./test.setup";
import { item } from "./test.fixtures";

const NOW = 1_770_000_000_000;
let t: Backend;
let laptop: { site: string; secret: string };

beforeEach(async () => {
  vi.useFakeTimers();
  vi.setSystemTime(NOW);
  t = backend();
  laptop = await registerSite(t, "laptop");
});
afterEach(() => vi.useRealTimers());

const push = (episodes: ReturnType<typeof item>[]) =>
  t.mutation(api.episodes.bulkSyncEpisodes, { ...laptop, cursor: 1, episodes });

describe("vectors", () => {
  test("needingVectors lists episodes without a point; recordPointIds takes them off", async () => {
    await push([item("1"), item("2"), item("3")]);
    const waiting = await t.query(internal.episodes.needingVectors, { limit: 2 });
    expect(waiting.map((e) => e.sourceId)).toEqual(["1", "2"]);
    expect(waiting[0]).toMatchObject({ sourceSite: "laptop", task: expect.any(String), metadata: { tool: "bash" } });
    const items = waiting.map((e) => ({ id: e.id, qdrantPointId: `point-${e.sourceId}`, contentHash: e.contentHash }));
    expect(await t.mutation(internal.episodes.recordPointIds, { items })).toEqual({ recorded: 2 });
    expect((await t.query(internal.episodes.needingVectors, { limit: 10 })).map((e) => e.sourceId)).toEqual(["3"]);
  });

  test("an edit needs a new vector; a point for stale content is not recorded", async () => {
    await push([item("1")]);
    const [before] = await t.query(internal.episodes.needingVectors, { limit: 10 });
    await t.mutation(internal.episodes.recordPointIds, { items: [{ id: before.id, qdrantPointId: "p1" }] });
    expect(await t.query(internal.episodes.needingVectors, { limit: 10 })).toEqual([]);
    await push([item("1", { content: "edited" })]);
    expect((await t.query(internal.episodes.needingVectors, { limit: 10 })).map((e) => e.contentHash)).toEqual(["edited"]);
    const stale = { id: before.id, qdrantPointId: "p1", contentHash: before.contentHash };
    expect(await t.mutation(internal.episodes.recordPointIds, { items: [stale] })).toEqual({ recorded: 0 });
  });

  test("recordPointIds refuses more than 500 items", async () => {
    await push([item("1")]);
    const [episode] = await t.query(internal.episodes.needingVectors, { limit: 1 });
    const items = Array.from({ length: 501 }, () => ({ id: episode.id, qdrantPointId: "p" }));
    expect(await errorCode(t.mutation(internal.episodes.recordPointIds, { items }))).toBe("TOO_LARGE");
  });

  test("vectorBacklog (cron qdrant-episode-sync) counts and flags what waits", async () => {
    expect(await t.mutation(internal.episodes.vectorBacklog, {})).toEqual({ backlog: 0, capped: false });
    await push([item("1"), item("2")]);
    expect(await t.mutation(internal.episodes.vectorBacklog, {})).toEqual({ backlog: 2, capped: false });
    const state = await t.run((ctx) => ctx.db.query("alertStates").first());
    expect(state).toMatchObject({ key: "qdrant-backlog", state: "pending" });
  });
});

describe("archiveOld (the cleanup-old-episodes sweep, by hand)", () => {
  test("moves episodes with ts before the cutoff to the archive, oldest first, at most limit a call", async () => {
    const old = NOW - ARCHIVE_AFTER_MS - 1;
    await push([
      item("old1", { fields: { ts: old } }),
      item("old2", { fields: { ts: old - 5 } }),
      item("old3", { fields: { ts: old - 9 } }),
      item("new", { fields: { ts: NOW - 1000 } }),
    ]);
    const first = await t.action(internal.episodes.archiveOld, { olderThanMs: ARCHIVE_AFTER_MS, limit: 2 });
    expect(first).toEqual({ archived: 2, files: 1, more: true, failures: [] });
    const archived = async () =>
      t.run(async (ctx) => (await ctx.db.query("episodes").collect()).filter((e) => isMemsync(e) && e.archived).map((e) => e.sourceId).sort());
    expect(await archived()).toEqual(["old2", "old3"]);
    expect(await t.action(internal.episodes.archiveOld, { cutoff: old + 1, limit: 2 })).toEqual({
      archived: 1,
      files: 1,
      more: false,
      failures: [],
    });
    expect(await archived()).toEqual(["old1", "old2", "old3"]);
    // Archived episodes no longer wait for a vector, and leave the hot export (archive:episodes has them).
    expect((await t.query(internal.episodes.needingVectors, { limit: 10 })).map((e) => e.sourceId)).toEqual(["new"]);
    const { episodes } = await t.query(api.episodes.listEpisodes, { ...laptop, after: null, limit: 10 });
    expect(episodes.map((e) => e.sourceId)).toEqual(["new"]);
    const cold = await t.action(api.archive.episodes, { ...laptop, cursor: null, limit: 10 });
    expect(cold.episodes.map((e) => [e.sourceId, e.archived])).toEqual([
      ["old3", true],
      ["old2", true],
      ["old1", true],
    ]);
  });

  test("exactly one of olderThanMs and cutoff; a limit over 200,000 is INVALID", async () => {
    expect(await errorCode(t.action(internal.episodes.archiveOld, { olderThanMs: 1, limit: 200_001 }))).toBe("INVALID");
    expect(await errorCode(t.action(internal.episodes.archiveOld, { limit: 1 }))).toBe("INVALID");
    expect(await errorCode(t.action(internal.episodes.archiveOld, { olderThanMs: 1, cutoff: 1, limit: 1 }))).toBe("INVALID");
  });
});
