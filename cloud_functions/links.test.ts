/**
 * links.ts: explicit links stored once, written by a push's metadata (and replaced by its edit),
 * dropped by a forget of either end, never stored with a forgotten end; `neighbourhood` gives what
 * sync/policy/links.py derives from. The same calls through the daemon's client are in
 * tests/conformance/test_links_conformance.py.
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
});
afterEach(() => vi.useRealTimers());

const push = (auth: { site: string; secret: string }, episodes: ReturnType<typeof item>[]) =>
  t.mutation(api.episodes.bulkSyncEpisodes, { ...auth, cursor: 0, episodes });
const stored = async () =>
  (await t.run((ctx) => ctx.db.query("links").collect())).map((l) => `${l.fromSite}:${l.fromId} ${l.kind} ${l.toSite}:${l.toId}`).sort();
const link = (from: string, to: string, kind: "similar_to" | "about" | "updates" = "similar_to") => {
  const [fromSite, fromId] = from.split(":");
  const [toSite, toId] = to.split(":");
  return { fromSite: fromSite!, fromId: fromId!, toSite: toSite!, toId: toId!, kind };
};

describe("links", () => {
  test("a push's metadata writes about and updates, an edit replaces them, a bad value writes none", async () => {
    await push(laptop, [item("1"), item("m1", { fields: { metadata: { about: "laptop:1", updates: "vm:m0" } } })]);
    await push(vm, [item("m2", { fields: { metadata: { about: "nonsense", updates: 7 } } })]);
    expect(await stored()).toEqual(["laptop:m1 about laptop:1", "laptop:m1 updates vm:m0"]);
    await push(laptop, [item("m1", { content: "edited", fields: { metadata: { about: "laptop:2" } } })]);
    expect(await stored()).toEqual(["laptop:m1 about laptop:2"]);
  });

  test("add stores each link once, skips links to themselves and with a forgotten end, and refuses too many", async () => {
    await push(laptop, [item("1"), item("2"), item("3")]);
    await t.action(api.episodes.forget, { ...laptop, sourceId: "3" });
    const { added } = await t.mutation(api.links.add, {
      ...vm,
      links: [link("laptop:2", "laptop:1"), link("laptop:2", "laptop:1"), link("laptop:1", "laptop:1"), link("laptop:2", "laptop:3")],
    });
    expect(added).toBe(1);
    expect((await t.mutation(api.links.add, { ...vm, links: [link("laptop:2", "laptop:1")] })).added).toBe(0);
    expect(await stored()).toEqual(["laptop:2 similar_to laptop:1"]);
    const many = Array.from({ length: 201 }, (_, i) => link(`laptop:${i}`, "laptop:1"));
    expect(await errorCode(t.mutation(api.links.add, { ...vm, links: many }))).toBe("TOO_LARGE");
    expect(await errorCode(t.mutation(api.links.add, { site: "vm", secret: "wrong", links: [] }))).toBe("UNAUTHORIZED");
  });

  test("a forget of either end drops the link", async () => {
    await push(laptop, [item("1"), item("2"), item("m1", { fields: { metadata: { about: "laptop:1" } } })]);
    await t.mutation(api.links.add, { ...laptop, links: [link("laptop:2", "laptop:1"), link("laptop:m1", "laptop:2")] });
    await t.action(api.episodes.forget, { ...laptop, sourceId: "1" });
    expect(await stored()).toEqual(["laptop:m1 similar_to laptop:2"]);
    await t.action(api.episodes.forget, { ...laptop, sourceId: "m1" });
    expect(await stored()).toEqual([]);
  });

  test("neighbourhood: the subject, its session, the episodes around it in time, its links' other ends", async () => {
    const at = (n: number) => ({ ts: NOW + n, createdAt: NOW + n });
    await push(laptop, [
      item("1", { fields: { ...at(1), sessionId: "s" } }),
      item("2", { fields: { ...at(2), sessionId: "s", metadata: { taskKey: "k", entities: ["E11000", 3] } } }),
      item("3", { fields: { ...at(3), sessionId: "other" } }),
    ]);
    await push(vm, [item("9", { fields: { ...at(-10_000_000), sessionId: "s", metadata: { about: "laptop:2" } } })]);
    const found = await t.query(api.links.neighbourhood, { ...vm, sourceSite: "laptop", sourceId: "2" });
    expect(found.subject).toEqual({ sourceSite: "laptop", sourceId: "2", sessionId: "s", ts: NOW + 2, task: expect.any(String), taskKey: "k", entities: ["E11000"] });
    const keys = new Set(found.candidates.map((c) => `${c.sourceSite}:${c.sourceId}`));
    expect(keys).toEqual(new Set(["laptop:1", "laptop:2", "laptop:3", "vm:9"]));
    expect(found.links).toEqual([link("vm:9", "laptop:2", "about")]);
    expect(await errorCode(t.query(api.links.neighbourhood, { ...vm, sourceSite: "laptop", sourceId: "nope" }))).toBe("NOT_FOUND");
  });
});
