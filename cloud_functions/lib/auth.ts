import { v } from "convex/values";
import type { QueryCtx } from "../_generated/server";
import type { Doc } from "../_generated/dataModel";
import { fail } from "./errors";

/**
 * Every public function starts with these two arguments. `secret` is optional in the validator only
 * so that a missing secret gets the same UNAUTHORIZED answer as a wrong one (a validator error has
 * no code for the client to branch on).
 */
export const siteArgs = { site: v.string(), secret: v.optional(v.string()) };

export async function sha256Hex(text: string): Promise<string> {
  const digest = await crypto.subtle.digest("SHA-256", new TextEncoder().encode(text));
  return Array.from(new Uint8Array(digest), (byte) => byte.toString(16).padStart(2, "0")).join("");
}

/** Compares in time independent of where the first difference is. */
export function sameText(a: string, b: string): boolean {
  let diff = a.length ^ b.length;
  for (let i = 0; i < Math.max(a.length, b.length); i += 1) {
    diff |= (a.charCodeAt(i) || 0) ^ (b.charCodeAt(i) || 0);
  }
  return diff === 0;
}

export async function findSite(db: QueryCtx["db"], name: string): Promise<Doc<"sites"> | null> {
  return await db
    .query("sites")
    .withIndex("by_name", (q) => q.eq("name", name))
    .unique();
}

/**
 * The site's name once its secret checks out. One message for every failure, so a caller cannot
 * probe which site names exist; the secret itself never appears in it.
 */
export async function authenticate(
  ctx: { db: QueryCtx["db"] },
  args: { site: string; secret?: string },
): Promise<string> {
  const denied = () => fail("UNAUTHORIZED", `site '${args.site}' is unknown, disabled, or its secret is wrong`);
  if (!args.secret) denied();
  const site = await findSite(ctx.db, args.site);
  const hash = await sha256Hex(args.secret ?? "");
  if (site === null || site.disabled === true || !sameText(hash, site.secretHash)) denied();
  return args.site;
}
