/**
 * The daily digest (digest.ts's document) as one Telegram message. Pure. The text of
 * daemon/alerts/messages.py's digest_message, word for word: contracts/digest_messages.json holds
 * both to it, so a digest reads alike whichever backbone built it.
 */

type Figures = { episodes: number; successRate: number | null; meanReward: number | null; topTasks?: string[] };
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

const count = (n: number, one: string, many = `${one}s`) => `${n} ${n === 1 ? one : many}`;
const percent = (rate: number | null) => (rate === null ? "n/a" : `${(rate * 100).toFixed(0)}%`);
const reward = (value: number | null) => (value === null ? "n/a" : value.toFixed(2));
const HEALTH: Record<string, string> = { up: "syncing", down: "SILENT" };

export function digestMessage(digest: DigestDocument): string {
  const { sites, approvals } = digest;
  const lines = [
    `☀️ memsync digest for ${digest.day}`,
    `${count(digest.episodes, "episode")} from ${sites.filter((s) => s.episodes).length} of ${count(sites.length, "site")}` +
      ` · approvals: ${approvals.pending} pending, ${approvals.expired} expired`,
  ];
  for (const site of sites) {
    const health = (site.health !== null && HEALTH[site.health]) || "not judged yet";
    const problems: string[] = [];
    if (site.quarantined) problems.push(`${site.quarantined} quarantined`);
    if (site.conflicts) problems.push(count(site.conflicts, "conflict"));
    if (site.redacted) problems.push(`${site.redacted} redacted`);
    lines.push(
      "",
      `▪ ${site.site}: ${count(site.episodes, "episode")}, success ${percent(site.successRate)}, reward ${reward(site.meanReward)}; ${health}` +
        (problems.length ? `; ${problems.join(", ")}` : ""),
    );
    for (const agent of site.agents) lines.push(`   ${agent.agent}: ${count(agent.episodes, "episode")}, success ${percent(agent.successRate)}`);
    const top = site.topTasks ?? [];
    if (top.length) lines.push(`   top tasks: ${top.slice(0, 3).join(", ")}`);
  }
  if (digest.truncated) lines.push("", "(the day had more episodes than one digest reads: figures are partial)");
  return lines.join("\n");
}
