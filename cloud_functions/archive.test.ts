/** The cold archive (archive.ts, lib/archiveWrite.ts): archive + hot = all at every step. */
import { afterEach, beforeEach, describe, expect, test, vi } from "vitest";
import { gunzipSync } from "node:zlib";
import { api, internal } from "./_generated/api";
import type { Id } from "./_generated/dataModel";
import { isoWeek, weekRange } from "./lib/archiveFormat";
import { backend, errorCode, registerSite, type Backend } from "./test.setup";
import { item, realisticItem } from "./test.fixtures";

const NOW = 1_770_000_000_000;
const DAY = 24 * 60 * 60 * 1000;
const W1 = weekRange("2025-W02").start + DAY; // a Tuesday
const W2 = W1 + 7 * DAY;
const CUTOFF = W2 + 7 * DAY;
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

const push = (episodes: ReturnType<typeof item>[], auth = laptop) =>
  t.mutation(api.episodes.bulkSyncEpisodes, { ...auth, cursor: 1, episodes });
const archive = (limit = 1000) => t.action(internal.episodes.archiveOld, { cutoff: CUTOFF, limit, orphanGraceMs: 0 });
const ep = (id: string, ts: number, output = `text of ${id}`, content?: string) =>
  item(id, { content: content ?? `content-${id}-${output}`, fields: { ts, output } });

async function hotKeys(auth = laptop): Promise<string[]> {
  const out: string[] = [];
  let after: string | null = null;
  do {
    const page: { episodes: { sourceId: string }[]; next: string | null } = await t.query(api.episodes.listEpisodes, {
      ...auth,
      after,
      limit: 2,
    });
    out.push(...page.episodes.map((e) => e.sourceId));
    after = page.next;
  } while (after !== null);
  return out.sort();
}

async function coldEpisodes(auth = laptop) {
  const out: { sourceId: string; output: string | null; archived?: true }[] = [];
  let cursor: string | null = null;
  do {
    const page: { episodes: typeof out; next: string | null } = await t.action(api.archive.episodes, {
      ...auth,
      cursor,
      limit: 2,
    });
    out.push(...page.episodes);
    cursor = page.next;
  } while (cursor !== null);
  return out;
}

/** Every key once, hot or archived, never both, never neither. */
async function expectAll(keys: string[], auth = laptop) {
  const hot = await hotKeys(auth);
  const cold = (await coldEpisodes(auth)).map((e) => e.sourceId);
  expect(new Set(cold).size, "archived twice").toBe(cold.length);
  expect(hot.filter((k) => cold.includes(k)), "hot and archived at once").toEqual([]);
  expect([...hot, ...cold].sort()).toEqual([...keys].sort());
  return { hot, cold };
}

async function blobText(storageId: Id<"_storage">): Promise<string | null> {
  return await t.run(async (ctx) => {
    const blob = await ctx.storage.get(storageId);
    return blob === null ? null : new TextDecoder().decode(gunzipSync(new Uint8Array(await blob.arrayBuffer())));
  });
}

const files = (auth = laptop, extra: { ofSite?: string; sinceMs?: number; untilMs?: number } = {}) =>
  t.query(api.archive.files, { ...auth, ...extra });

