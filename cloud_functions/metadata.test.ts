/**
 * Why metadata is stored as text (lib/metadata.ts): what Convex does with the keys agents write.
 * These tests pin the observed behaviour, so a Convex upgrade that changes it is noticed.
 */
import { defineSchema, defineTable } from "convex/server";
import { v } from "convex/values";
import { convexTest } from "convex-test";
import { beforeEach, describe, expect, test } from "vitest";
import { api } from "./_generated/api";
import { backend, errorMessage, modules, registerSite, type Backend } from "./test.setup";
import { item } from "./test.fixtures";

const scratch = defineSchema({
  anyField: defineTable({ m: v.any() }),
});

const store = (m: Record<string, unknown>) => convexTest(scratch, modules).run((ctx) => ctx.db.insert("anyField", { m }));

describe("Convex and odd object keys", () => {
  test("a nested '_memsync' key is accepted in v.any()", async () => {
    await expect(store({ _memsync: { issues: ["x"] } })).resolves.toBeDefined();
  });

  test.each([
    ["a top-level '$' key", { $schema: "x" }, "Field name $schema starts with a '$', which is reserved."],
    ["a nested '$' key", { nested: { $ref: "#/a" } }, "Field name $ref starts with a '$', which is reserved."],
    ["a non-ASCII key", { "clé": 1 }, "Field name clé has invalid character 'é': Field names can only contain non-control ASCII characters"],
    ["a control character", { "a\nb": 1 }, "has invalid character"],
  ])("%s is refused in v.any()", async (_name, m, message) => {
    expect(await errorMessage(store(m))).toContain(message);
  });
});

describe("episodes keep any metadata", () => {
  let t: Backend;
  let laptop: { site: string; secret: string };
  beforeEach(async () => {
    t = backend();
    laptop = await registerSite(t, "laptop");
  });

  const readBack = async () =>
    (await t.query(api.episodes.listEpisodes, { ...laptop, after: null, limit: 1 })).episodes[0];

  test("an object with '_memsync' travels as an object both ways", async () => {
    const metadata = { tool: "bash", _memsync: { issues: ["tags repaired"], raw: { tags: "a,b" } } };
    await t.mutation(api.episodes.bulkSyncEpisodes, { ...laptop, cursor: 1, episodes: [item("1", { fields: { metadata } })] });
    const episode = await readBack();
    expect(episode.metadata).toEqual(metadata);
    expect(episode.metadataJson).toBeUndefined();
  });

  test("an object with a '$' key cannot even be sent as an argument", async () => {
    const episodes = [item("1", { fields: { metadata: { $ref: "x" } } })];
    const message = await errorMessage(t.mutation(api.episodes.bulkSyncEpisodes, { ...laptop, cursor: 1, episodes }));
    expect(message).toContain("Field name $ref starts with a '$', which is reserved.");
  });

  test("metadataJson carries any keys and big integers exactly; readers get the text back", async () => {
    const text = '{"$schema":"s","clé":{"\\u65e5":1},"big":12345678901234567890}';
    const fields = { metadata: undefined, metadataJson: text };
    const { results } = await t.mutation(api.episodes.bulkSyncEpisodes, {
      ...laptop,
      cursor: 1,
      episodes: [item("1", { fields })],
    });
    expect(results[0].outcome).toBe("inserted");
    const episode = await readBack();
    expect(episode.metadata).toBeNull();
    expect(episode.metadataJson).toBe(text);
  });

  test.each([
    ['{"big":9007199254740993,"n":1}', null],
    ['{"big":[1e+16]}', null],
    ['{"n":9007199254740991,"f":0.5,"tiny":1e-7}', { n: 9007199254740991, f: 0.5, tiny: 1e-7 }],
  ])("metadataJson %s: an integral number beyond 2^53 keeps it text (a float64 may have lost its digits)", async (text, object) => {
    await t.mutation(api.episodes.bulkSyncEpisodes, { ...laptop, cursor: 1, episodes: [item("1", { fields: { metadata: undefined, metadataJson: text } })] });
    const episode = await readBack();
    expect(episode.metadata).toEqual(object);
    expect(episode.metadataJson).toBe(object === null ? text : undefined);
  });

  test("metadataJson with plain keys is read back as an object", async () => {
    const fields = { metadata: undefined, metadataJson: '{"tool":"bash","n":1}' };
    await t.mutation(api.episodes.bulkSyncEpisodes, { ...laptop, cursor: 1, episodes: [item("1", { fields })] });
    expect((await readBack()).metadata).toEqual({ tool: "bash", n: 1 });
  });
});
