import type { Doc } from "../_generated/dataModel";
import { metadataOut } from "./metadata";

/** A document of memsync's shape (adopted ones included): what every reader but adopt.ts reads. */
export type MemsyncEpisode = Extract<Doc<"episodes">, { archived: boolean }>;
/** A document as the seed design wrote it, not adopted yet (adopt.ts). */
export type SeedEpisode = Exclude<Doc<"episodes">, MemsyncEpisode>;

/** The sentence for a key that still holds a seed document (the operator's step, not the site's). */
export const NOT_ADOPTED_MESSAGE =
  "this deployment still holds episodes in the seed design's shape: run `memsync adopt` (with the deploy key) first";

/** Whether the document has memsync's shape; a seed document (no `archived`) is adopt.ts's alone. */
export function isMemsync(doc: Doc<"episodes">): doc is MemsyncEpisode {
  return "archived" in doc;
}

/** An episode with its body in the table (not archived): every text field present. */
export type HotEpisode = MemsyncEpisode & {
  sessionId: string;
  task: string;
  input: string | null;
  output: string | null;
  critique: string | null;
  tags: string[];
  metadataJson: string;
};

/** Whether the document holds its body (an archived episode's body is in its week's archive file). */
export function isHot(doc: Doc<"episodes">): doc is HotEpisode {
  return (
    isMemsync(doc) &&
    !doc.archived &&
    doc.sessionId !== undefined &&
    doc.task !== undefined &&
    doc.input !== undefined &&
    doc.output !== undefined &&
    doc.critique !== undefined &&
    doc.tags !== undefined &&
    doc.metadataJson !== undefined
  );
}

/**
 * An episode as clients read it: the export fields of sync/episode.py, in that order. A hot
 * episode is never `archived` (archived ones are read from the archive: archive:episodes, which
 * adds `archived: true` after these fields); this is also one line of an archive file.
 */
export function exportEpisode(doc: HotEpisode) {
  return {
    sourceSite: doc.sourceSite,
    sourceId: doc.sourceId,
    sessionId: doc.sessionId,
    task: doc.task,
    input: doc.input,
    output: doc.output,
    critique: doc.critique,
    reward: doc.reward,
    success: doc.success,
    latencyMs: doc.latencyMs,
    tokensUsed: doc.tokensUsed,
    tags: doc.tags,
    ...metadataOut(doc.metadataJson),
    ts: doc.ts,
    createdAt: doc.createdAt,
    agentName: doc.agentName,
    agentPlatform: doc.agentPlatform,
    agentInterface: doc.agentInterface,
    parentAgent: doc.parentAgent,
    llmProvider: doc.llmProvider,
    llmModel: doc.llmModel,
    contentHash: doc.contentHash,
    syncedAt: doc.syncedAt,
  };
}

export type ExportedEpisode = ReturnType<typeof exportEpisode>;