describe("archiving", () => {
  test("old episodes move to one verified gzip file per site and week; archive + hot = all at every step", async () => {
    await push([ep("1", W1), ep("2", W1 + 1), ep("3", W2), ep("4", W2), ep("5", NOW)]);
    await push([ep("1", W1)], vm);
    await expectAll(["1", "2", "3", "4", "5"]);
    expect(await t.query(api.archive.lastRun, laptop)).toBeNull();

    expect(await archive()).toEqual({ archived: 5, files: 3, more: false, failures: [] });
    const { hot, cold } = await expectAll(["1", "2", "3", "4", "5"]);
    expect(hot).toEqual(["5"]);
    expect(cold).toEqual(["1", "2", "3", "4"]);
    const mine = await files(laptop, { ofSite: "laptop" });
    expect(mine.map((f) => [f.week, f.count, f.firstId, f.lastId, f.fromTs, f.toTs])).toEqual([
      [isoWeek(W1), 2, "1", "2", W1, W1 + 1],
      [isoWeek(W2), 2, "3", "4", W2, W2],
    ]);
    expect((await files()).map((f) => `${f.site} ${f.week}`)).toEqual([
      `laptop ${isoWeek(W1)}`,
      `laptop ${isoWeek(W2)}`,
      `vm ${isoWeek(W1)}`,
    ]);
    expect((await files(laptop, { ofSite: "laptop", sinceMs: W1 + 2 })).map((f) => f.week)).toEqual([isoWeek(W2)]);
    expect((await files(laptop, { ofSite: "laptop", untilMs: W1 + 1 })).map((f) => f.week)).toEqual([isoWeek(W1)]);

    // The file is plain gzip JSON Lines, in (ts, sourceId) order, as the export prints them.
    const text = (await blobText(mine[0].storageId))!;
    const lines = text.trimEnd().split("\n").map((l) => JSON.parse(l));
    expect(lines.map((l) => l.sourceId)).toEqual(["1", "2"]);
    expect(lines[0]).toMatchObject({ sourceSite: "laptop", output: "text of 1", metadata: { tool: "bash" } });
    expect(lines[0]).not.toHaveProperty("archived");
    const digest = await t.run(async (ctx) => {
      const blob = await ctx.storage.get(mine[0].storageId);
      const bytes = await crypto.subtle.digest("SHA-256", await blob!.arrayBuffer());
      return Array.from(new Uint8Array(bytes), (b) => b.toString(16).padStart(2, "0")).join("");
    });
    expect(digest).toBe(mine[0].sha256);

    // The bodies left the table; keys, hashes and times stayed.
    const stub = await t.run(async (ctx) => (await ctx.db.query("episodes").collect()).find((e) => e.sourceSite === "laptop" && e.sourceId === "1")!);
    expect(stub).toMatchObject({ archived: true, ts: W1, contentHash: "content-1-text of 1" });
    expect(stub.output).toBeUndefined();
    expect(stub.task).toBeUndefined();
    const cold1 = (await coldEpisodes()).find((e) => e.sourceId === "1")!;
    expect(cold1).toMatchObject({ output: "text of 1", archived: true });

    const run = await t.query(api.archive.lastRun, vm);
    expect(run).toEqual({ at: NOW, archived: 5, files: 3 });
    expect((await t.action(api.archive.verify, { ...laptop })).map((c) => c.problem)).toEqual([null, null, null]);
  });

  test("archiving is a change; the same content pushed again is unchanged, an edit is hot again", async () => {
    await push([ep("1", W1), ep("2", W1)]);
    await archive();
    const feed = await t.query(api.episodes.changes, { ...laptop, after: 2, limit: 10 });
    expect(feed.map((c) => [c.sourceId, c.episode, c.archived])).toEqual([
      ["1", null, true],
      ["2", null, true],
    ]);
    const again = await push([ep("1", W1), ep("2", W1)]);
    expect(again.results.map((r) => r.outcome)).toEqual(["unchanged", "unchanged"]);
    const edited = await push([ep("1", W1, "edited")]);
    expect(edited.results.map((r) => r.outcome)).toEqual(["updated"]);
    const { hot } = await expectAll(["1", "2"]);
    expect(hot).toEqual(["1"]);
    const [last] = (await t.query(api.episodes.changes, { ...laptop, after: 4, limit: 10 })).slice(-1);
    expect(last).toMatchObject({ sourceId: "1", archived: false, episode: { output: "edited" } });

    // Archived again: the week's file is rewritten with the newer copy, once, and the old blob goes.
    const [before] = await files();
    expect(await archive()).toMatchObject({ archived: 1, files: 1 });
    const [after] = await files();
    expect(after.count).toBe(2);
    expect(after.storageId).not.toBe(before.storageId);
    expect(await blobText(before.storageId)).toBeNull();
    expect((await coldEpisodes()).find((e) => e.sourceId === "1")!.output).toBe("edited");
  });

  test("a blob stored but never committed loses and duplicates nothing, and the next run completes", async () => {
    await push([ep("1", W1), ep("2", W1)]);
    // The run died after storing its file: a blob nothing names (the file it would have written).
    const orphan = await t.run(async (ctx) => ctx.storage.store(new Blob([new Uint8Array([31, 139, 8, 0])])));
    expect(await files()).toEqual([]);
    await expectAll(["1", "2"]);
    expect(await hotKeys()).toEqual(["1", "2"]);
    vi.setSystemTime(NOW + 60_000); // the next run, later
    expect(await archive()).toMatchObject({ archived: 2, files: 1, failures: [] });
    await expectAll(["1", "2"]);
    expect(await t.run(async (ctx) => ctx.db.system.get(orphan))).toBeNull();
    expect((await files())[0].count).toBe(2);
  });

  test("an episode edited between read and commit stays hot; one forgotten meanwhile is left out", async () => {
    await push([ep("1", W1), ep("2", W1), ep("3", W1)]);
    const { episodes: batch } = await t.query(internal.archive.oldBatch, { cutoff: CUTOFF, afterTs: null, skip: [], limit: 10 });
    await push([ep("1", W1, "edited meanwhile")]);
    await t.action(api.episodes.forget, { ...laptop, sourceId: "3" });
    const done = await t.action(internal.archive.rewrite, {
      site: "laptop",
      week: isoWeek(W1),
      added: batch.map((b) => ({ id: b.id, contentHash: b.contentHash, record: b.record })),
    });
    expect(done).toMatchObject({ written: true, stripped: 1 });
    const { hot, cold } = await expectAll(["1", "2"]);
    expect(hot).toEqual(["1"]);
    expect(cold).toEqual(["2"]);
    const [file] = await files();
    expect(await blobText(file.storageId)).not.toContain("text of 3");
  });
});

