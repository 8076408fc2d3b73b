/**
 * Sweep alerts (the `alerts` cron, every minute): the fleet's signals (lib/alertSignals.ts, the
 * daemons' table) observed from the registry and the pending approvals, each (signal, subject)
 * machine stepped from its stored state, and every notice queued for Telegram once. On Convex the
 * deployment runs it itself, so a site that stopped is reported even when every site has stopped.
 */
import { v } from "convex/values";
import { internalMutation } from "./_generated/server";
import { step } from "./lib/alertMachine";
import { type ApprovalView, observeApprovals, observeSites, severityOf, subjectKey } from "./lib/alertSignals";
import { machineByKey, saveMachine, stateOf } from "./lib/alertStore";
import { noticeButtons, noticeText } from "./lib/alertText";
import { fleet } from "./lib/fleet";
import { enqueue } from "./lib/outbox";
import { alertsEnabled, approvalLeadMs, deploymentExpiry, signalSpecs } from "./lib/settings";

export const sweep = internalMutation({
  args: { now: v.optional(v.number()) },
  returns: v.object({ observed: v.number(), notices: v.array(v.string()) }),
  handler: async (ctx, args) => {
    const now = args.now ?? Date.now();
    // As the hub's alerts.enabled = false: no machine is stepped, nothing is said.
    if (!alertsEnabled()) return { observed: 0, notices: [] };
    const specs = signalSpecs();
    const pending = await ctx.db
      .query("approvals")
      .withIndex("by_status_expires", (q) => q.eq("status", "pending"))
      .collect();
    const approvals = new Map<string, ApprovalView>(
      pending.map((a) => [
        a._id,
        {
          approvalId: a._id,
          status: a.status,
          expiresAt: deploymentExpiry(a),
          actionType: a.actionType,
          agentName: a.agentName,
          site: a.site,
          priority: a.priority,
        },
      ]),
    );
    const observed = [...observeSites(await fleet(ctx.db), now), ...observeApprovals(approvals.values(), now, approvalLeadMs())];
    const said: string[] = [];
    for (const seen of observed) {
      const found = await machineByKey(ctx.db, subjectKey(seen));
      const before = found === null ? null : stateOf(found);
      const [after, notices] = step(specs[seen.signal], before, seen.observation);
      const machine = await saveMachine(ctx, seen, found, after);
      for (const raw of notices) {
        const notice = { ...raw, severity: severityOf(seen, approvals) };
        // One key per notice of a spell: the spell is named by when it went down (a recovery's
        // is the state before it, which it clears).
        const spell = notice.kind === "recovered" ? before!.downAt : after.downAt;
        const nth = notice.kind === "reminder" ? `:${after.reminders}` : "";
        const text = noticeText(seen.signal, seen.subject, notice);
        await enqueue(
          ctx,
          {
            kind: "send",
            key: `alert:${subjectKey(seen)}:${spell}:${notice.kind}${nth}`,
            text,
            buttons: noticeButtons(seen.signal, seen.subject, machine.id, notice),
            severity: notice.severity,
          },
          now,
        );
        said.push(text);
      }
    }
    // An approval no longer pending has nothing more to expire: its machine goes.
    const expiring = await ctx.db
      .query("alertMachines")
      .withIndex("by_key", (q) => q.gte("key", "expiring:").lt("key", "expiring;"))
      .collect();
    for (const machine of expiring) if (!approvals.has(machine.subject)) await ctx.db.delete(machine._id);
    return { observed: observed.length, notices: said };
  },
});
