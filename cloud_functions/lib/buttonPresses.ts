/**
 * What a button press asks, and whether the presser may: pure, as daemon/telegram/callbacks.py
 * (both run contracts/button_presses.json). telegram.ts's press mutation does what is allowed.
 */
import { type Approver, mayDecide } from "./routing";

/** The answer to an approve, reject or defer pressed by someone not among the approval's reviewers. */
export const NOT_A_REVIEWER = "You are not a reviewer of this approval.";

/** The actions a button's callback data names: approve, reject, defer an approval; snooze, mute an alert. */
export type ButtonAction = "a" | "r" | "d" | "s" | "m";

/** The actions only an approval's reviewers may take (its decisions); anyone in the chat snoozes or mutes an alert. */
export const REVIEWERS_ONLY: ReadonlySet<ButtonAction> = new Set(["a", "r", "d"]);

/**
 * What a press asks: its action and target (an approval's or an alert's id), or null for data that
 * asks nothing we know. daemon/telegram/callbacks.py's parse.
 */
export function parseButton(data: string): { action: ButtonAction; target: string } | null {
  // [\s\S]: a target is opaque, any non-empty text, newlines included.
  const parsed = /^([ardsm]):([\s\S]+)$/.exec(data);
  return parsed === null ? null : { action: parsed[1] as ButtonAction, target: parsed[2] };
}

/**
 * Why the presser (a Telegram user id) may not take `action` on an approval with these reviewers,
 * in the hub's words, or null: daemon/telegram/callbacks.py's refusal (its chat check is
 * telegram.ts's press). `people`: the collaborators, of whom those with `approve` decide too.
 */
export function reviewerRefusal(action: ButtonAction, fromId: string, reviewers: readonly string[], people: readonly Approver[] = []): string | null {
  return REVIEWERS_ONLY.has(action) && !mayDecide(fromId, reviewers, people) ? NOT_A_REVIEWER : null;
}