describe("verify, restore, forget", () => {
  test("verify finds a damaged blob, a missing key, and passes a sound file", async () => {
    await push([ep("1", W1), ep("2", W2)]);
    await archive();
    const [w1, w2] = await files();
    // Replace the first file's blob with other bytes under the same row.
    await t.run(async (ctx) => {
      const other = await ctx.storage.store(new Blob([new TextEncoder().encode("not the file")]));
      const row = (await ctx.db.query("archiveFiles").collect()).find((f) => f.week === w1.week)!;
      await ctx.db.patch(row._id, { storageId: other });
    });
    const checks = await t.action(api.archive.verify, { ...laptop, ofSite: "laptop" });
    expect(checks[0].problem).toMatch(/its bytes changed/);
    expect(checks[1].problem).toBeNull();
    expect(checks[1].file.week).toBe(w2.week);
    // An archived key of the week that the file does not hold.
    await t.run(async (ctx) => {
      const doc = (await ctx.db.query("episodes").collect()).find((e) => e.sourceId === "2")!;
      await ctx.db.insert("episodes", { ...doc, _id: undefined, _creationTime: undefined, sourceId: "ghost" } as never);
    });
    const again = await t.action(api.archive.verify, { ...laptop, ofSite: "laptop", sinceMs: W2 });
    expect(again.map((c) => c.problem)).toEqual([expect.stringMatching(/1 archived episodes of its week are not in it/)]);
  });

  test("restore brings the bodies back hot, once; the files stay", async () => {
    await push([ep("1", W1), ep("2", W1), ep("3", W2)]);
    await archive();
    expect(await t.action(api.archive.restore, { ...laptop, untilMs: W2 })).toEqual({ restored: 2 });
    expect(await t.action(api.archive.restore, { ...laptop, untilMs: W2 })).toEqual({ restored: 0 });
    const { hot, cold } = await expectAll(["1", "2", "3"]);
    expect(hot).toEqual(["1", "2"]);
    expect(cold).toEqual(["3"]);
    const { episodes } = await t.query(api.episodes.listEpisodes, { ...laptop, after: null, limit: 10 });
    expect(episodes.find((e) => e.sourceId === "1")).toMatchObject({ output: "text of 1", metadata: { tool: "bash" } });
    expect((await files()).length).toBe(2);
    // A restore is a change, with the episode.
    const feed = await t.query(api.episodes.changes, { ...laptop, after: 0, limit: 20 });
    expect(feed[feed.length - 1]).toMatchObject({ archived: false, episode: { output: expect.any(String) } });
    expect(await t.action(api.archive.restore, { ...vm })).toEqual({ restored: 0 });
  });

  test("forgetting an archived episode rewrites its file without it; the old blob goes; an emptied file goes", async () => {
    await push([ep("1", W1, "secret one"), ep("2", W1), ep("3", W2, "secret three")]);
    await archive();
    const [w1, w2] = await files();
    expect(await t.action(api.episodes.forget, { ...laptop, sourceId: "1" })).toEqual({ deleted: true, archiveWeek: w1.week });
    const [w1After] = await files();
    expect(w1After.count).toBe(1);
    expect(await blobText(w1.storageId)).toBeNull();
    expect(await blobText(w1After.storageId)).not.toContain("secret one");
    await expectAll(["2", "3"]);
    expect((await push([ep("1", W1, "secret one")])).results[0]).toMatchObject({ outcome: "rejected", reason: "forgotten" });
    // The last episode of a week: its file and row go.
    expect(await t.action(api.episodes.forget, { ...laptop, sourceId: "3" })).toEqual({ deleted: true, archiveWeek: w2.week });
    expect((await files()).map((f) => f.week)).toEqual([w1.week]);
    expect(await blobText(w2.storageId)).toBeNull();
    expect(await t.action(api.episodes.forget, { ...laptop, sourceId: "3" })).toEqual({ deleted: false, archiveWeek: null });
    expect((await t.action(api.archive.verify, laptop)).map((c) => c.problem)).toEqual([null]);
    const tombstones = await t.run(async (ctx) => ctx.db.query("tombstones").collect());
    expect(tombstones.map((s) => s.archiveWeek)).toEqual([undefined, undefined]);
  });

  test("a forget that died before its rewrite is finished by the next run", async () => {
    await push([ep("1", W1, "secret one"), ep("2", W1)]);
    await archive();
    await t.mutation(internal.episodes.forgetKey, { sourceSite: "laptop", sourceId: "1" });
    const [file] = await files();
    expect(await blobText(file.storageId)).toContain("secret one");
    await archive();
    const [after] = await files();
    expect(after.count).toBe(1);
    expect(await blobText(after.storageId)).not.toContain("secret one");
  });

  test("forgetAny needs the admin: internal, and forgets any site's episode, archived too", async () => {
    await push([ep("1", W1, "vm's secret")], vm);
    await archive();
    // Not public: a site cannot call it.
    expect(Object.keys(api.episodes)).not.toContain("forgetAny");
    expect(await t.action(api.episodes.forget, { ...laptop, sourceId: "1" })).toEqual({ deleted: false, archiveWeek: null });
    expect(await t.action(internal.episodes.forgetAny, { sourceSite: "vm", sourceId: "1" })).toEqual({
      deleted: true,
      archiveWeek: isoWeek(W1),
    });
    expect(await files()).toEqual([]);
    expect(await coldEpisodes(vm)).toEqual([]);
  });

  test("every archive function needs the site's secret; episodes' limit is checked", async () => {
    const wrong = { site: "laptop", secret: "nope" };
    expect(await errorCode(t.query(api.archive.files, wrong))).toBe("UNAUTHORIZED");
    expect(await errorCode(t.query(api.archive.lastRun, wrong))).toBe("UNAUTHORIZED");
    expect(await errorCode(t.action(api.archive.verify, wrong))).toBe("UNAUTHORIZED");
    expect(await errorCode(t.action(api.archive.restore, wrong))).toBe("UNAUTHORIZED");
    expect(await errorCode(t.action(api.archive.episodes, { ...wrong, cursor: null, limit: 1 }))).toBe("UNAUTHORIZED");
    expect(await errorCode(t.action(api.episodes.forget, { ...wrong, sourceId: "1" }))).toBe("UNAUTHORIZED");
    expect(await errorCode(t.action(api.archive.episodes, { ...laptop, cursor: null, limit: 0 }))).toBe("INVALID");
  });

  test("the ISO week of a ts, UTC", () => {
    expect(isoWeek(Date.UTC(2026, 1, 16))).toBe("2026-W08");
    expect(isoWeek(Date.UTC(2021, 0, 3))).toBe("2020-W53");
    expect(isoWeek(Date.UTC(2024, 11, 30))).toBe("2025-W01");
    expect(isoWeek(1_000_000)).toBe("1970-W01");
    expect(weekRange("2026-W08").start).toBe(Date.UTC(2026, 1, 16));
  });
});

