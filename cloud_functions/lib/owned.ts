import type { GenericId } from "convex/values";
import type { QueryCtx } from "../_generated/server";
import { fail } from "./errors";

/**
 * A row of another site is answered exactly like a missing one (NOT_FOUND), so a site can neither
 * touch nor detect what belongs to others.
 */
export async function ownedRow<T extends "approvals" | "tasks">(db: QueryCtx["db"], id: GenericId<T>, site: string) {
  const row = await db.get(id);
  if (row === null || row.site !== site) fail("NOT_FOUND", `no ${id} for site '${site}'`);
  return row;
}
