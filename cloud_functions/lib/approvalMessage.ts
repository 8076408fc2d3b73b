/** What Telegram shows of an approval, and of what became of it. Pure but for the deployment's approval timeouts. */
import type { Doc } from "../_generated/dataModel";
import { deploymentExpiry } from "./settings";
import type { Button } from "./telegram";

/** "HH:MM UTC": the one clock the whole fleet shares. */
export function clockUtc(ms: number): string {
  return `${new Date(ms).toISOString().slice(11, 16)} UTC`;
}

type Shown = Pick<
  Doc<"approvals">,
  "actionType" | "agentName" | "site" | "summary" | "costUsd" | "createdAt" | "expiresAt" | "deferCount"
>;

export function approvalText(approval: Shown): string {
  return [
    `🟡 Approval needed: ${approval.actionType} by ${approval.agentName} on ${approval.site}`,
    ...(approval.summary ? [approval.summary] : []),
    ...(approval.costUsd === undefined ? [] : [`cost $${approval.costUsd.toFixed(2)}`]),
    `expires ${clockUtc(deploymentExpiry(approval))}`,
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

export function deferredText(approval: Shown, by: string): string {
  return `⏸ Deferred by ${by} until ${clockUtc(deploymentExpiry(approval))}\n${approvalText(approval)}`;
}

export function expiredText(approval: Shown, at: number): string {
  return `⌛ Expired unanswered at ${clockUtc(at)}\n${approvalText(approval)}`;
}
