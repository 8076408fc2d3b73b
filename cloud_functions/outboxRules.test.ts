/**
 * The Telegram outbox's rules (contracts/outbox_rules.json) and keys (contracts/outbox_keys.json),
 * as tests/test_outbox_rules.py holds the hub's to them: the key each message is queued under, the
 * backoff by tries failed, and the tries before a message is given up (deliver's giving up at
 * MAX_ATTEMPTS is telegram.test.ts's).
 */
import { describe, expect, test } from "vitest";
import { alertKey, approvalEditKey, approvalKey, digestKey, digestSentKey } from "./lib/outboxKeys";
import { contract } from "./test.contracts";
import { backoffMs, MAX_ATTEMPTS } from "./telegram";

type KeyCase = Record<string, unknown> & { message: string; key: string };
const KEYS = contract<{ cases: KeyCase[] }>("outbox_keys.json").cases;
const KEYED: Record<string, (c: KeyCase) => string> = {
  alert: (c) => alertKey(c.subject as string, c.kind as string, c.spell as number, c.reminders as number),
  approval: (c) => approvalKey(c.approval as string),
  "approval edit": (c) => approvalEditKey(c.approval as string, c.status as string, c.defer_count as number),
  digest: (c) => digestKey(c.day as string),
  "digest asked for": (c) => digestSentKey(c.day as string, c.at as number),
};

describe("each message is queued under the contract's key (contracts/outbox_keys.json)", () => {
  test.each(KEYS.map((c) => [c.key, c] as const))("%s", (key, c) => {
    expect(KEYED[c.message](c)).toBe(key);
  });

  test("every message of the outbox has key cases", () => {
    expect(new Set(KEYS.map((c) => c.message))).toEqual(new Set(Object.keys(KEYED)));
  });
});

const RULES = contract<{ max_attempts: number; hub_jitter_ms: number; backoff_ms: { tries: number; wait_ms: number }[] }>("outbox_rules.json");

describe("the outbox's retry rules", () => {
  test.each(RULES.backoff_ms.map((c) => [c.tries, c.wait_ms] as const))("after %i failed tries a message waits %i ms", (tries, waitMs) => {
    expect(backoffMs(tries)).toBe(waitMs);
  });

  test("a message Telegram keeps failing is given up after the contract's tries", () => {
    expect(MAX_ATTEMPTS).toBe(RULES.max_attempts);
  });
});