describe("archive:records", () => {
  const records = (keys: { sourceSite: string; sourceId: string }[], auth = vm) => t.action(api.archive.records, { ...auth, keys });
  const key = (sourceId: string, sourceSite = "laptop") => ({ sourceSite, sourceId });

  test("any site reads any site's archived records by key, each as archive:episodes has it", async () => {
    await push([ep("1", W1), ep("2", W1), ep("4", W2), ep("hot", NOW), ep("edited", W1), ep("changed", W2)]);
    await push([ep("1", W1, "vm's own")], vm);
    await archive();
    await push([ep("edited", W1, "edited after archiving")]); // hot again, then archived with its new copy
    await archive();
    // Archived, but the row's contentHash is no longer the file copy's.
    await t.run(async (ctx) => {
      const doc = (await ctx.db.query("episodes").collect()).find((e) => e.sourceId === "changed")!;
      await ctx.db.patch(doc._id, { contentHash: "not the file's" });
    });

    const cold = await coldEpisodes();
    const answer = await records(
      [key("1"), key("2"), key("4"), key("hot"), key("edited"), key("changed"), key("nope"), key("1", "nowhere"), key("1", "vm"), key("1")],
      vm,
    );
    expect(answer.unread).toEqual([]);
    const got = new Map(answer.records.map((r) => [`${r.sourceSite}:${r.sourceId}`, r]));
    expect([...got.keys()].sort()).toEqual(["laptop:1", "laptop:2", "laptop:4", "laptop:edited", "vm:1"]);
    for (const id of ["1", "2", "4", "edited"]) expect(got.get(`laptop:${id}`)).toEqual(cold.find((e) => e.sourceId === id));
    expect(got.get("laptop:1")).toMatchObject({ output: "text of 1", archived: true, metadata: { tool: "bash" } });
    expect(got.get("laptop:edited")!.output).toBe("edited after archiving");
    expect(got.get("vm:1")).toMatchObject({ output: "vm's own", archived: true });
    // The owner reads them too; no keys, no records.
    expect((await records([key("2")], laptop)).records.map((r) => r.sourceId)).toEqual(["2"]);
    expect(await records([], laptop)).toEqual({ records: [], unread: [] });
  });

  test("a restored key is absent; an edit after archiving (another contentHash, hot) is absent", async () => {
    await push([ep("1", W1), ep("2", W1)]);
    await archive();
    await push([ep("2", W1, "edited")]);
    expect((await records([key("1"), key("2")])).records.map((r) => r.sourceId)).toEqual(["1"]);
    await t.action(api.archive.restore, laptop);
    expect(await records([key("1"), key("2")])).toEqual({ records: [], unread: [] });
  });

  test("an answer stops at 8 MiB; the keys left are unread, and asked again they come", async () => {
    const big = (i: number) => ep(String(i), W1 + i, `${i} `.padEnd(900_000, "x"), `content-${i}`);
    for (let i = 0; i < 12; i += 3) await push([big(i), big(i + 1), big(i + 2)]);
    expect(await archive()).toMatchObject({ archived: 12, failures: [] });
    const keys = Array.from({ length: 12 }, (_, i) => key(String(i)));
    const first = await records(keys);
    expect(first.records.length).toBeGreaterThan(0);
    expect(first.unread.length).toBeGreaterThan(0);
    expect(first.records.length + first.unread.length).toBe(12);
    const second = await records(first.unread);
    expect(second.unread).toEqual([]);
    const all = [...first.records, ...second.records];
    expect(all.map((r) => r.sourceId).sort()).toEqual(keys.map((k) => k.sourceId).sort());
    expect(all.every((r) => r.output!.length === 900_000 && r.archived === true)).toBe(true);
  });

  test("each file is read once a call; more than 500 keys is INVALID; a wrong secret is refused", async () => {
    await push([ep("1", W1), ep("2", W1), ep("3", W2)]);
    await archive();
    const plan = await t.query(internal.archive.recordsPlan, { ...vm, keys: [key("1"), key("3"), key("2"), key("1")] });
    expect(plan.map((p) => [p.site, p.keys.map((k) => k.sourceId)])).toEqual([
      ["laptop", ["1", "2"]],
      ["laptop", ["3"]],
    ]);
    const many = Array.from({ length: 501 }, (_, i) => key(String(i)));
    expect(await errorCode(records(many))).toBe("INVALID");
    expect((await records(many.slice(0, 500))).records.map((r) => r.sourceId).sort()).toEqual(["1", "2", "3"]);
    expect(await errorCode(records([key("1")], { site: "vm", secret: "nope" }))).toBe("UNAUTHORIZED");
    expect(await errorCode(t.action(api.archive.records, { site: "vm", keys: [key("1")] }))).toBe("UNAUTHORIZED");
    expect(await errorCode(records(many, { site: "vm", secret: "nope" }))).toBe("UNAUTHORIZED");
  });
});

