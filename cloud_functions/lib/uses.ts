import type { MutationCtx, QueryCtx } from "../_generated/server";
import type { Doc } from "../_generated/dataModel";
import { fail } from "./errors";

/**
 * The kinds of use both backbones accept (contracts/uses.json; the hub's sync/policy/salience.py):
 * memories handed to an agent (the context hook, search_memory, memsync search) and opened by one
 * (get_episode, related).
 */
export const USE_KINDS = ["context", "mcp_search", "cli_search", "get_episode", "related"] as const;

export function checkKind(kind: string): void {
  if (!(USE_KINDS as readonly string[]).includes(kind)) {
    fail("INVALID", `a use's kind is one of ${USE_KINDS.join(", ")}, not '${kind}'`);
  }
}

export async function totalsOf(db: QueryCtx["db"], site: string, sourceId: string): Promise<Doc<"useTotals"> | null> {
  return await db
    .query("useTotals")
    .withIndex("by_memory", (q) => q.eq("sourceSite", site).eq("sourceId", sourceId))
    .unique();
}

/** One memory's totals as a site reads them (the hub's UseTotals). */
export function totalsView(doc: Doc<"useTotals">) {
  return {
    sourceSite: doc.sourceSite,
    sourceId: doc.sourceId,
    accessCount: doc.accessCount,
    lastAccessed: doc.lastAccessed ?? null,
    byKind: JSON.parse(doc.byKindJson) as Record<string, number>,
    pinned: doc.pinned,
    pinnedBy: doc.pinnedBy ?? null,
    pinnedAt: doc.pinnedAt ?? null,
  };
}

/** A forgotten memory's uses and pin go with it (inside the forget's mutation). */
export async function forgetUses(ctx: MutationCtx, site: string, sourceId: string): Promise<void> {
  const uses = await ctx.db
    .query("uses")
    .withIndex("by_memory", (q) => q.eq("sourceSite", site).eq("sourceId", sourceId))
    .collect();
  for (const use of uses) await ctx.db.delete(use._id);
  const totals = await totalsOf(ctx.db, site, sourceId);
  if (totals !== null) await ctx.db.delete(totals._id);
}
