/**
 * The largest push (200 realistic ~2 KB episodes) under Convex's per-transaction limits, as
 * convex-test enforces them with `transactionLimits: true` (16 MiB read/written, 32,000 documents
 * read, 16,000 written, 4,096 index ranges). Prints the headroom for the report.
 */
import { describe, expect, test } from "vitest";
import { api } from "./_generated/api";
import { advanceCursor } from "./lib/cursor";
import { MAX_BATCH_ROWS, pushEpisodes, type PushItem } from "./lib/push";
import { backend, errorMessage, registerSite, type Backend } from "./test.setup";
import { realisticItem } from "./test.fixtures";

const batch = (prefix: string, edit = false): PushItem[] =>
  Array.from({ length: MAX_BATCH_ROWS }, (_, i) => {
    const episode = realisticItem(`${prefix}${i}`);
    return edit ? { ...episode, contentHash: `${episode.contentHash}-edited` } : episode;
  });

/** What the mutation's body uses of each limit, measured inside one transaction. */
async function measure(t: Backend, items: PushItem[]) {
  return await t.run(async (ctx) => {
    await pushEpisodes(ctx, "laptop", items, Date.now());
    await advanceCursor(ctx, "laptop", 1, items.length, Date.now());
    return await ctx.meta.getTransactionMetrics();
  });
}

describe("a 200-episode push within Convex's transaction limits", () => {
  test("insert, re-push (unchanged) and edit all pass, with headroom", async () => {
    const t = backend({ transactionLimits: true });
    const laptop = await registerSite(t, "laptop");
    const items = batch("e");
    const bytes = new TextEncoder().encode(JSON.stringify(items)).length;
    expect(bytes / items.length).toBeGreaterThan(1800);

    const first = await t.mutation(api.episodes.bulkSyncEpisodes, { ...laptop, cursor: 200, episodes: items });
    expect(first.results.every((r) => r.outcome === "inserted")).toBe(true);
    const again = await t.mutation(api.episodes.bulkSyncEpisodes, { ...laptop, cursor: 200, episodes: items });
    expect(again.results.every((r) => r.outcome === "unchanged")).toBe(true);
    const edits = batch("e", true);
    const edited = await t.mutation(api.episodes.bulkSyncEpisodes, { ...laptop, cursor: 200, episodes: edits });
    expect(edited.results.every((r) => r.outcome === "updated")).toBe(true);

    const fresh = backend({ transactionLimits: true });
    const usage = { insert: await measure(fresh, batch("m")), unchanged: await measure(fresh, batch("m")), update: await measure(fresh, batch("m", true)) };
    for (const [kind, metrics] of Object.entries(usage)) {
      const line = Object.entries(metrics)
        .map(([name, { used, remaining }]) => `${name} ${used}/${used + remaining} (${((100 * used) / (used + remaining)).toFixed(1)}%)`)
        .join(", ");
      console.log(`200 x ${Math.round(bytes / items.length)} B, ${kind}: ${line}`);
      for (const { used, remaining } of Object.values(metrics)) expect(used).toBeLessThan((used + remaining) / 4);
    }
  });

  test("the limits are really enforced (a tighter one fails the same push)", async () => {
    const t = backend({ transactionLimits: { documentsWritten: 100 } });
    const laptop = await registerSite(t, "laptop");
    const message = await errorMessage(t.mutation(api.episodes.bulkSyncEpisodes, { ...laptop, cursor: 1, episodes: batch("x") }));
    expect(message).toMatch(/documents/i);
  });
});
