/**
 * lib/routing.ts decides who hears what, and who may decide an approval, as daemon/routing.py does:
 * both run contracts/notify_routing.json (tests/contracts/test_notify_routing.py is the Python side).
 */
import { describe, expect, test } from "vitest";
import { chatsFor, mayDecide, NOTIFY_NAMES, notifyRefusal, ownChats, PERMISSIONS, permissionRefusal, type RouteKind } from "./lib/routing";
import { contract } from "./test.contracts";

type Person = { name: string; chat_id: string; user_id?: string; notify_on?: string[]; permissions?: string[] };
type Routing = {
  names: string[];
  permissions: string[];
  refusals: ({ notify_on: string; sentence: string } | { permission: string; sentence: string })[];
  default_chat: string;
  collaborators: Person[];
  routes: { kind: RouteKind; name: string | null; default_chat?: string | null; collaborators?: Person[]; chats: string[] }[];
  deciders: { default_chat: string; collaborators: Person[]; chats: string[]; cases: { from_id: string; reviewers: string[]; may: boolean }[] };
};

const ROUTING = contract<Routing>("notify_routing.json");

/** A contract's person as the collaborators table holds them. */
const row = (p: Person) => ({
  telegramChatId: p.chat_id,
  ...(p.user_id === undefined ? {} : { telegramUserId: p.user_id }),
  notifyOn: p.notify_on ?? [],
  permissions: p.permissions ?? [],
});

describe("who hears what (contracts/notify_routing.json)", () => {
  test("the vocabulary is the contract's", () => {
    expect([...NOTIFY_NAMES]).toEqual(ROUTING.names);
    expect([...PERMISSIONS]).toEqual(ROUTING.permissions);
  });

  test.each(ROUTING.refusals.map((c) => ["notify_on" in c ? c.notify_on : c.permission, c] as const))("%s is refused in one sentence", (_, c) => {
    expect("notify_on" in c ? notifyRefusal(c.notify_on) : permissionRefusal(c.permission)).toBe(c.sentence);
  });

  test.each(ROUTING.routes.map((c) => [`${c.kind}:${c.name}:${c.default_chat === undefined ? "default" : c.default_chat}`, c] as const))("%s", (_, c) => {
    const defaultChat = c.default_chat === undefined ? ROUTING.default_chat : c.default_chat;
    expect(chatsFor(c.kind, c.name, defaultChat, (c.collaborators ?? ROUTING.collaborators).map(row))).toEqual(c.chats);
  });

  test.each(ROUTING.deciders.cases.map((c) => [`${c.from_id}:${c.reviewers.join(",")}`, c] as const))("may %s decide", (_, c) => {
    expect(mayDecide(c.from_id, c.reviewers, ROUTING.deciders.collaborators.map(row))).toBe(c.may);
  });

  test("memsync's own chats", () => {
    const chats = ownChats(ROUTING.deciders.default_chat, ROUTING.deciders.collaborators.map(row));
    expect([...chats].sort()).toEqual(ROUTING.deciders.chats);
  });
});
