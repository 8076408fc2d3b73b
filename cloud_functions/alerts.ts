/**
 * Sweep alerts (the `alerts` cron, every minute): the fleet's signals observed from the registry
 * and the pending approvals (lib/alertSignals.ts's observeFleet, the pure decision both servers
 * hold to contracts/alert_sweep.json), each (signal, subject) machine stepped from its stored state,
 * and every notice queued for Telegram once. On Convex the deployment runs it itself, so a site
 * that stopped is reported even when every site has stopped.
 */
import { v } from "convex/values";
import { internalMutation } from "./_generated/server";
import { step } from "./lib/alertMachine";
import { observeFleet, subjectKey } from "./lib/alertSignals";
import { machineByKey, saveMachine, stateOf } from "./lib/alertStore";
import { noticeButtons, noticeText } from "./lib/alertText";
import { fleet } from "./lib/fleet";
import { enqueueRouted } from "./lib/outbox";
import { alertKey } from "./lib/outboxKeys";
import { alertsEnabled, deploymentFleetRules, signalSpecs } from "./lib/settings";

export const sweep = internalMutation({
  args: { now: v.optional(v.number()) },
  returns: v.union(
    v.null(),
    v.object({ observed: v.number(), notices: v.array(v.object({ kind: v.string(), subject: v.string() })) }),
  ),
  handler: async (ctx, args) => {
    const now = args.now ?? Date.now();
    // As the hub's alerts.enabled = false: no machine is stepped, nothing is said (null: alerts are off).
    if (!alertsEnabled()) return null;
    const specs = signalSpecs();
    const pending = await ctx.db
      .query("approvals")
      .withIndex("by_status_expires", (q) => q.eq("status", "pending"))
      .collect();
    const views = pending.map((a) => ({
      approvalId: a._id,
      status: a.status,
      createdAt: a.createdAt,
      expiresAt: a.expiresAt,
      deferCount: a.deferCount,
      actionType: a.actionType,
      agentName: a.agentName,
      site: a.site,
      priority: a.priority,
    }));
    const observed = observeFleet(await fleet(ctx.db), views, now, deploymentFleetRules());
    const said: { kind: string; subject: string }[] = [];
    for (const seen of observed) {
      const found = await machineByKey(ctx.db, subjectKey(seen));
      const before = found === null ? null : stateOf(found);
      const [after, notices] = step(specs[seen.signal], before, seen.observation);
      const machine = await saveMachine(ctx, seen, found, after);
      for (const raw of notices) {
        const notice = { ...raw, severity: seen.severity };
        // A recovery's spell is the one it ends: the state before it, which it clears.
        const spell = notice.kind === "recovered" ? before!.downAt : after.downAt;
        await enqueueRouted(
          ctx,
          {
            kind: "send",
            key: alertKey(subjectKey(seen), notice.kind, spell, after.reminders),
            text: noticeText(seen.signal, seen.subject, notice),
            buttons: noticeButtons(seen.signal, seen.subject, machine.id, notice),
            severity: notice.severity,
          },
          { kind: "alert", name: seen.signal }, // the default chat, and each collaborator's that hears this kind
          now,
        );
        said.push({ kind: notice.kind, subject: subjectKey(seen) });
      }
    }
    // An approval no longer pending has nothing more to expire: its machine goes.
    const stillPending = new Set<string>(pending.map((a) => a._id));
    const expiring = await ctx.db
      .query("alertMachines")
      .withIndex("by_key", (q) => q.gte("key", "expiring:").lt("key", "expiring;"))
      .collect();
    for (const machine of expiring) if (!stillPending.has(machine.subject)) await ctx.db.delete(machine._id);
    return { observed: observed.length, notices: said };
  },
});
