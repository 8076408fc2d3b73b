/**
 * The cold archive's file format, as sync/archive/codec.py has it (pure, no I/O): one file per site
 * and ISO week of the episodes' ts (UTC), gzip-compressed JSON Lines, one episode per line as the
 * export prints it (lib/episodeView.ts, without `archived`), in (ts, sourceId) order.
 */
import type { ExportedEpisode } from "./episodeView";

const DAY_MS = 24 * 60 * 60 * 1000;
const WEEK_MS = 7 * DAY_MS;

export type ArchiveRecord = ExportedEpisode;

/** Monday of ISO week 1 of `year`, 00:00 UTC. */
function week1Monday(year: number): number {
  const jan4 = Date.UTC(year, 0, 4);
  return jan4 - ((new Date(jan4).getUTCDay() + 6) % 7) * DAY_MS;
}

/** The ISO week an episode's ts (ms) falls in, UTC: "2026-W08". */
export function isoWeek(ts: number): string {
  const d = new Date(ts);
  const weekday = (d.getUTCDay() + 6) % 7; // Monday 0
  const thursday = Date.UTC(d.getUTCFullYear(), d.getUTCMonth(), d.getUTCDate() - weekday + 3);
  const year = new Date(thursday).getUTCFullYear();
  const week = Math.floor((thursday - week1Monday(year)) / WEEK_MS) + 1;
  return `${String(year).padStart(4, "0")}-W${String(week).padStart(2, "0")}`;
}

/** [start, end) of an ISO week, ms. */
export function weekRange(week: string): { start: number; end: number } {
  const match = /^(\d{4})-W(\d{2})$/.exec(week);
  if (match === null) throw new Error(`not an ISO week: ${week}`);
  const start = week1Monday(Number(match[1])) + (Number(match[2]) - 1) * WEEK_MS;
  return { start, end: start + WEEK_MS };
}

function compare(a: ArchiveRecord, b: ArchiveRecord): number {
  if (a.ts !== b.ts) return a.ts - b.ts;
  return a.sourceId < b.sourceId ? -1 : a.sourceId > b.sourceId ? 1 : 0;
}

/**
 * A week's records: the file's, then this run's (an episode archived again replaces its old copy),
 * without the keys in `drop` (forgotten), in file order.
 */
export function merge(existing: ArchiveRecord[], added: ArchiveRecord[], drop: Set<string>): ArchiveRecord[] {
  const byKey = new Map<string, ArchiveRecord>();
  for (const record of [...existing, ...added]) {
    if (drop.has(record.sourceId)) continue;
    const { archived: _archived, ...rest } = record as ArchiveRecord & { archived?: true };
    byKey.set(record.sourceId, rest);
  }
  return [...byKey.values()].sort(compare);
}

/**
 * A line's keys, in the order the hub writes them (sync/episode.py's EXPORT_FIELDS, exportEpisode's
 * order), then any other (metadataJson: metadata Convex keeps as text, lib/metadata.ts) in Convex's
 * order. contracts/archive_week pins the lines; the hub writes them as written here
 * (sync/archive/lines.py).
 */
const LINE_FIELDS = [
  "sourceSite",
  "sourceId",
  "sessionId",
  "task",
  "input",
  "output",
  "critique",
  "reward",
  "success",
  "latencyMs",
  "tokensUsed",
  "tags",
  "metadata",
  "ts",
  "createdAt",
  "agentName",
  "agentPlatform",
  "agentInterface",
  "parentAgent",
  "llmProvider",
  "llmModel",
  "contentHash",
  "syncedAt",
] as const;

/**
 * A value with every object's keys in Convex's order: sorted by UTF-16 code unit, as convex/values'
 * convexToJson sorts them when a value crosses a function boundary (records reach the writing
 * action that way; sorted here again so that the lines never depend on how a record came), then
 * as a JavaScript object holds them, array indexes ("2", "10") first, ascending.
 */
export function convexOrder(value: unknown): unknown {
  if (Array.isArray(value)) return value.map(convexOrder);
  if (typeof value !== "object" || value === null) return value;
  const out: Record<string, unknown> = {};
  for (const key of Object.keys(value).sort()) out[key] = convexOrder((value as Record<string, unknown>)[key]);
  return out;
}

function line(record: ArchiveRecord): string {
  const fields = convexOrder(record) as Record<string, unknown>;
  const ordered: Record<string, unknown> = {};
  for (const key of LINE_FIELDS) if (key in fields) ordered[key] = fields[key];
  for (const [key, value] of Object.entries(fields)) if (!(key in ordered)) ordered[key] = value;
  // Numbers as JSON.stringify writes a float64 (1.0 is 1): the hub writes them so too.
  return JSON.stringify(ordered);
}

export function encodeLines(records: ArchiveRecord[]): string {
  return records.map((record) => `${line(record)}\n`).join("");
}

export class ArchiveDamaged extends Error {}

/** The records of a file's text; ArchiveDamaged names what is wrong. */
export function decodeLines(text: string): ArchiveRecord[] {
  const lines = text.split("\n");
  if (lines[lines.length - 1] === "") lines.pop();
  return lines.map((line, index) => {
    let record: unknown;
    try {
      record = JSON.parse(line);
    } catch {
      throw new ArchiveDamaged(`line ${index + 1} is not JSON`);
    }
    const r = record as { sourceId?: unknown; ts?: unknown; contentHash?: unknown };
    if (typeof record !== "object" || record === null || typeof r.sourceId !== "string" || typeof r.ts !== "number") {
      throw new ArchiveDamaged(`line ${index + 1} is not an episode`);
    }
    return record as ArchiveRecord;
  });
}

export function countLines(text: string): number {
  let lines = 0;
  for (let i = text.indexOf("\n"); i !== -1; i = text.indexOf("\n", i + 1)) lines += 1;
  return lines;
}

export async function sha256Bytes(data: Uint8Array): Promise<string> {
  const digest = await crypto.subtle.digest("SHA-256", new Uint8Array(data));
  return Array.from(new Uint8Array(digest), (byte) => byte.toString(16).padStart(2, "0")).join("");
}

/** Is a file, by its episodes' ts range, in [since, until)? */
export function overlaps(file: { fromTs: number; toTs: number }, since?: number, until?: number): boolean {
  return (since === undefined || file.toTs >= since) && (until === undefined || file.fromTs < until);
}

/** The manifest of records just encoded (in file order) into `data`. */
export async function manifestOf(records: ArchiveRecord[], data: Uint8Array) {
  const first = records[0]!;
  const last = records[records.length - 1]!;
  return {
    count: records.length,
    sha256: await sha256Bytes(data),
    bytes: data.length,
    firstId: first.sourceId,
    lastId: last.sourceId,
    fromTs: first.ts,
    toTs: last.ts,
  };
}
