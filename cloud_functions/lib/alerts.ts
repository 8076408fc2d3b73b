import type { MutationCtx } from "../_generated/server";

/**
 * Records `state` under `key` and returns the state it replaces (null: none yet). Callers alert on
 * transitions (one when a thing goes down, one when it recovers), never on every poll.
 */
export async function setAlertState(
  ctx: MutationCtx,
  key: string,
  state: string,
  now: number,
): Promise<string | null> {
  const found = await ctx.db
    .query("alertStates")
    .withIndex("by_key", (q) => q.eq("key", key))
    .unique();
  if (found === null) {
    await ctx.db.insert("alertStates", { key, state, since: now });
    return null;
  }
  if (found.state !== state) await ctx.db.patch(found._id, { state, since: now });
  return found.state;
}
