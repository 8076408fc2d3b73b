"use node";
/**
 * The cold archive's file work, in Convex's Node.js runtime: the default runtime has no
 * CompressionStream, and node:zlib writes the plain gzip that `zcat` reads. A whole week's file is
 * assembled, compressed, stored and read back here (Node actions have room for it), and only
 * manifests, pages of records and verdicts cross back to the default runtime (archive.ts,
 * lib/archiveWrite.ts), which commits.
 */
import { gunzipSync, gzipSync } from "node:zlib";
import { v } from "convex/values";
import type { Id } from "./_generated/dataModel";
import { type ActionCtx, internalAction } from "./_generated/server";
import {
  type ArchiveRecord,
  countLines,
  decodeLines,
  encodeLines,
  isoWeek,
  manifestOf,
  merge,
  sha256Bytes,
} from "./lib/archiveFormat";
import { archiveManifest, exportedEpisode } from "./lib/validators";

// zlib's default level, as the hub's archive (sync/archive/codec.py) uses.
export const LEVEL = 6;
// A page of records read back: well inside what an action may return.
const MAX_PAGE_BYTES = 8 * 1024 * 1024;

const stored = v.object({ storageId: v.id("_storage"), sha256: v.string(), bytes: v.number() });

async function readBlob(ctx: Pick<ActionCtx, "storage">, storageId: Id<"_storage">): Promise<Uint8Array | null> {
  const blob = await ctx.storage.get(storageId);
  return blob === null ? null : new Uint8Array(await blob.arrayBuffer());
}

function gunzip(data: Uint8Array): string {
  return new TextDecoder("utf-8", { fatal: true }).decode(gunzipSync(data));
}

/** What is wrong with a stored file's bytes against its manifest, or null. */
async function bytesProblem(data: Uint8Array | null, file: { storageId: string; sha256: string; bytes: number }) {
  if (data === null) return `the file is missing (${file.storageId})`;
  const sha = await sha256Bytes(data);
  if (data.length !== file.bytes || sha !== file.sha256) {
    return `its bytes changed: sha256 ${sha.slice(0, 12)}, ${data.length} bytes; the manifest says ${file.sha256.slice(0, 12)}, ${file.bytes} bytes`;
  }
  return null;
}

/** A committed file's records, its bytes checked against the manifest first (damaged: throws). */
async function readChecked(ctx: Pick<ActionCtx, "storage">, file: { storageId: Id<"_storage">; sha256: string; bytes: number }) {
  const data = await readBlob(ctx, file.storageId);
  const problem = await bytesProblem(data, file);
  if (problem !== null) throw new Error(`archive file ${file.storageId} is damaged: ${problem}`);
  return decodeLines(gunzip(data!));
}

/**
 * A week's new file: the committed one's records (`existing`), plus `add`, without `drop`, in
 * file order; stored, read back (the bytes and sha256 written, decompressing to as many lines) and
 * described. Not committed: the caller's mutation does that, or deletes the blob. `changed` false:
 * nothing to write. `file` null with `changed`: the week is left empty.
 */
export const writeWeek = internalAction({
  args: {
    site: v.string(),
    week: v.string(),
    existing: v.union(stored, v.null()),
    add: v.array(exportedEpisode),
    drop: v.array(v.string()),
  },
  returns: v.object({
    changed: v.boolean(),
    removed: v.array(v.string()),
    file: v.union(v.object({ storageId: v.id("_storage"), ...archiveManifest }), v.null()),
  }),
  handler: async (ctx, args) => {
    const existing = args.existing === null ? [] : await readChecked(ctx, args.existing);
    const drop = new Set(args.drop);
    const removed = existing.filter((r) => drop.has(r.sourceId)).map((r) => r.sourceId);
    if (args.add.length === 0 && removed.length === 0) return { changed: false, removed, file: null };
    const records = merge(existing, args.add as ArchiveRecord[], drop);
    if (records.length === 0) return { changed: true, removed, file: null };
    const data = new Uint8Array(gzipSync(new TextEncoder().encode(encodeLines(records)), { level: LEVEL }));
    const manifest = await manifestOf(records, data);
    const storageId = await ctx.storage.store(new Blob([data], { type: "application/gzip" }));
    // Verify before anything points at it.
    const back = await readBlob(ctx, storageId);
    let problem = await bytesProblem(back, { ...manifest, storageId });
    if (problem === null) {
      const lines = countLines(gunzip(back!));
      if (lines !== records.length) problem = `it holds ${lines} lines; ${records.length} were written`;
    }
    if (problem !== null) {
      await ctx.storage.delete(storageId);
      throw new Error(`archive file ${args.site} ${args.week} did not read back as written: ${problem}`);
    }
    return { changed: true, removed, file: { storageId, ...manifest, writtenAt: Date.now() } };
  },
});

