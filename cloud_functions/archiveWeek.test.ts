/**
 * The golden archive week (contracts/archive_week): Convex's writer (archiveNode:writeWeek) writes
 * the pinned lines from the contract's episodes, framed as pinned, and its readers read both its
 * own file and the one the hub wrote (tests/contracts/test_archive_week.py holds the same from the hub's side:
 * the hub writes numbers, keys and metadata kept as text as they are written here).
 */
import { readFileSync } from "node:fs";
import { gunzipSync } from "node:zlib";
import { convexToJson } from "convex/values";
import { beforeEach, describe, expect, test } from "vitest";
import { internal } from "./_generated/api";
import type { Id } from "./_generated/dataModel";
import { LEVEL } from "./archiveNode";
import { type ArchiveRecord, convexOrder, decodeLines, encodeLines, isoWeek, manifestOf, weekRange } from "./lib/archiveFormat";
import { metadataOut, wireSafe } from "./lib/metadata";
import { backend, type Backend } from "./test.setup";
import { contract } from "./test.contracts";

type Input = {
  site: string;
  week: string;
  writtenAt: number;
  gzip: { level: number; header: string };
  drop: string[];
  add: ArchiveRecord[];
  numbers: [string, string][];
  keys: { given: string[]; convex: string[] };
};
type ConvexManifest = { count: number; sha256: string; bytes: number; firstId: string; lastId: string; fromTs: number; toTs: number };
type HubManifest = {
  count: number;
  sha256: string;
  bytes: number;
  first_id: string;
  last_id: string;
  from_ts: number;
  to_ts: number;
  written_at: number;
};

const input = contract<Input>("archive_week/input.json");
const golden = (name: string) => new Uint8Array(readFileSync(new URL(`../contracts/archive_week/${name}`, import.meta.url)));
const LINES = golden(`${input.week}.jsonl`);
const hub = contract<HubManifest>("archive_week/hub.manifest.json");
/** Each side's file with the manifest Convex keeps of it (an archiveFiles row's fields). */
const FILES = {
  hub: {
    data: golden("hub.jsonl.gz"),
    manifest: {
      count: hub.count,
      sha256: hub.sha256,
      bytes: hub.bytes,
      firstId: hub.first_id,
      lastId: hub.last_id,
      fromTs: hub.from_ts,
      toTs: hub.to_ts,
    } satisfies ConvexManifest,
  },
  convex: { data: golden("convex.jsonl.gz"), manifest: contract<ConvexManifest>("archive_week/convex.manifest.json") },
};
const hex = (bytes: Uint8Array) => Array.from(bytes, (b) => b.toString(16).padStart(2, "0")).join("");

let t: Backend;
beforeEach(() => {
  t = backend();
});

const blob = async (storageId: Id<"_storage">) =>
  new Uint8Array(await t.run(async (ctx) => (await ctx.storage.get(storageId))!.arrayBuffer()));
const store = (data: Uint8Array) => t.run(async (ctx) => ctx.storage.store(new Blob([new Uint8Array(data)])));

describe("the golden archive week (contracts/archive_week)", () => {
  test("Convex writes the golden lines byte for byte, framed as pinned, and describes its file", async () => {
    const { file } = await t.action(internal.archiveNode.writeWeek, {
      site: input.site,
      week: input.week,
      existing: null,
      add: input.add,
      drop: input.drop,
    });
    expect(file).not.toBeNull();
    const data = await blob(file!.storageId);
    expect(LEVEL).toBe(input.gzip.level);
    expect(hex(data.slice(0, input.gzip.header.length / 2))).toBe(input.gzip.header); // no name, mtime 0, XFL 0
    expect(new TextDecoder().decode(gunzipSync(data))).toBe(new TextDecoder().decode(LINES));
    expect(hex(new Uint8Array(gunzipSync(data)))).toBe(hex(LINES));
    const { storageId: _id, writtenAt: _at, ...manifest } = file!;
    expect(manifest).toEqual({ ...FILES.convex.manifest, ...(await manifestOf(decodeLines(new TextDecoder().decode(LINES)), data)) });
  });

  test.each(input.numbers)("the float64 %s is written %s", (text, js) => {
    expect(JSON.stringify(Number(text))).toBe(js);
    expect(encodeLines([{ reward: Number(text), success: true } as unknown as ArchiveRecord])).toContain(`"reward":${js},`);
  });

  test("every object's keys in Convex's order: by UTF-16 code unit, array indexes first", () => {
    const given = Object.fromEntries(input.keys.given.map((key) => [key, { [key]: 1, a: 2, "1": 3 }]));
    const ordered = convexOrder(given) as Record<string, Record<string, number>>;
    expect(Object.keys(ordered)).toEqual(input.keys.convex);
    expect(Object.keys(ordered.b!)).toEqual(["1", "a", "b"]); // nested objects too
    // As convex/values orders the keys it can carry (printable ASCII).
    const ascii = Object.fromEntries(input.keys.given.filter((key) => /^[\x20-\x7e]*$/.test(key)).map((key) => [key, 1]));
    expect(Object.keys(convexOrder(ascii) as object)).toEqual(Object.keys(convexToJson(ascii) as object));
  });

  test("metadata Convex keeps as text is exactly what it cannot carry as an object, and travels as that text", () => {
    for (const record of input.add) {
      const text = record.metadataJson ?? JSON.stringify(record.metadata);
      expect([record.sourceId, wireSafe(JSON.parse(text))]).toEqual([record.sourceId, record.metadataJson === undefined]);
      expect(metadataOut(text)).toEqual(record.metadataJson === undefined ? { metadata: JSON.parse(text) } : { metadata: null, metadataJson: text });
    }
  });

  test("every episode of the week is in its week", () => {
    const records = decodeLines(new TextDecoder().decode(LINES));
    expect(new Set(records.map((r) => isoWeek(r.ts)))).toEqual(new Set([input.week]));
    const { start, end } = weekRange(input.week);
    expect([records[0]!.ts, records[records.length - 1]!.ts]).toEqual([start, end - 1]);
  });

  test.each(["hub", "convex"] as const)("Convex reads the %s's file against its manifest", async (writer) => {
    const { data, manifest } = FILES[writer];
    const records = decodeLines(new TextDecoder().decode(LINES));
    // The manifest each side keeps is the one Convex derives from the same file.
    expect(await manifestOf(records, data)).toEqual(manifest);
    const storageId = await store(data);
    const file = { storageId, sha256: manifest.sha256, bytes: manifest.bytes };
    const verdict = await t.action(internal.archiveNode.check, {
      file: { site: input.site, week: input.week, storageId, ...manifest, writtenAt: input.writtenAt },
      archivedKeys: records.map((r) => r.sourceId),
    });
    expect(verdict).toBeNull();
    const page = await t.action(internal.archiveNode.readPage, { file, from: 0, limit: 100 });
    expect(page.total).toBe(records.length);
    expect(page.records).toEqual(records);
    // Read and written again (a week rewritten), they are the same bytes.
    expect(encodeLines(page.records)).toBe(new TextDecoder().decode(LINES));
  });

  test("a golden file damaged by one byte is refused", async () => {
    const data = FILES.hub.data.slice();
    data[data.length >> 1]! ^= 0xff;
    const storageId = await store(data);
    const verdict = await t.action(internal.archiveNode.check, {
      file: { site: input.site, week: input.week, storageId, ...FILES.hub.manifest, writtenAt: input.writtenAt },
      archivedKeys: [],
    });
    expect(verdict).toMatch(/^its bytes changed/);
  });
});
