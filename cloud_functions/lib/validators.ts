import { v } from "convex/values";

export const nullable = <T extends Parameters<typeof v.union>[0]>(validator: T) => v.union(validator, v.null());

/**
 * The episode's own fields (sync/episode.py builds them), shared by the table and the push
 * arguments. `output` and `critique` are nullable because AgentDB columns are, and the Python
 * side sends None for them. Metadata is not here: see lib/metadata.ts.
 */
export const episodeContent = {
  sessionId: v.string(),
  task: v.string(),
  input: nullable(v.string()),
  output: nullable(v.string()),
  critique: nullable(v.string()),
  reward: nullable(v.number()),
  success: v.boolean(),
  latencyMs: nullable(v.number()),
  tokensUsed: nullable(v.number()),
  tags: v.array(v.string()),
  ts: v.number(), // ms since the epoch
  createdAt: v.number(), // ms since the epoch
  agentName: nullable(v.string()),
  agentPlatform: nullable(v.string()),
  agentInterface: nullable(v.string()),
  parentAgent: nullable(v.string()),
  llmProvider: nullable(v.string()),
  llmModel: nullable(v.string()),
};

/**
 * The episodes table's own fields: the content, with the body's text optional (absent once the
 * episode is archived: its body is then in the archive file of its week).
 */
export const episodeStored = {
  ...episodeContent,
  sessionId: v.optional(v.string()),
  task: v.optional(v.string()),
  input: v.optional(nullable(v.string())),
  output: v.optional(nullable(v.string())),
  critique: v.optional(nullable(v.string())),
  tags: v.optional(v.array(v.string())),
  metadataJson: v.optional(v.string()), // text, not an object: see lib/metadata.ts
};

/**
 * A document of memsync's shape. `adopted` marks a seed document the migration (adopt.ts) brought to
 * this shape: its hashes are not memsync's yet (the seed never had them), so the first push of its
 * key compares the content itself (lib/adoption.ts) and records them.
 */
/** An explicit link's kind (lib/links.ts's EXPLICIT, contracts/links.json). */
export const linkKind = v.union(v.literal("updates"), v.literal("about"), v.literal("similar_to"));

export const memsyncEpisode = {
  sourceSite: v.string(),
  sourceId: v.string(), // the AgentDB id as text, "22~1" for a reused id
  identityHash: v.string(),
  contentHash: v.string(),
  // The body's text fields (sessionId, task, input, output, critique, tags, metadataJson) are
  // optional: an archived episode's body is in its week's archive file (archiveFiles), and only
  // its key, hashes, times and attribution stay here (lib/episodeView.ts, archive.ts).
  ...episodeStored,
  syncedAt: v.number(), // first receipt; never changed after
  updatedAt: v.number(),
  archived: v.boolean(),
  qdrantPointId: v.optional(v.string()),
  approvalStatus: v.optional(v.string()),
  // The standing dream step that hides it, if one does (dreams.ts): merged into a fold's canonical,
  // or superseded by a newer memory.
  dreamState: v.optional(v.object({ role: v.string(), by: v.string(), step: v.string() })),
  // The change feed's position of the latest insert or edit (lib/changes.ts). Optional only for
  // documents written before the feed: episodes:backfillChangeSeq gives them one.
  changeSeq: v.optional(v.number()),
  // Adopted from the seed design and not pushed by memsync since: `fields` are the content fields
  // the seed document carried, which the first push compares (lib/adoption.ts).
  // `times`: the seed's own ts and createdAt (seconds or ms, as it wrote them), for the undo.
  adopted: v.optional(
    v.object({
      at: v.number(),
      fields: v.array(v.string()),
      times: v.object({ ts: v.optional(v.number()), createdAt: v.number() }),
    }),
  ),
  // The seed's Qdrant point of an adopted episode, kept for good (an edit clears qdrantPointId, not
  // this): search indexes write the episode under this id rather than a second point (the feed carries it).
  seedPointId: v.optional(v.string()),
};