describe("bounds", () => {
  test("archive:episodes pages inside a file and across files", async () => {
    await push([1, 2, 3, 4, 5].map((i) => ep(String(i), W1 + i)).concat([ep("6", W2), ep("7", W2)]));
    await archive();
    const pages: string[][] = [];
    let cursor: string | null = null;
    do {
      const page: { episodes: { sourceId: string }[]; next: string | null } = await t.action(api.archive.episodes, {
        ...laptop,
        cursor,
        limit: 2,
      });
      pages.push(page.episodes.map((e) => e.sourceId));
      cursor = page.next;
    } while (cursor !== null);
    expect(pages).toEqual([["1", "2"], ["3", "4"], ["5", "6"], ["7"]]);
  });

  test("archive:episodes carries an archived episode's approval decision, as export does", async () => {
    await push([ep("1", W1), ep("2", W1 + 1)]);
    // internal: approved by the policy at once, and the episode follows.
    const about = { agentName: "claude", actionType: "internal", priority: "normal" as const, reviewers: [] };
    await t.mutation(api.approvals.create, { ...laptop, ...about, expiresAt: NOW + 60_000, sourceId: "1" });
    await archive();
    const cold = await coldEpisodes();
    expect(cold.map((e) => [e.sourceId, (e as { approvalStatus?: string }).approvalStatus])).toEqual([
      ["1", "approved"],
      ["2", undefined],
    ]);
  });

  test("a run of 450 realistic episodes commits within Convex's transaction limits", async () => {
    const tl = backend({ transactionLimits: true });
    const site = await registerSite(tl, "laptop");
    for (let start = 0; start < 450; start += 150) {
      const items = Array.from({ length: 150 }, (_, i) => {
        const one = realisticItem(String(start + i));
        return { ...one, fields: { ...one.fields, ts: W1 + start + i } };
      });
      await tl.mutation(api.episodes.bulkSyncEpisodes, { ...site, cursor: 1, episodes: items });
    }
    const run = await tl.action(internal.episodes.archiveOld, { cutoff: CUTOFF, limit: 1000, orphanGraceMs: 0 });
    // Three batches of at most 200: the week's file is written, then rewritten twice with more.
    expect(run).toEqual({ archived: 450, files: 3, more: false, failures: [] });
    const [file] = await tl.query(api.archive.files, site);
    expect(file.count).toBe(450);
    expect((await tl.action(api.archive.verify, site)).map((c) => c.problem)).toEqual([null]);
    expect(await tl.action(api.archive.restore, site)).toEqual({ restored: 450 });
  });
});

test("rows archived before the cold archive (bodies still in the table) are unmarked, then archived properly", async () => {
  await push([ep("1", W1), ep("2", W1)]);
  await t.run(async (ctx) => {
    for (const doc of await ctx.db.query("episodes").collect()) await ctx.db.patch(doc._id, { archived: true });
  });
  expect(await t.mutation(internal.archive.unmarkLegacy, { limit: 1 })).toEqual({ unmarked: 1, more: true });
  expect(await t.mutation(internal.archive.unmarkLegacy, { limit: 5 })).toEqual({ unmarked: 1, more: false });
  await archive();
  await expectAll(["1", "2"]);
  expect(await hotKeys()).toEqual([]);
  expect(await t.mutation(internal.archive.unmarkLegacy, { limit: 5 })).toEqual({ unmarked: 0, more: false });
});
