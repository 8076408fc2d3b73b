import type { Doc } from "../_generated/dataModel";
import { metadataOut } from "./metadata";

/** An episode as clients read it: the export fields of sync/episode.py, in that order (and `archived`). */
export function exportEpisode(doc: Doc<"episodes">) {
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
    // After the documented fields and only when true, as the hub's export has it.
    ...(doc.archived ? { archived: true as const } : {}),
  };
}
