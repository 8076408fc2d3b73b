/**
 * The collaborators table: the people memsync speaks to in their own Telegram chats (what each
 * hears: lib/routing.ts), and who may decide approvals with the buttons. One source of truth, the
 * operator's config file's [[collaborators]]: `memsync collaborators sync` pushes that list here
 * with the deploy key (replace, admin only), and the table becomes exactly that list; the hub
 * reads the same entries from its config. Nothing else writes it.
 */
import { v } from "convex/values";
import { internalMutation, internalQuery } from "./_generated/server";
import { collaboratorsOf } from "./lib/collaborators";
import { fail } from "./lib/errors";
import { notifyRefusal, permissionRefusal } from "./lib/routing";

const collaborator = v.object({
  name: v.string(),
  role: v.string(),
  telegramChatId: v.string(),
  telegramUserId: v.optional(v.string()),
  permissions: v.array(v.string()),
  notifyOn: v.array(v.string()),
});
type Collaborator = typeof collaborator.type;

/** Why this entry cannot be stored, in the hub's words (contracts/notify_routing.json), or null. */
function problem(c: Collaborator): string | null {
  if (c.name.trim() === "") return "a collaborator needs a name";
  if (!/^(-?[0-9]{1,20}|@[A-Za-z0-9_]{5,32})$/.test(c.telegramChatId)) return `${c.name}: use a Telegram chat id, not '${c.telegramChatId}'`;
  if (c.telegramUserId !== undefined && !/^[0-9]+$/.test(c.telegramUserId)) return `${c.name}: use a Telegram user id, not '${c.telegramUserId}'`;
  for (const name of c.permissions) {
    const refused = permissionRefusal(name);
    if (refused !== null) return `${c.name}: ${refused}`;
  }
  for (const name of c.notifyOn) {
    const refused = notifyRefusal(name);
    if (refused !== null) return `${c.name}: ${refused}`;
  }
  return null;
}

/**
 * The table becomes `collaborators`, in their order: everything checked first (INVALID names the
 * first wrong entry, and nothing is written), then every row rewritten. Admin only (the deploy key).
 */
export const replace = internalMutation({
  args: { collaborators: v.array(collaborator) },
  returns: v.object({ stored: v.number(), removed: v.array(v.string()) }),
  handler: async (ctx, { collaborators }) => {
    const names = collaborators.map((c) => c.name);
    const twice = names.find((name, i) => names.indexOf(name) !== i);
    if (twice !== undefined) fail("INVALID", `collaborator '${twice}' is listed twice: give each person one entry`);
    for (const c of collaborators) {
      const found = problem(c);
      if (found !== null) fail("INVALID", found);
    }
    const before = await collaboratorsOf(ctx.db);
    // Deleted and inserted again, so that the table's order (creation time) is the list's.
    for (const row of before) await ctx.db.delete(row._id);
    for (const c of collaborators) await ctx.db.insert("collaborators", c);
    return { stored: collaborators.length, removed: before.map((r) => r.name).filter((name) => !names.includes(name)) };
  },
});

/** The table as stored (admin: `memsync collaborators sync` shows what the deployment holds). */
export const list = internalQuery({
  args: {},
  returns: v.array(collaborator),
  handler: async (ctx) =>
    (await collaboratorsOf(ctx.db)).map(({ name, role, telegramChatId, telegramUserId, permissions, notifyOn }) => ({
      name,
      role,
      telegramChatId,
      ...(telegramUserId === undefined ? {} : { telegramUserId }),
      permissions,
      notifyOn,
    })),
});
