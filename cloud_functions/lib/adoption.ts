/**
 * Adopting the seed design's episodes, as pure functions (adopt.ts does the I/O around them).
 *
 * A seed document (what `convex-episode-sync.sh` pushed: tests/data/seed/README.md) becomes a
 * memsync document in place, keeping its key, its content, its metadata and its point id. Its
 * hashes cannot be memsync's: those are SHA-256 of Python's canonical JSON of the row as the site
 * reads it (sync/source/agentdb/rows.py), and a float the seed stored as 1 may have been 1.0 there. So the
 * document is marked `adopted` (with the content fields the seed carried), and the first push of
 * its key compares the content itself (`sameAsSeed`): equal, the push answers "unchanged" and
 * records the hashes; different, it is an edit ("updated").
 */
import type { MemsyncEpisode, SeedEpisode } from "./episodeView";
import { metadataText, wireSafe } from "./metadata";

/** What an adopted document's hashes read until its site's first push records memsync's. */
export const ADOPTED_HASH = "adopted";

/** The content fields a seed document may carry, in sync/episode.py's names: the first push compares these. */
export const SEED_CONTENT_FIELDS = [
  "sessionId",
  "task",
  "input",
  "output",
  "critique",
  "reward",
  "success",
  "tags",
  "metadata",
  "ts",
  "createdAt",
  "agentName",
] as const;

// Seconds before 5138 AD; anything larger is already milliseconds (sync/source/agentdb/rows.py's _MS_THRESHOLD).
const MS_THRESHOLD = 100_000_000_000;

/** A Unix time in ms, as sync/source/agentdb/rows.py reads AgentDB's: seconds are multiplied, ms kept. */
export function epochMs(value: number): number {
  return value >= MS_THRESHOLD ? Math.trunc(value) : Math.round(value * 1000);
}

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

/** A point id memsync's search index can write (a UUID, as Qdrant takes it and memsync's ids are). */
export function usablePointId(value: string | undefined): string | undefined {
  return value !== undefined && UUID.test(value) ? value.toLowerCase() : undefined;
}

/** Metadata as memsync keeps it: an object (a seed's non-object is kept under "value", as sync/source/agentdb/rows.py does). */
function metadataObject(metadata: unknown): Record<string, unknown> {
  if (metadata === undefined || metadata === null) return {};
  if (typeof metadata === "object" && !Array.isArray(metadata)) return metadata as Record<string, unknown>;
  return { value: metadata };
}

export type AdoptedFields = Omit<MemsyncEpisode, "_id" | "_creationTime">;

/**
 * The memsync document a seed document becomes: its content kept (metadata as the text memsync's
 * push writes for an object), the fields the seed never had null, `syncedAt` its first receipt
 * (the document's creation), its point id kept, and a place in the change feed (`changeSeq`).
 */
export function adoptSeed(doc: SeedEpisode, now: number, changeSeq: number): AdoptedFields {
  const meta = metadataText({ metadata: metadataObject(doc.metadata) });
  if ("reason" in meta) throw new Error(`unreachable: ${meta.reason}`); // an object always has a text
  const createdAt = epochMs(doc.createdAt);
  const seedPointId = usablePointId(doc.qdrantPointId);
  const fields = SEED_CONTENT_FIELDS.filter((name) => doc[name] !== undefined);
  return {
    sourceSite: doc.sourceSite,
    sourceId: doc.sourceId,
    identityHash: ADOPTED_HASH,
    contentHash: ADOPTED_HASH,
    sessionId: doc.sessionId,
    task: doc.task,
    input: doc.input ?? null,
    output: doc.output ?? null,
    critique: doc.critique ?? null,
    reward: doc.reward ?? null,
    success: doc.success ?? false,
    latencyMs: null,
    tokensUsed: null,
    tags: doc.tags ?? [],
    metadataJson: meta.text,
    ts: doc.ts === undefined ? createdAt : epochMs(doc.ts),
    createdAt,
    agentName: doc.agentName ?? null,
    agentPlatform: null,
    agentInterface: null,
    parentAgent: null,
    llmProvider: null,
    llmModel: null,
    syncedAt: Math.floor(doc._creationTime),
    updatedAt: now,
    archived: false,
    ...(doc.qdrantPointId === undefined ? {} : { qdrantPointId: doc.qdrantPointId }),
    ...(seedPointId === undefined ? {} : { seedPointId }),
    changeSeq,
    adopted: { at: now, fields, times: doc.ts === undefined ? { createdAt: doc.createdAt } : { ts: doc.ts, createdAt: doc.createdAt } },
  };
}

