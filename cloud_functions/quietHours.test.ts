import { describe, expect, test } from "vitest";
import { parseQuietHours, releaseAt } from "./lib/quietHours";

const at = (iso: string) => Date.parse(iso);

describe("parseQuietHours", () => {
  test.each([
    ["22:00-07:00", { startMin: 1320, endMin: 420 }],
    [" 9:30 - 17:45 ", { startMin: 570, endMin: 1065 }],
    ["", null],
    [undefined, null],
    ["22-07", null],
    ["25:00-07:00", null],
    ["07:00-07:00", null], // an empty window
  ])("%j", (text, window) => {
    expect(parseQuietHours(text)).toEqual(window);
  });
});

describe("releaseAt: a warning waits for the end of the quiet hours; a critical never waits", () => {
  const night = parseQuietHours("22:00-07:00");
  const day = parseQuietHours("09:00-17:00");
  test.each([
    ["before the window", night, "UTC", "warning", "2026-01-15T21:59:59Z", "2026-01-15T21:59:59Z"],
    ["at its start", night, "UTC", "warning", "2026-01-15T22:00:00Z", "2026-01-16T07:00:00Z"],
    ["before midnight", night, "UTC", "warning", "2026-01-15T23:30:00Z", "2026-01-16T07:00:00Z"],
    ["after midnight", night, "UTC", "warning", "2026-01-16T03:15:20.5Z", "2026-01-16T07:00:00Z"],
    ["at its end", night, "UTC", "warning", "2026-01-16T07:00:00Z", "2026-01-16T07:00:00Z"],
    ["critical", night, "UTC", "critical", "2026-01-15T23:30:00Z", "2026-01-15T23:30:00Z"],
    ["no quiet hours", null, "UTC", "warning", "2026-01-15T23:30:00Z", "2026-01-15T23:30:00Z"],
    ["a window inside one day", day, "UTC", "warning", "2026-01-15T12:00:00Z", "2026-01-15T17:00:00Z"],
    // Berlin is UTC+1 in winter: 22:30 UTC is 23:30 there, and 07:00 there is 06:00 UTC.
    ["Berlin, winter", night, "Europe/Berlin", "warning", "2026-01-15T22:30:00Z", "2026-01-16T06:00:00Z"],
    ["Berlin, not yet quiet", night, "Europe/Berlin", "warning", "2026-01-15T20:30:00Z", "2026-01-15T20:30:00Z"],
    // New York, the night summer time starts (2026-03-08, 02:00 -> 03:00): 07:00 EDT is 11:00 UTC.
    ["New York, the night clocks go forward", night, "America/New_York", "warning", "2026-03-08T04:00:00Z", "2026-03-08T11:00:00Z"],
    ["Tokyo", night, "Asia/Tokyo", "warning", "2026-01-15T14:00:00Z", "2026-01-15T22:00:00Z"],
  ] as const)("%s", (_, window, zone, severity, now, expected) => {
    expect(new Date(releaseAt(at(now), severity, window, zone)).toISOString()).toBe(new Date(at(expected)).toISOString());
  });
});
