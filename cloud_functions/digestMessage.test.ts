/**
 * lib/digestMessage.ts writes the digest as daemon/alerts/messages.py does, word for word: both run
 * contracts/digest_messages.json (tests/contracts/test_digest_message.py is the Python side).
 */
import { describe, expect, test } from "vitest";
import { type DigestDocument, digestMessage } from "./lib/digestMessage";
import { contract } from "./test.contracts";

const golden = contract<{ cases: { why: string; digest: DigestDocument; text: string }[] }>("digest_messages.json");

describe("the digest's text (contracts/digest_messages.json)", () => {
  test.each(golden.cases.map((c) => [c.why, c] as const))("%s", (_, c) => {
    expect(digestMessage(c.digest)).toBe(c.text);
  });
});
