/**
 * The dream cycle's writes (dreams.ts), as the hub's sync/backbone/hub/memory/dreams.py makes them: a step,
 * its links and its members' marks in one mutation, each mark a change in the feed; an undo that
 * puts back exactly what the step changed; a forgotten memory taking its links, and its steps undone.
 */
import type { Doc, Id } from "../_generated/dataModel";
import type { MutationCtx } from "../_generated/server";
import { ChangeSequence } from "./changes";
import { findDocument } from "./push";

export const KINDS = ["consolidates", "supersedes"] as const;
export const ROLE_OF_KIND: Record<string, string> = { consolidates: "merged", supersedes: "superseded" };

export type Key = { site: string; sourceId: string };
export type StepView = {
  stepId: string;
  kind: string;
  canonical: Key;
  members: Key[];
  at: number;
  run: string;
  reason: string;
  synthesis: unknown;
  undoneAt: number | null;
  undoneBy: string | null;
};

export function stepView(doc: Doc<"dreamSteps">): StepView {
  return {
    stepId: doc._id,
    kind: doc.kind,
    canonical: { site: doc.canonicalSite, sourceId: doc.canonicalId },
    members: doc.members,
    at: doc.at,
    run: doc.run,
    reason: doc.reason,
    synthesis: doc.synthesis ?? null,
    undoneAt: doc.undoneAt ?? null,
    undoneBy: doc.undoneBy ?? null,
  };
}

/** Undo one standing step: its members' marks (a change each) and its links go; the record stays. */
export async function undoStep(ctx: MutationCtx, step: Doc<"dreamSteps">, by: string, now: number): Promise<void> {
  await ctx.db.patch(step._id, { undoneAt: now, undoneBy: by });
  for (const link of await ctx.db.query("dreamLinks").withIndex("by_step", (q) => q.eq("stepId", step._id)).collect()) {
    await ctx.db.delete(link._id);
  }
  const sequence = new ChangeSequence(ctx.db);
  for (const member of step.members) {
    const doc = await findDocument(ctx.db, member.site, member.sourceId);
    if (doc === null || !("dreamState" in doc) || doc.dreamState?.step !== step._id) continue;
    await ctx.db.patch(doc._id, { dreamState: undefined, changeSeq: await sequence.next() });
  }
  await sequence.save();
}

/** A forgotten memory takes its links with it, and the steps it stood for are undone ("forget"). */
export async function releaseForgotten(ctx: MutationCtx, site: string, sourceId: string): Promise<void> {
  const now = Date.now();
  const steps = await ctx.db
    .query("dreamSteps")
    .withIndex("by_canonical", (q) => q.eq("canonicalSite", site).eq("canonicalId", sourceId))
    .collect();
  for (const step of steps) if (step.undoneAt === undefined) await undoStep(ctx, step, "forget", now);
  const from = await ctx.db.query("dreamLinks").withIndex("by_from", (q) => q.eq("fromSite", site).eq("fromId", sourceId)).collect();
  const to = await ctx.db.query("dreamLinks").withIndex("by_to", (q) => q.eq("toSite", site).eq("toId", sourceId)).collect();
  for (const link of [...from, ...to]) await ctx.db.delete(link._id);
}

export type StepId = Id<"dreamSteps">;
