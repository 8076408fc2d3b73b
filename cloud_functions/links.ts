import { v } from "convex/values";
import type { Doc } from "./_generated/dataModel";
import { mutation, query, type QueryCtx } from "./_generated/server";
import { authenticate, siteArgs } from "./lib/auth";
import { isMemsync } from "./lib/episodeView";
import { fail } from "./lib/errors";
import { linksOf, storeLinks, WINDOW } from "./lib/links";
import { findDocument } from "./lib/push";
import { linkKind } from "./lib/validators";

/** Links a call stores at most; a session's episodes `neighbourhood` reads at most. */
export const MAX_ADD = 200;
export const MAX_SESSION = 2000;

const storedLink = v.object({ fromSite: v.string(), fromId: v.string(), toSite: v.string(), toId: v.string(), kind: linkKind });

/**
 * Store explicit links (similar_to from a site's search index, ...), each once by (from, to, kind);
 * a link to itself or with a forgotten end is skipped. Any site's episodes: the links are the
 * fleet's, as the change feed is. How many were new.
 */
export const add = mutation({
  args: { ...siteArgs, links: v.array(storedLink) },
  returns: v.object({ added: v.number() }),
  handler: async (ctx, args) => {
    await authenticate(ctx, args);
    if (args.links.length > MAX_ADD) fail("TOO_LARGE", `${args.links.length} links in one call; at most ${MAX_ADD}`);
    return { added: await storeLinks(ctx, args.links, Date.now()) };
  },
});

const compact = v.object({
  sourceSite: v.string(),
  sourceId: v.string(),
  sessionId: v.union(v.string(), v.null()),
  ts: v.union(v.number(), v.null()),
  task: v.union(v.string(), v.null()),
  taskKey: v.union(v.string(), v.null()),
  entities: v.union(v.array(v.string()), v.null()),
});

/** What derived links read of an episode (sync/policy/links.py's episode_keys): its stored taskKey and entities, from its metadata until the episode carries them. */
function compactOf(doc: Doc<"episodes">) {
  let meta: Record<string, unknown> = {};
  if (isMemsync(doc) && doc.metadataJson !== undefined) {
    try {
      const parsed: unknown = JSON.parse(doc.metadataJson);
      if (typeof parsed === "object" && parsed !== null && !Array.isArray(parsed)) meta = parsed as Record<string, unknown>;
    } catch {
      meta = {};
    }
  }
  const taskKey = typeof meta.taskKey === "string" ? meta.taskKey : null;
  const entities = Array.isArray(meta.entities) ? meta.entities.filter((e): e is string => typeof e === "string") : null;
  return {
    sourceSite: doc.sourceSite,
    sourceId: doc.sourceId,
    sessionId: doc.sessionId ?? null,
    ts: doc.ts ?? null,
    task: doc.task ?? null,
    taskKey,
    entities,
  };
}

async function hotAround(db: QueryCtx["db"], ts: number): Promise<Doc<"episodes">[]> {
  const before = await db
    .query("episodes")
    .withIndex("by_archived_ts", (q) => q.eq("archived", false).lte("ts", ts))
    .order("desc")
    .take(WINDOW);
  const after = await db
    .query("episodes")
    .withIndex("by_archived_ts", (q) => q.eq("archived", false).gt("ts", ts))
    .take(WINDOW);
  return [...before, ...after];
}

/**
 * What `related` decides from (sync/backbone/convex/memory/links.py, by sync/policy/links.py): the
 * subject, its site's session, the WINDOW hot episodes on each side of it in time (every site's),
 * its explicit links and their other ends. NOT_FOUND for a key the deployment does not hold.
 */
export const neighbourhood = query({
  args: { ...siteArgs, sourceSite: v.string(), sourceId: v.string() },
  returns: v.object({
    subject: compact,
    candidates: v.array(compact),
    links: v.array(storedLink),
  }),
  handler: async (ctx, args) => {
    await authenticate(ctx, args);
    const subject = await findDocument(ctx.db, args.sourceSite, args.sourceId);
    if (subject === null) fail("NOT_FOUND", `no episode ${args.sourceSite}:${args.sourceId} in the deployment`);
    const found: Doc<"episodes">[] = [];
    if (subject.sessionId !== undefined) {
      const session = await ctx.db
        .query("episodes")
        .withIndex("by_site_session", (q) => q.eq("sourceSite", subject.sourceSite).eq("sessionId", subject.sessionId))
        .take(MAX_SESSION);
      found.push(...session.filter((doc) => isMemsync(doc) && !doc.archived));
    }
    if (subject.ts !== undefined) found.push(...(await hotAround(ctx.db, subject.ts)));
    const rows = await linksOf(ctx.db, args.sourceSite, args.sourceId);
    const links = rows.map(({ fromSite, fromId, toSite, toId, kind }) => ({ fromSite, fromId, toSite, toId, kind }));
    const held = new Set(found.map((doc) => `${doc.sourceSite}\u0000${doc.sourceId}`));
    for (const link of links) {
      const [site, id] = link.fromSite === args.sourceSite && link.fromId === args.sourceId ? [link.toSite, link.toId] : [link.fromSite, link.fromId];
      if (held.has(`${site}\u0000${id}`)) continue;
      const end = await findDocument(ctx.db, site, id);
      if (end !== null) found.push(end);
      held.add(`${site}\u0000${id}`);
    }
    return { subject: compactOf(subject), candidates: found.map(compactOf), links };
  },
});
