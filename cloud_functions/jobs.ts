import { v } from "convex/values";
import { mutation } from "./_generated/server";
import { authenticate, siteArgs } from "./lib/auth";

/**
 * The first site to claim (job, slot) owns it forever; mutations are serializable, so two sites
 * racing for a slot cannot both insert. `claimed` says whether the caller is the owner, so a
 * retried call (reply lost) still learns that it won.
 */
export const claimSlot = mutation({
  args: { ...siteArgs, job: v.string(), slot: v.string() },
  returns: v.object({ claimed: v.boolean(), claimant: v.string() }),
  handler: async (ctx, args) => {
    const site = await authenticate(ctx, args);
    const found = await ctx.db
      .query("jobClaims")
      .withIndex("by_job_slot", (q) => q.eq("job", args.job).eq("slot", args.slot))
      .unique();
    if (found !== null) return { claimed: found.claimant === site, claimant: found.claimant };
    await ctx.db.insert("jobClaims", { job: args.job, slot: args.slot, claimant: site, claimedAt: Date.now() });
    return { claimed: true, claimant: site };
  },
});
