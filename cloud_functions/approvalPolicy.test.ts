/**
 * lib/approvalPolicy.ts gives the answers of sync/approvals.py: its table and the cases of its
 * rules come from contracts/approval_policy.json, which tests/contracts/test_approvals_policy.py runs too.
 */
import { describe, expect, test } from "vitest";
import {
  APPROVAL_TIMEOUTS_MS,
  APPROVED_BY_POLICY,
  approvedAtCreation,
  AUTO_APPROVE_UNDER_USD,
  DEFAULT_APPROVAL_TIMEOUT_MS,
  deferredExpiry,
  effectiveExpiry,
  MAX_DEFERS,
  PRIORITY_SEVERITY,
  severityOfPriority,
} from "./lib/approvalPolicy";
import { contract } from "./test.contracts";

type Expiry = { why: string; created_at: number; expires_at: number; timeout_ms: number; defer_count: number; now?: number; expiry: number | null };
type Policy = {
  timeouts_ms: Record<string, number>;
  default_timeout_ms: number;
  approved_by_policy: string;
  auto_approve_under_usd: number;
  max_defers: number;
  approved_at_creation: { action_type: string; timeout_ms: number; cost_usd: number | null; tests_passed: boolean | null; approved: boolean }[];
  effective_expiry: Expiry[];
  deferred_expiry: Expiry[];
};

const policy = contract<Policy>("approval_policy.json");
const loudness = contract<{ table: Record<string, string>; cases: { priority: string; severity: string }[] }>("priority_severity.json");

/** An approval of category "c" whose timeout is the case's. */
const approvalOf = (c: Expiry) => ({ actionType: "c", createdAt: c.created_at, expiresAt: c.expires_at, deferCount: c.defer_count });

describe("the approval policy (contracts/approval_policy.json)", () => {
  test("the table is the contract's", () => {
    expect(APPROVAL_TIMEOUTS_MS).toEqual(policy.timeouts_ms);
    expect(DEFAULT_APPROVAL_TIMEOUT_MS).toBe(policy.default_timeout_ms);
    expect(APPROVED_BY_POLICY).toBe(policy.approved_by_policy);
    expect(AUTO_APPROVE_UNDER_USD).toBe(policy.auto_approve_under_usd);
    expect(MAX_DEFERS).toBe(policy.max_defers);
  });

  test.each(policy.approved_at_creation.map((c) => [JSON.stringify(c), c] as const))("approvedAtCreation %s", (_, c) => {
    expect(approvedAtCreation(c.action_type, c.timeout_ms, c.cost_usd ?? undefined, c.tests_passed ?? undefined)).toBe(c.approved);
  });

  test.each(policy.effective_expiry.map((c) => [c.why, c] as const))("effectiveExpiry: %s", (_, c) => {
    expect(effectiveExpiry(approvalOf(c), { c: c.timeout_ms })).toBe(c.expiry);
  });

  test.each(policy.deferred_expiry.map((c) => [c.why, c] as const))("deferredExpiry: %s", (_, c) => {
    expect(deferredExpiry(approvalOf(c), c.now!, { c: c.timeout_ms })).toBe(c.expiry);
  });
});

describe("an approval's priority to its messages' severity (contracts/priority_severity.json)", () => {
  test("the table is the contract's", () => {
    expect(PRIORITY_SEVERITY).toEqual(loudness.table);
  });

  test.each(loudness.cases.map((c) => [c.priority, c.severity] as const))("%j is %s", (priority, severity) => {
    expect(severityOfPriority(priority)).toBe(severity);
  });
});
