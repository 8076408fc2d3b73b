/**
 * The keys the Telegram outbox queues each message under (daemon/alerts/outbox_keys.py;
 * contracts/outbox_keys.json). A key is unique in the outbox: the same decision taken twice (a
 * mutation retried, a cron run again) queues its message once, and an edit names the message it
 * edits by its key. Pure.
 */

/**
 * A notice of an alert (`subjectKey`: signal:subject). A spell is named by when it went down (a
 * recovery's, by the spell it ends); a reminder's count tells its reminders apart.
 */
export function alertKey(subjectKey: string, kind: string, spell: number, reminders: number): string {
  return `alert:${subjectKey}:${spell}:${kind}${kind === "reminder" ? `:${reminders}` : ""}`;
}

/** An approval's announcement, with its buttons: the message its edits edit. */
export const approvalKey = (approvalId: string): string => `approval:${approvalId}`;

/** An edit of an approval's announcement: one per deferral while it is pending, one when it is decided or expires. */
export function approvalEditKey(approvalId: string, status: string, deferCount: number): string {
  return status === "pending" ? `approval:${approvalId}:deferred:${deferCount}` : `approval:${approvalId}:${status}`;
}

/** The daily digest of a UTC day: once, however often the day's cron runs. */
export const digestKey = (day: string): string => `digest:${day}`;

/** A digest a person asked for (`memsync digest --send`): each time they ask. */
export const digestSentKey = (day: string, atMs: number): string => `digest:${day}:sent:${atMs}`;

/**
 * The outbox key of message `key` in one chat: as is in the default chat (undefined: the key every
 * message had before collaborators, so rows queued then read on), `key@chat` in a collaborator's.
 * One message to two chats is two rows, each sent and edited in its own chat.
 */
export const chatKey = (key: string, chat: string | undefined): string => (chat === undefined ? key : `${key}@${chat}`);
