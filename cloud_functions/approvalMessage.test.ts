/**
 * lib/approvalMessage.ts says what daemon/alerts/messages.py says of an approval, word for word and
 * button for button: both run contracts/approval_messages.json (tests/contracts/test_approval_messages.py is
 * the Python side).
 */
import { describe, expect, test } from "vitest";
import type { Id } from "./_generated/dataModel";
import { approvalButtons, approvalText, deferredText, expiredText, resolvedText } from "./lib/approvalMessage";
import { contract } from "./test.contracts";

type Stored = {
  id: string;
  actionType: string;
  agentName: string;
  site: string;
  summary: string | null;
  costUsd: number | null;
  testsPassed: boolean | null;
  sourceId: string | null;
  createdAt: number;
  expiresAt: number;
  deferCount: number;
};
type Case = {
  name: string;
  event: "announce" | "deferred" | "approved" | "rejected" | "expired";
  by?: string;
  at?: number;
  approval: Stored;
  text: string;
  buttons: { text: string; data: string }[][];
};

const golden = contract<{ cases: Case[] }>("approval_messages.json");

/** The contract's approval as a Convex document has it (absent, not null). */
function shown(a: Stored) {
  return {
    _id: a.id as Id<"approvals">,
    actionType: a.actionType,
    agentName: a.agentName,
    site: a.site,
    createdAt: a.createdAt,
    expiresAt: a.expiresAt,
    deferCount: a.deferCount,
    ...(a.summary === null ? {} : { summary: a.summary }),
    ...(a.costUsd === null ? {} : { costUsd: a.costUsd }),
    ...(a.testsPassed === null ? {} : { testsPassed: a.testsPassed }),
    ...(a.sourceId === null ? {} : { sourceSite: a.site, sourceId: a.sourceId }),
  };
}

/** What Convex queues for the event (lib/approvalFlow.ts, approvals.ts): the text, and the buttons (none: removed). */
function message(c: Case): { text: string; buttons: { text: string; data: string }[][] } {
  const approval = shown(c.approval);
  switch (c.event) {
    case "announce":
      return { text: approvalText(approval), buttons: approvalButtons(approval._id) };
    case "deferred":
      return { text: deferredText(approval), buttons: approvalButtons(approval._id) };
    case "expired":
      return { text: expiredText(approval, c.at!), buttons: [] };
    default:
      return { text: resolvedText(approval, c.event, c.by!, c.at!), buttons: [] };
  }
}

describe("approval messages (contracts/approval_messages.json)", () => {
  test("the contract covers every event", () => {
    expect(new Set(golden.cases.map((c) => c.event))).toEqual(new Set(["announce", "deferred", "approved", "rejected", "expired"]));
  });
  test.each(golden.cases.map((c) => [c.name, c] as const))("%s", (_, c) => {
    expect(message(c)).toEqual({ text: c.text, buttons: c.buttons });
  });
});
