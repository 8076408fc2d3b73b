/**
 * The Telegram outbox's retry rules (contracts/outbox_rules.json), as tests/test_outbox_rules.py
 * holds the hub's sender to them: the backoff by tries failed, and the tries before a message is
 * given up (deliver's giving up at MAX_ATTEMPTS is telegram.test.ts's).
 */
import { describe, expect, test } from "vitest";
import { contract } from "./test.contracts";
import { backoffMs, MAX_ATTEMPTS } from "./telegram";

const RULES = contract<{ max_attempts: number; hub_jitter_ms: number; backoff_ms: { tries: number; wait_ms: number }[] }>("outbox_rules.json");

describe("the outbox's retry rules", () => {
  test.each(RULES.backoff_ms.map((c) => [c.tries, c.wait_ms] as const))("after %i failed tries a message waits %i ms", (tries, waitMs) => {
    expect(backoffMs(tries)).toBe(waitMs);
  });

  test("a message Telegram keeps failing is given up after the contract's tries", () => {
    expect(MAX_ATTEMPTS).toBe(RULES.max_attempts);
  });
});
