import { v } from "convex/values";
import { internalMutation } from "./_generated/server";
import { findSite, sha256Hex } from "./lib/auth";
import { fail } from "./lib/errors";

// The same rule as memsync's site.name (daemon/config.py), in the same words: contracts/site_names.json.
export const SITE_NAME = /^[A-Za-z0-9][A-Za-z0-9._-]{0,62}$/;
export const SITE_NAME_RULE = "use letters, digits, '.', '_' or '-' (at most 63), starting with a letter or digit";

/**
 * Admin only (`npx convex run sites:register '{"name": "laptop"}'`): creates a site with a random
 * 32-byte secret and returns it once. Only its SHA-256 is stored, so a lost secret means a new site.
 */
export const register = internalMutation({
  args: { name: v.string() },
  returns: v.object({ site: v.string(), secret: v.string() }),
  handler: async (ctx, args) => {
    if (!SITE_NAME.test(args.name)) fail("INVALID", `site name ${JSON.stringify(args.name)}: ${SITE_NAME_RULE}`);
    if ((await findSite(ctx.db, args.name)) !== null) fail("CONFLICT", `site '${args.name}' is already registered`);
    const bytes = crypto.getRandomValues(new Uint8Array(32));
    const secret = Array.from(bytes, (byte) => byte.toString(16).padStart(2, "0")).join("");
    await ctx.db.insert("sites", { name: args.name, secretHash: await sha256Hex(secret), createdAt: Date.now() });
    return { site: args.name, secret };
  },
});
