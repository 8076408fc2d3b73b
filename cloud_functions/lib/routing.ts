/**
 * Who hears what: the chats a Telegram message goes to, and who may decide an approval. Pure, as
 * daemon/telegram/policy/routing.py (both run contracts/notify_routing.json).
 *
 * memsync speaks in the default chat (TELEGRAM_CHAT_ID: everything) and in each collaborator's own
 * chat (the `collaborators` table, filled by `memsync collaborators sync`), which hears what its
 * notifyOn names: an alert kind by its signal's name, or `alerts` for every kind; an approval
 * category as `approval:<category>`, or `approvals` for every approval; `digest`. Nothing more.
 * Approve, reject and defer are for the approval's reviewers and every collaborator with the
 * `approve` permission, known by telegramUserId (or their chat's id when it is a private chat).
 */
import { SIGNALS } from "./alertSignals";
import { APPROVAL_TIMEOUTS_MS } from "./approvalPolicy";

export type RouteKind = "alert" | "approval" | "digest";
export const APPROVE = "approve";
export const PERMISSIONS: readonly string[] = [APPROVE];
const APPROVAL_PREFIX = "approval:";
/** Every name notifyOn may hold, in the order the refusal lists them. */
export const NOTIFY_NAMES: readonly string[] = [
  "alerts",
  ...Object.keys(SIGNALS),
  "approvals",
  ...Object.keys(APPROVAL_TIMEOUTS_MS).map((category) => `${APPROVAL_PREFIX}${category}`),
  "digest",
];

export type Listener = { telegramChatId: string; notifyOn: readonly string[] };
export type Approver = { telegramChatId: string; telegramUserId?: string; permissions: readonly string[] };

/** The sentence refusing a notifyOn name memsync does not know, or null. */
export function notifyRefusal(name: string): string | null {
  return NOTIFY_NAMES.includes(name) ? null : `notify_on has no name '${name}' (names: ${NOTIFY_NAMES.join(", ")})`;
}

/** The sentence refusing a permission memsync does not know, or null. */
export function permissionRefusal(name: string): string | null {
  return PERMISSIONS.includes(name) ? null : `permissions has no name '${name}' (names: ${PERMISSIONS.join(", ")})`;
}

/** Does a chat whose notifyOn is this hear a message of `kind` (about signal or category `name`)? */
export function wants(notifyOn: readonly string[], kind: RouteKind, name: string | null): boolean {
  if (kind === "alert") return notifyOn.includes("alerts") || (name !== null && notifyOn.includes(name));
  if (kind === "approval") return notifyOn.includes("approvals") || notifyOn.includes(`${APPROVAL_PREFIX}${name}`);
  return notifyOn.includes("digest");
}

/**
 * The chats a message goes to: the default chat (if any) first, then each collaborator's chat that
 * asked for it, in the order they are listed, each chat once.
 */
export function chatsFor(kind: RouteKind, name: string | null, defaultChat: string | null, people: readonly Listener[]): string[] {
  const chats = defaultChat === null ? [] : [defaultChat];
  for (const person of people) {
    if (!chats.includes(person.telegramChatId) && wants(person.notifyOn, kind, name)) chats.push(person.telegramChatId);
  }
  return chats;
}

/** The chats memsync speaks in: a press in any other is refused, whatever it asks. */
export function ownChats(defaultChat: string | null, people: readonly Listener[]): Set<string> {
  return new Set([...(defaultChat === null ? [] : [defaultChat]), ...people.map((p) => p.telegramChatId)]);
}

/** Who a collaborator is on Telegram: their user id, or their chat's when it is a private chat (a positive id); null when neither says. */
export function presserId(person: Approver): string | null {
  if (person.telegramUserId !== undefined) return person.telegramUserId;
  return /^[0-9]+$/.test(person.telegramChatId) ? person.telegramChatId : null;
}

/** May the presser `fromId` approve, reject or defer an approval that lists `reviewers`? */
export function mayDecide(fromId: string, reviewers: readonly string[], people: readonly Approver[]): boolean {
  return reviewers.includes(fromId) || people.some((p) => presserId(p) === fromId && p.permissions.includes(APPROVE));
}
