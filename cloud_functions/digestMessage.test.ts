import { expect, test } from "vitest";
import { type DigestDocument, digestMessage } from "./lib/digestMessage";

const figures = { successRate: null, meanReward: null };

test("the digest as one readable message: per site, per agent, the day's approvals", () => {
  const digest: DigestDocument = {
    day: "2026-11-21",
    episodes: 11,
    truncated: false,
    sites: [
      {
        site: "laptop",
        episodes: 10,
        successRate: 0.8,
        meanReward: 0.7512,
        health: "up",
        quarantined: 0,
        conflicts: 1,
        agents: [
          { agent: "claude", episodes: 9, successRate: 7 / 9, meanReward: 0.8 },
          { agent: "codex", episodes: 1, successRate: 1, meanReward: null },
        ],
      },
      { site: "vm", episodes: 0, ...figures, health: "down", quarantined: 2, conflicts: 0, redacted: 3, agents: [] },
      { site: "new", episodes: 1, successRate: 0, meanReward: null, health: null, quarantined: 0, conflicts: 2, agents: [] },
    ],
    approvals: { pending: 1, expired: 2 },
  };
  expect(digestMessage(digest, { pending: 1, approved: 3, rejected: 0, expired: 2 })).toBe(
    [
      "📊 memsync digest for 2026-11-21: 11 episodes",
      "",
      "laptop: 10 episodes, 80% success, mean reward 0.75; sync up, 0 quarantined, 1 conflict",
      "  claude: 9 episodes, 78% success",
      "  codex: 1 episode, 100% success",
      "",
      "vm: no episodes; sync down, 2 quarantined, 0 conflicts, 3 redacted",
      "",
      "new: 1 episode, 0% success; sync not yet judged, 0 quarantined, 2 conflicts",
      "",
      "approvals: 1 pending, 3 approved, 0 rejected, 2 expired",
    ].join("\n"),
  );
  expect(digestMessage({ ...digest, sites: [], episodes: 0, truncated: true }, { pending: 0, approved: 0, rejected: 0, expired: 0 })).toBe(
    "📊 memsync digest for 2026-11-21: 0 episodes\n(a busy day: only the first episodes were counted)\n\napprovals: 0 pending, 0 approved, 0 rejected, 0 expired",
  );
});
