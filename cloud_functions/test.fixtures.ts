/** Episodes shaped like the ones sync/episode.py pushes. */
import type { Infer } from "convex/values";
import type { pushedFields } from "./lib/validators";

let counter = 0;

export type Fields = Infer<typeof pushedFields>;

export function episodeFields(overrides: Partial<Fields> = {}): Fields {
  counter += 1;
  return {
    sessionId: "session-1",
    task: `task ${counter}`,
    input: "input text",
    output: "output text",
    critique: null,
    reward: 0.5,
    success: true,
    latencyMs: 120,
    tokensUsed: 300,
    tags: ["a", "b"],
    metadata: { tool: "bash" },
    ts: 1_760_000_000_000,
    createdAt: 1_760_000_000_000,
    agentName: "claude",
    agentPlatform: "laptop",
    agentInterface: null,
    parentAgent: null,
    llmProvider: "anthropic",
    llmModel: null,
    ...overrides,
  };
}

/** One push item; the hashes are stand-ins (the backbone compares them, it never recomputes them). */
export function item(sourceId: string, options: { identity?: string; content?: string; fields?: Partial<Fields> } = {}) {
  return {
    sourceId,
    identityHash: options.identity ?? `identity-${sourceId}`,
    contentHash: options.content ?? `content-${sourceId}`,
    fields: episodeFields(options.fields),
  };
}

/** About 2 KB of JSON, the size of a realistic episode. */
export function realisticItem(sourceId: string) {
  const text = (label: string, size: number) => `${label} `.padEnd(size, "lorem ipsum dolor sit amet ");
  return item(sourceId, {
    fields: {
      task: text(`task ${sourceId}`, 200),
      input: text("input", 600),
      output: text("output", 700),
      critique: text("critique", 250),
      tags: ["coding", "refactor", "python"],
      metadata: { tool: "bash", cwd: "/home/user/project", exitCode: 0, _memsync: { issues: ["tags repaired"] } },
    },
  });
}