/**
 * An episode as the seed design's `convex-episode-sync.sh` pushed it (tests/data/seed/README.md:
 * which fields are known and which guessed): keyed by (sourceSite, sourceId), metadata as an
 * object, none of memsync's hashes or times. Declared so that memsync's schema can be pushed onto
 * a deployment that holds them; adopt.ts brings them to memsync's shape, and back (--undo).
 */
export const seedEpisode = {
  sourceSite: v.string(),
  sourceId: v.string(),
  sessionId: v.string(),
  task: v.string(),
  input: v.optional(nullable(v.string())),
  output: v.optional(nullable(v.string())),
  critique: v.optional(nullable(v.string())),
  reward: v.optional(nullable(v.number())),
  success: v.optional(v.boolean()),
  tags: v.optional(v.array(v.string())),
  metadata: v.optional(v.any()),
  ts: v.optional(v.number()),
  createdAt: v.number(),
  agentName: v.optional(nullable(v.string())),
  qdrantPointId: v.optional(v.string()),
};

/** The body fields an archived episode leaves in its archive file (codec.py's TEXT_FIELDS). */
export const BODY_FIELDS = ["sessionId", "task", "input", "output", "critique", "tags", "metadataJson"] as const;

/** What a site pushes for one episode: metadata as an object, or as JSON text (lossless, any keys). */
export const pushedFields = v.object({
  ...episodeContent,
  metadata: v.optional(v.any()),
  metadataJson: v.optional(v.string()),
});

export const pushItem = v.object({
  sourceId: v.string(),
  identityHash: v.string(),
  contentHash: v.string(),
  fields: pushedFields,
});

export const cursorValue = v.object({
  site: v.string(),
  lastSyncedId: v.number(),
  lastSyncedAt: v.number(),
  totalSynced: v.number(),
});

/** An episode as clients read it: the export fields of sync/episode.py, plus metadataJson when needed. */
export const exportedEpisode = v.object({
  sourceSite: v.string(),
  sourceId: v.string(),
  ...episodeContent,
  metadata: v.any(),
  metadataJson: v.optional(v.string()),
  contentHash: v.string(),
  syncedAt: v.number(),
  // Only on an episode an approval is about: the decision, as the episode stores it.
  approvalStatus: v.optional(v.string()),
  // Only on a memory a standing dream step hides: its role, by whom, which step.
  dream: v.optional(v.object({ role: v.string(), by: v.string(), step: v.string() })),
  archived: v.optional(v.literal(true)), // only on an archived episode, as the hub exports it
});

export const approvalStatus = v.union(
  v.literal("pending"),
  v.literal("approved"),
  v.literal("rejected"),
  v.literal("expired"),
);
export const approvalPriority = v.union(v.literal("low"), v.literal("normal"), v.literal("high"), v.literal("critical"));
export const taskStatus = v.union(
  v.literal("pending"),
  v.literal("in_progress"),
  v.literal("blocked"),
  v.literal("done"),
  v.literal("failed"),
  v.literal("cancelled"),
);
export const agentStatus = v.union(v.literal("online"), v.literal("offline"));
export const healthState = v.union(v.literal("up"), v.literal("down"));
export const jobOutcome = v.union(v.literal("running"), v.literal("ok"), v.literal("failed"), v.literal("abandoned"));
/** How a run ends (jobs:finishJob, jobs:recordRun). */
export const endedOutcome = v.union(v.literal("ok"), v.literal("failed"));

/** Whole, non-negative numbers that JSON carries exactly (the cursor, limits). */
export function isCount(value: number): boolean {
  return Number.isSafeInteger(value) && value >= 0;
}

/** An archive file's manifest (archiveFiles rows, and what the archive functions pass around). */
export const archiveManifest = {
  count: v.number(),
  sha256: v.string(), // hex, of the compressed bytes
  bytes: v.number(),
  firstId: v.string(),
  lastId: v.string(),
  fromTs: v.number(),
  toTs: v.number(),
  writtenAt: v.number(),
};
