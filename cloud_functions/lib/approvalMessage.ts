/**
 * What Telegram shows of an approval, and of what became of it, as daemon/alerts/messages.py says it
 * (contracts/approval_messages.json). Pure but for the deployment's approval timeouts.
 */
import type { Doc } from "../_generated/dataModel";
import { deploymentExpiry } from "./settings";
import type { Button } from "./telegram";

/** "HH:MM UTC": the one clock the whole fleet shares. */
export function clockUtc(ms: number): string {
  return `${new Date(ms).toISOString().slice(11, 16)} UTC`;
}

type Shown = Pick<
  Doc<"approvals">,
  | "_id"
  | "actionType"
  | "agentName"
  | "site"
  | "summary"
  | "costUsd"
  | "testsPassed"
  | "sourceSite"
  | "sourceId"
  | "createdAt"
  | "expiresAt"
  | "deferCount"
>;

/** The request, what it said of itself on one line, and its id (what `memsync approvals` takes). */
export function approvalText(approval: Shown): string {
  const facts = [
    ...(approval.costUsd === undefined ? [] : [`cost $${approval.costUsd.toFixed(2)}`]),
    ...(approval.testsPassed === undefined ? [] : [approval.testsPassed ? "tests passed" : "tests failed"]),
    ...(approval.sourceId === undefined ? [] : [`episode ${approval.sourceSite ?? approval.site}:${approval.sourceId}`]),
    `expires ${clockUtc(deploymentExpiry(approval))}`,
  ];
  return [
    `🟡 Approval needed: ${approval.actionType} by ${approval.agentName} on ${approval.site}`,
    ...(approval.summary ? [approval.summary] : []),
    facts.join(" · "),
    `id ${approval._id}`,
  ].join("\n");
}

/** Approve / Reject / Defer; the callback data names the approval (telegram.ts's press reads it). */
export function approvalButtons(approvalId: string): Button[][] {
  return [
    [
      { text: "Approve", data: `a:${approvalId}` },
      { text: "Reject", data: `r:${approvalId}` },
      { text: "Defer", data: `d:${approvalId}` },
    ],
  ];
}

export function resolvedText(approval: Shown, status: "approved" | "rejected", by: string, at: number): string {
  const head = status === "approved" ? `✅ Approved by ${by}` : `❌ Rejected by ${by}`;
  return `${head} at ${clockUtc(at)}\n${approvalText(approval)}`;
}

/** The hub edits its messages from the stored approval, which does not keep who deferred it: neither says. */
export function deferredText(approval: Shown): string {
  return `⏸ Deferred until ${clockUtc(deploymentExpiry(approval))}\n${approvalText(approval)}`;
}

export function expiredText(approval: Shown, at: number): string {
  return `⌛ Expired unanswered at ${clockUtc(at)}\n${approvalText(approval)}`;
}
