/**
 * The fleet as the registry knows it: each registered site (disabled ones aside) with its daemon's
 * last heartbeat, its cursor and its sync health. What agents:sites returns and what the alerts
 * cron observes, read once here so that both see the same thing.
 */
import { v } from "convex/values";
import type { QueryCtx } from "../_generated/server";
import { readCursor } from "./cursor";
import { healthState, nullable } from "./validators";

export const siteRow = v.object({
  site: v.string(),
  lastHeartbeat: nullable(v.number()),
  online: v.boolean(),
  version: nullable(v.string()),
  host: nullable(v.string()),
  pid: nullable(v.number()),
  lagS: nullable(v.number()),
  backlog: nullable(v.number()),
  indexState: nullable(v.string()),
  cursor: nullable(v.number()),
  lastSyncAt: nullable(v.number()),
  totalSynced: nullable(v.number()),
  quarantined: v.number(),
  conflicts: v.number(),
  redacted: v.number(),
  health: nullable(healthState),
});

export type SiteRow = typeof siteRow.type;

export async function fleet(db: QueryCtx["db"]): Promise<SiteRow[]> {
  const registered = (await db.query("sites").collect()).filter((s) => s.disabled !== true);
  const rows: SiteRow[] = [];
  for (const { name } of registered.sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0))) {
    const state = await db
      .query("siteStates")
      .withIndex("by_site", (q) => q.eq("site", name))
      .unique();
    const cursor = await readCursor(db, name);
    const health = await db
      .query("healthStates")
      .withIndex("by_site", (q) => q.eq("site", name))
      .unique();
    rows.push({
      site: name,
      lastHeartbeat: state?.lastHeartbeat ?? null,
      online: state?.status === "online",
      version: state?.version ?? null,
      host: state?.host ?? null,
      pid: state?.pid ?? null,
      lagS: state?.lagS ?? null,
      backlog: state?.backlog ?? null,
      indexState: state?.indexState ?? null,
      cursor: cursor?.lastSyncedId ?? null,
      lastSyncAt: cursor?.lastSyncedAt ?? null,
      totalSynced: cursor?.totalSynced ?? null,
      quarantined: state?.quarantined ?? 0,
      conflicts: state?.conflicts ?? 0,
      redacted: state?.redacted ?? 0,
      health: health?.state ?? null,
    });
  }
  return rows;
}