/** Records `from` on of a committed file, at most `limit` (and 8 MiB); `total`: lines in the file. */
export const readPage = internalAction({
  args: { file: stored, from: v.number(), limit: v.number() },
  returns: v.object({ records: v.array(exportedEpisode), total: v.number() }),
  handler: async (ctx, { file, from, limit }) => {
    const records = await readChecked(ctx, file);
    const page: ArchiveRecord[] = [];
    let bytes = 0;
    for (const record of records.slice(from, from + limit)) {
      bytes += JSON.stringify(record).length;
      if (page.length > 0 && bytes > MAX_PAGE_BYTES) break;
      page.push(record);
    }
    return { records: page, total: records.length };
  },
});

/**
 * archive:records' reading: each file once, its records among `keys` whose contentHash is the one
 * given (the table's), until the answer holds 8 MiB (at least one record); the keys of the files
 * (or the rest of a file) not read then are `unread`. A key not in its file is left out.
 */
export const pick = internalAction({
  args: {
    files: v.array(
      v.object({
        file: stored,
        site: v.string(),
        keys: v.array(v.object({ sourceId: v.string(), contentHash: v.string() })),
      }),
    ),
  },
  returns: v.object({
    records: v.array(exportedEpisode),
    unread: v.array(v.object({ sourceSite: v.string(), sourceId: v.string() })),
  }),
  handler: async (ctx, { files }) => {
    const out: ArchiveRecord[] = [];
    const unread: { sourceSite: string; sourceId: string }[] = [];
    let bytes = 0;
    for (const { file, site, keys } of files) {
      if (out.length > 0 && bytes >= MAX_PAGE_BYTES) {
        unread.push(...keys.map((k) => ({ sourceSite: site, sourceId: k.sourceId })));
        continue;
      }
      const wanted = new Map(keys.map((k) => [k.sourceId, k.contentHash]));
      for (const record of await readChecked(ctx, file)) {
        if (record.sourceSite !== site || wanted.get(record.sourceId) !== record.contentHash) continue;
        wanted.delete(record.sourceId);
        const size = JSON.stringify(record).length;
        if (out.length > 0 && bytes + size > MAX_PAGE_BYTES) {
          unread.push({ sourceSite: site, sourceId: record.sourceId });
          bytes = MAX_PAGE_BYTES; // full: the rest of this file and the files after it are unread
          continue;
        }
        bytes += size;
        out.push(record);
      }
    }
    return { records: out, unread };
  },
});

/**
 * archive:verify's reading of one file: its bytes and sha256 as the manifest says, every line an
 * episode of the file's site and week, the count and key range, and every key in `archivedKeys`
 * (the site's archived keys of the week) in it. The problem, or null.
 */
export const check = internalAction({
  args: {
    file: v.object({
      site: v.string(),
      week: v.string(),
      storageId: v.id("_storage"),
      ...archiveManifest,
    }),
    archivedKeys: v.array(v.string()),
  },
  returns: v.union(v.string(), v.null()),
  handler: async (ctx, { file, archivedKeys }) => {
    const data = await readBlob(ctx, file.storageId);
    const bytes = await bytesProblem(data, file);
    if (bytes !== null) return bytes;
    let text: string;
    try {
      text = gunzip(data!);
    } catch (error) {
      return `it does not decompress (${error instanceof Error ? error.message : String(error)})`;
    }
    let records: ArchiveRecord[];
    try {
      records = decodeLines(text);
    } catch (error) {
      return error instanceof Error ? error.message : String(error);
    }
    if (records.length !== file.count) return `it holds ${records.length} episodes; the manifest says ${file.count}`;
    if (records.length > 0 && (records[0]!.sourceId !== file.firstId || records[records.length - 1]!.sourceId !== file.lastId)) {
      return "its key range is not the manifest's";
    }
    const foreign = records.filter((r) => r.sourceSite !== file.site).length;
    if (foreign > 0) return `${foreign} episodes in it are not ${file.site}'s`;
    if (records.some((r) => isoWeek(r.ts) !== file.week)) return `it holds episodes of another week than ${file.week}`;
    const held = new Set(records.map((r) => r.sourceId));
    const missing = archivedKeys.filter((key) => !held.has(key));
    if (missing.length > 0) {
      return `${missing.length} archived episodes of its week are not in it (e.g. ${file.site}:${missing[0]})`;
    }
    return null;
  },
});
