/** What Telegram says of an alert notice, and the buttons it offers. Pure. */
import type { Notice } from "./alertMachine";
import { duration, plural } from "./alertSignals";
import type { Button } from "./telegram";

export const SNOOZE_MS = 60 * 60_000;
export const MUTE_MS = 24 * 60 * 60_000;

/** `subject` is a site's name, or for `expiring` an approval id (its detail names everything). */
export function noticeText(signal: string, subject: string, notice: Notice): string {
  if (signal === "expiring") return `⏳ ${notice.detail}`;
  switch (notice.kind) {
    case "down":
      return `${notice.severity === "critical" ? "🔴" : "🟠"} ${subject} ${notice.detail}`;
    case "reminder":
      return `⏰ still: ${subject} ${notice.detail} (down ${duration(notice.downForMs)})`;
    case "recovered": {
      const caughtUp = notice.caughtUp !== null && notice.caughtUp > 0 ? `, ${plural(notice.caughtUp, "episode")} caught up` : "";
      return `✅ ${subject} recovered after ${duration(notice.downForMs)}${caughtUp}`;
    }
  }
}

/**
 * Snooze and Mute on what keeps nagging (down, reminders), naming the machine by its short id; an
 * approval about to expire offers its Defer instead (reminders and mutes mean nothing to a one-off).
 */
export function noticeButtons(signal: string, subject: string, machineId: string, notice: Notice): Button[][] | undefined {
  if (notice.kind === "recovered") return undefined;
  if (signal === "expiring") return [[{ text: "Defer", data: `d:${subject}` }]];
  return [
    [
      { text: "Snooze 1 h", data: `s:${machineId}` },
      { text: "Mute 1 day", data: `m:${machineId}` },
    ],
  ];
}
