/** The alert machines' stored states (table alertMachines), one row per (signal, subject). */
import type { Doc } from "../_generated/dataModel";
import type { MutationCtx, QueryCtx } from "../_generated/server";
import type { AlertState } from "./alertMachine";
import { sha256Hex } from "./auth";
import { type Subject, subjectKey } from "./alertSignals";

export type MachineRow = Doc<"alertMachines">;

/** 16 hex digits of the key's SHA-256: short enough for Telegram's 64-byte callback data. */
export async function machineId(key: string): Promise<string> {
  return (await sha256Hex(key)).slice(0, 16);
}

export async function machineByKey(db: QueryCtx["db"], key: string): Promise<MachineRow | null> {
  return await db
    .query("alertMachines")
    .withIndex("by_key", (q) => q.eq("key", key))
    .unique();
}

export async function machineById(db: QueryCtx["db"], id: string): Promise<MachineRow | null> {
  return await db
    .query("alertMachines")
    .withIndex("by_short_id", (q) => q.eq("id", id))
    .first();
}

export function stateOf(row: MachineRow): AlertState {
  const { state, since, streak, downAt, reminders, notified, valueAtDown, snoozedUntil, mutedUntil } = row;
  return { state, since, streak, downAt, reminders, notified, valueAtDown, snoozedUntil, mutedUntil };
}

const same = (a: AlertState, b: AlertState) => (Object.keys(a) as (keyof AlertState)[]).every((k) => a[k] === b[k]);

/** Stores `state` as the machine of `subject` (`found`: its row, if it has one); writes only a change. */
export async function saveMachine(ctx: MutationCtx, subject: Subject, found: MachineRow | null, state: AlertState): Promise<MachineRow> {
  if (found !== null) {
    if (!same(stateOf(found), state)) await ctx.db.patch(found._id, state);
    return { ...found, ...state };
  }
  const key = subjectKey(subject);
  const id = await ctx.db.insert("alertMachines", { key, id: await machineId(key), signal: subject.signal, subject: subject.subject, ...state });
  return (await ctx.db.get(id))!;
}
