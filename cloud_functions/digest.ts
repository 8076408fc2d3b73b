import { internalMutation } from "./_generated/server";

const DAY_MS = 24 * 60 * 60 * 1000;
// Enough for a busy day across sites while staying inside one transaction's read limits.
const MAX_EPISODES = 5000;

type SiteStats = { site: string; episodes: number; successRate: number | null; meanReward: number | null };

/**
 * Cron daily-digest: per site, the episodes created in the last 24 h, their success rate and mean
 * reward (over episodes that have one). A mutation only because crons cannot run queries; it
 * writes nothing. Sending the digest anywhere is a later step's job.
 */
export const daily = internalMutation({
  args: {},
  handler: async (ctx) => {
    const until = Date.now();
    const since = until - DAY_MS;
    const recent = await ctx.db
      .query("episodes")
      .withIndex("by_created", (q) => q.eq("archived", false).gte("createdAt", since))
      .take(MAX_EPISODES + 1);
    const sums = new Map<string, { episodes: number; successes: number; rewardSum: number; rewarded: number }>();
    for (const doc of recent.slice(0, MAX_EPISODES)) {
      const sum = sums.get(doc.sourceSite) ?? { episodes: 0, successes: 0, rewardSum: 0, rewarded: 0 };
      sum.episodes += 1;
      sum.successes += doc.success ? 1 : 0;
      if (doc.reward !== null) {
        sum.rewardSum += doc.reward;
        sum.rewarded += 1;
      }
      sums.set(doc.sourceSite, sum);
    }
    const sites: SiteStats[] = [...sums.entries()].sort().map(([site, sum]) => ({
      site,
      episodes: sum.episodes,
      successRate: sum.episodes === 0 ? null : sum.successes / sum.episodes,
      meanReward: sum.rewarded === 0 ? null : sum.rewardSum / sum.rewarded,
    }));
    const digest = { since, until, sites, truncated: recent.length > MAX_EPISODES };
    console.log("daily digest", JSON.stringify(digest));
    return digest;
  },
});