export type SeedFields = Omit<SeedEpisode, "_id" | "_creationTime">;

/**
 * The seed document a hot memsync document goes back to (`memsync adopt --undo`): the seed's fields
 * only, metadata an object again. An adopted document never pushed since gets back only the fields
 * its seed had; any other gets every seed field. Its point id is the seed's where it had one; an
 * episode memsync inserted has none, so the seed's embedding action embeds it.
 */
export function seedOf(doc: MemsyncEpisode & { sessionId: string; task: string; metadataJson: string }): SeedFields {
  const parsed: unknown = JSON.parse(doc.metadataJson);
  const metadata = wireSafe(parsed) ? parsed : { _memsync: { metadataJson: doc.metadataJson } };
  const all: SeedFields = {
    sourceSite: doc.sourceSite,
    sourceId: doc.sourceId,
    sessionId: doc.sessionId,
    task: doc.task,
    input: doc.input,
    output: doc.output,
    critique: doc.critique,
    reward: doc.reward,
    success: doc.success,
    tags: doc.tags,
    metadata,
    ts: doc.ts,
    createdAt: doc.createdAt,
    agentName: doc.agentName,
  };
  const kept = doc.adopted?.fields;
  // Never pushed since: the seed's own times, in its own unit; otherwise memsync's (ms).
  const times = doc.adopted?.times ?? { ts: doc.ts, createdAt: doc.createdAt };
  const out: Record<string, unknown> = { sourceSite: doc.sourceSite, sourceId: doc.sourceId };
  for (const name of SEED_CONTENT_FIELDS) {
    if ((kept === undefined || kept.includes(name)) && all[name] !== undefined) out[name] = all[name];
  }
  out.createdAt = times.createdAt;
  if (times.ts === undefined) delete out.ts;
  else out.ts = times.ts;
  out.sessionId = doc.sessionId;
  out.task = doc.task;
  const pointId = doc.seedPointId ?? (doc.adopted !== undefined ? doc.qdrantPointId : undefined);
  if (pointId !== undefined) out.qdrantPointId = pointId;
  return out as SeedFields;
}

/** Deep equality of JSON values, object keys in any order (metadata's key order is the writer's). */
export function sameValue(a: unknown, b: unknown): boolean {
  if (a === b) return true;
  if (typeof a !== "object" || typeof b !== "object" || a === null || b === null) return false;
  if (Array.isArray(a) !== Array.isArray(b)) return false;
  if (Array.isArray(a) && Array.isArray(b)) return a.length === b.length && a.every((item, i) => sameValue(item, b[i]));
  const left = a as Record<string, unknown>;
  const right = b as Record<string, unknown>;
  const keys = Object.keys(left);
  return keys.length === Object.keys(right).length && keys.every((key) => key in right && sameValue(left[key], right[key]));
}

/** The content of a push (sync/episode.py's fields; metadata as its JSON text). */
export type PushedContent = Record<string, unknown> & { metadataJson: string };

/**
 * Whether a site's first push of an adopted key carries the seed's content: every field the seed
 * carried (`fields`) equal, metadata compared as values (key order and JSON spelling aside). The
 * fields the seed never had are not compared: the push fills them in.
 */
export function sameAsSeed(stored: MemsyncEpisode, pushed: PushedContent, fields: readonly string[]): boolean {
  return fields.every((name) => {
    if (name === "metadata") {
      return stored.metadataJson !== undefined && sameValue(JSON.parse(stored.metadataJson), JSON.parse(pushed.metadataJson));
    }
    return sameValue((stored as Record<string, unknown>)[name], pushed[name]);
  });
}
