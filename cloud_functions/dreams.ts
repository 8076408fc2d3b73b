/**
 * The dream cycle's records (sync/backbone/dreams.py's `Dreams`, as the hub keeps them): a daemon
 * runs the dream under the backbone's lease (it needs a site's embedder; the deployment has none)
 * and records each night's steps here. Every site's memories; nothing is ever deleted: a step hides
 * its members (their `dreamState`, a change in the feed so every index hides them) and an undo puts
 * back exactly what it changed, the record staying, undone.
 */
import { v } from "convex/values";
import { mutation, query } from "./_generated/server";
import { authenticate, siteArgs } from "./lib/auth";
import { ChangeSequence } from "./lib/changes";
import { KINDS, ROLE_OF_KIND, stepView, undoStep } from "./lib/dreamSteps";
import { fail } from "./lib/errors";
import { findDocument } from "./lib/push";

const key = v.object({ site: v.string(), sourceId: v.string() });
const step = v.object({
  stepId: v.string(),
  kind: v.string(),
  canonical: key,
  members: v.array(key),
  at: v.number(),
  run: v.string(),
  reason: v.string(),
  synthesis: v.any(),
  undoneAt: v.union(v.number(), v.null()),
  undoneBy: v.union(v.string(), v.null()),
});
const MAX_STEPS = 200; // one call's steps: its reads and writes stay well inside a transaction's limits

const keyText = (k: { site: string; sourceId: string }) => `${k.site}:${k.sourceId}`;

/**
 * Record steps in one transaction. Refused whole (INVALID) for an unknown kind, a step without
 * members or with its canonical among them, a memory in two steps; a step naming a memory the
 * deployment does not hold, or one hidden already, is left out. Returns the steps recorded.
 */
export const record = mutation({
  args: {
    ...siteArgs,
    run: v.string(),
    steps: v.array(
      v.object({ kind: v.string(), canonical: key, members: v.array(key), reason: v.string(), synthesis: v.optional(v.any()) }),
    ),
  },
  returns: v.array(step),
  handler: async (ctx, args) => {
    await authenticate(ctx, args);
    if (args.steps.length > MAX_STEPS) fail("INVALID", `at most ${MAX_STEPS} dream steps a call`);
    const seen = new Set<string>();
    for (const s of args.steps) {
      if (!(KINDS as readonly string[]).includes(s.kind)) fail("INVALID", `unknown dream step kind '${s.kind}'`);
      if (s.members.length === 0 || s.members.some((m) => keyText(m) === keyText(s.canonical))) {
        fail("INVALID", `a ${s.kind} step needs members other than its canonical`);
      }
      for (const m of s.members) {
        if (seen.has(keyText(m))) fail("INVALID", `${keyText(m)} is in two steps`);
        seen.add(keyText(m));
      }
    }
    const now = Date.now();
    const sequence = new ChangeSequence(ctx.db);
    const done = [];
    for (const s of args.steps) {
      const docs = await Promise.all([s.canonical, ...s.members].map((k) => findDocument(ctx.db, k.site, k.sourceId)));
      if (docs.some((d) => d === null || !("identityHash" in d) || d.dreamState !== undefined)) continue;
      const stepId = await ctx.db.insert("dreamSteps", {
        kind: s.kind,
        canonicalSite: s.canonical.site,
        canonicalId: s.canonical.sourceId,
        members: s.members,
        at: now,
        run: args.run,
        reason: s.reason,
        ...(s.synthesis === undefined ? {} : { synthesis: s.synthesis }),
      });
      for (const [i, m] of s.members.entries()) {
        await ctx.db.insert("dreamLinks", {
          fromSite: s.canonical.site,
          fromId: s.canonical.sourceId,
          toSite: m.site,
          toId: m.sourceId,
          kind: s.kind,
          stepId,
        });
        const doc = docs[i + 1]!;
        await ctx.db.patch(doc._id, {
          dreamState: { role: ROLE_OF_KIND[s.kind]!, by: keyText(s.canonical), step: stepId },
          changeSeq: await sequence.next(),
        });
      }
      done.push(stepView((await ctx.db.get(stepId))!));
    }
    await sequence.save();
    return done;
  },
});

/** Undo one standing step exactly. NOT_FOUND for an unknown id, CONFLICT for one undone already. */
export const undo = mutation({
  args: { ...siteArgs, stepId: v.string(), by: v.string() },
  returns: step,
  handler: async (ctx, args) => {
    await authenticate(ctx, args);
    const id = ctx.db.normalizeId("dreamSteps", args.stepId);
    const found = id === null ? null : await ctx.db.get(id);
    if (found === null) fail("NOT_FOUND", `no dream step ${args.stepId}`);
    if (found.undoneAt !== undefined) fail("CONFLICT", `dream step ${args.stepId} was undone already`);
    await undoStep(ctx, found, args.by, Date.now());
    return stepView((await ctx.db.get(found._id))!);
  },
});

/** The steps, newest first (`standingOnly`: not undone), at most `limit` (default 1000). */
export const steps = query({
  args: { ...siteArgs, standingOnly: v.optional(v.boolean()), limit: v.optional(v.number()) },
  returns: v.array(step),
  handler: async (ctx, args) => {
    await authenticate(ctx, args);
    const limit = Math.min(args.limit ?? 1000, 1000);
    const out = [];
    for await (const doc of ctx.db.query("dreamSteps").order("desc")) {
      if (args.standingOnly && doc.undoneAt !== undefined) continue;
      out.push(stepView(doc));
      if (out.length >= limit) break;
    }
    return out;
  },
});

/** The standing links from or to a memory, by step then target. */
export const links = query({
  args: { ...siteArgs, of: key },
  returns: v.array(v.object({ source: key, target: key, kind: v.string(), stepId: v.string() })),
  handler: async (ctx, args) => {
    await authenticate(ctx, args);
    const { site, sourceId } = args.of;
    const from = await ctx.db.query("dreamLinks").withIndex("by_from", (q) => q.eq("fromSite", site).eq("fromId", sourceId)).collect();
    const to = await ctx.db.query("dreamLinks").withIndex("by_to", (q) => q.eq("toSite", site).eq("toId", sourceId)).collect();
    return [...from, ...to]
      .sort((a, b) => a._creationTime - b._creationTime)
      .map((l) => ({
        source: { site: l.fromSite, sourceId: l.fromId },
        target: { site: l.toSite, sourceId: l.toId },
        kind: l.kind,
        stepId: l.stepId,
      }));
  },
});
