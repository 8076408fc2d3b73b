/**
 * The links between memories, as Convex keeps them: the explicit kinds and what a pushed memory's
 * metadata writes, from contracts/links.json (sync/policy/links.py is the other side). Derived
 * links (led_to, evolved_from, mentions) are decided by the daemon's sync/policy/links.py from what
 * links.ts's `neighbourhood` reads; nothing is written for them.
 */
import type { MutationCtx, QueryCtx } from "../_generated/server";
import type { Doc } from "../_generated/dataModel";
import { isForgotten } from "./push";

export const KINDS = ["updates", "about", "similar_to", "led_to", "evolved_from", "mentions"] as const;
export const EXPLICIT = ["updates", "about", "similar_to"] as const;
export const LATER = ["consolidates", "supersedes"] as const;
export type ExplicitKind = (typeof EXPLICIT)[number];
/** Derived links are looked for among the subject's session and this many hot episodes on each side of it in time. */
export const WINDOW = 500;
/** The metadata keys that write explicit links, each "SITE:ID". */
export const METADATA_KINDS: Record<string, ExplicitKind> = { about: "about", updates: "updates" };

export type Ref = { site: string; sourceId: string };
export type StoredLink = { fromSite: string; fromId: string; toSite: string; toId: string; kind: ExplicitKind };

/** "SITE:ID" (the first colon splits; spaces around are dropped), or null for anything else. */
export function parseRef(text: unknown): Ref | null {
  if (typeof text !== "string") return null;
  const trimmed = text.trim();
  const colon = trimmed.indexOf(":");
  if (colon <= 0 || colon === trimmed.length - 1) return null;
  return { site: trimmed.slice(0, colon), sourceId: trimmed.slice(colon + 1) };
}

/** The explicit links a pushed episode's metadata writes; anything else writes none. */
export function explicitLinks(own: Ref, metadata: unknown): StoredLink[] {
  if (typeof metadata !== "object" || metadata === null || Array.isArray(metadata)) return [];
  const links: StoredLink[] = [];
  for (const [key, kind] of Object.entries(METADATA_KINDS)) {
    const target = parseRef((metadata as Record<string, unknown>)[key]);
    if (target === null || (target.site === own.site && target.sourceId === own.sourceId)) continue;
    links.push({ fromSite: own.site, fromId: own.sourceId, toSite: target.site, toId: target.sourceId, kind });
  }
  return links;
}

/** Store explicit links, each once by (from, to, kind); a link to itself or with a forgotten end is skipped. How many were new. */
export async function storeLinks(ctx: MutationCtx, links: StoredLink[], now: number): Promise<number> {
  let added = 0;
  for (const link of links) {
    if (link.fromSite === link.toSite && link.fromId === link.toId) continue;
    if ((await isForgotten(ctx.db, link.fromSite, link.fromId)) || (await isForgotten(ctx.db, link.toSite, link.toId))) continue;
    const held = await ctx.db
      .query("links")
      .withIndex("by_from", (q) =>
        q.eq("fromSite", link.fromSite).eq("fromId", link.fromId).eq("kind", link.kind).eq("toSite", link.toSite).eq("toId", link.toId),
      )
      .first();
    if (held !== null) continue;
    await ctx.db.insert("links", { ...link, createdAt: now });
    added += 1;
  }
  return added;
}

/** A pushed episode's metadata (about, updates) replaces the links it wrote before. */
export async function storePushedLinks(ctx: MutationCtx, own: Ref, metadataJson: string, now: number): Promise<void> {
  for (const kind of Object.values(METADATA_KINDS)) {
    const old = await ctx.db
      .query("links")
      .withIndex("by_from", (q) => q.eq("fromSite", own.site).eq("fromId", own.sourceId).eq("kind", kind))
      .collect();
    for (const link of old) await ctx.db.delete(link._id);
  }
  let metadata: unknown = null;
  try {
    metadata = JSON.parse(metadataJson);
  } catch {
    return; // refused earlier by lib/metadata.ts; nothing to link
  }
  await storeLinks(ctx, explicitLinks(own, metadata), now);
}

/** A forget: every explicit link with the key at either end goes. */
export async function dropLinks(ctx: MutationCtx, site: string, sourceId: string): Promise<void> {
  const from = await ctx.db
    .query("links")
    .withIndex("by_from", (q) => q.eq("fromSite", site).eq("fromId", sourceId))
    .collect();
  const to = await ctx.db
    .query("links")
    .withIndex("by_to", (q) => q.eq("toSite", site).eq("toId", sourceId))
    .collect();
  for (const link of [...from, ...to]) await ctx.db.delete(link._id);
}

/** The explicit rows with the key at either end. */
export async function linksOf(db: QueryCtx["db"], site: string, sourceId: string): Promise<Doc<"links">[]> {
  const from = await db
    .query("links")
    .withIndex("by_from", (q) => q.eq("fromSite", site).eq("fromId", sourceId))
    .collect();
  const to = await db
    .query("links")
    .withIndex("by_to", (q) => q.eq("toSite", site).eq("toId", sourceId))
    .collect();
  return [...from, ...to];
}
