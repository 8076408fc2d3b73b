/** The daily digest (digest.ts's document) as one Telegram message. Pure. */

type Figures = { episodes: number; successRate: number | null; meanReward: number | null };
export type DigestDocument = {
  day: string;
  episodes: number;
  truncated: boolean;
  sites: (Figures & {
    site: string;
    agents: (Figures & { agent: string })[];
    health: "up" | "down" | null;
    quarantined: number;
    conflicts: number;
    redacted?: number;
  })[];
  approvals: { pending: number; expired: number };
};
/** The day's approvals: the document's pending and expired, and the ones people (or the policy) settled. */
export type DayApprovals = { pending: number; approved: number; rejected: number; expired: number };

const count = (n: number, one: string, many = `${one}s`) => `${n} ${n === 1 ? one : many}`;

function figures(f: Figures): string {
  if (f.episodes === 0) return "no episodes";
  const parts = [count(f.episodes, "episode")];
  if (f.successRate !== null) parts.push(`${Math.round(f.successRate * 100)}% success`);
  if (f.meanReward !== null) parts.push(`mean reward ${f.meanReward.toFixed(2)}`);
  return parts.join(", ");
}

export function digestMessage(digest: DigestDocument, approvals: DayApprovals): string {
  const lines = [`📊 memsync digest for ${digest.day}: ${count(digest.episodes, "episode")}`];
  if (digest.truncated) lines.push("(a busy day: only the first episodes were counted)");
  for (const site of digest.sites) {
    const sync = site.health === null ? "sync not yet judged" : `sync ${site.health}`;
    const redacted = site.redacted ? `, ${site.redacted} redacted` : "";
    lines.push(
      "",
      `${site.site}: ${figures(site)}; ${sync}, ${site.quarantined} quarantined, ${count(site.conflicts, "conflict")}${redacted}`,
    );
    for (const agent of site.agents) {
      const rate = agent.successRate === null ? "" : `, ${Math.round(agent.successRate * 100)}% success`;
      lines.push(`  ${agent.agent}: ${count(agent.episodes, "episode")}${rate}`);
    }
  }
  const { pending, approved, rejected, expired } = approvals;
  lines.push("", `approvals: ${pending} pending, ${approved} approved, ${rejected} rejected, ${expired} expired`);
  return lines.join("\n");
}
