#!/usr/bin/env node
/**
 * Measures the local server: time from spawn to the ready line, and 200-episode
 * bulkSyncEpisodes calls per second (new episodes, then the same ones again: "unchanged").
 *   node tests/convex_local/measure.mjs [calls=10]
 */
import { spawn } from "node:child_process";
import path from "node:path";
import readline from "node:readline";
import { fileURLToPath } from "node:url";

const calls = Number(process.argv[2] ?? 10);
const here = path.dirname(fileURLToPath(import.meta.url));
const adminKey = "measure-admin-key";

const t0 = performance.now();
const child = spawn(process.execPath, [path.join(here, "server.mjs")], {
  env: { ...process.env, PORT: "0", CONVEX_LOCAL_ADMIN_KEY: adminKey },
  stdio: ["pipe", "pipe", "inherit"],
});
const { url } = JSON.parse(await new Promise((resolve) => readline.createInterface({ input: child.stdout }).once("line", resolve)));
const startMs = performance.now() - t0;

async function call(kind, pathName, args, admin = false) {
  const response = await fetch(`${url}/api/${kind}`, {
    method: "POST",
    headers: { "Content-Type": "application/json", ...(admin ? { Authorization: `Convex ${adminKey}` } : {}) },
    body: JSON.stringify({ path: pathName, args, format: "json" }),
  });
  const body = await response.json();
  if (body.status !== "success") throw new Error(JSON.stringify(body));
  return body.value;
}

const pad = (label, size) => `${label} `.padEnd(size, "lorem ipsum dolor sit amet ");
const episode = (id) => ({
  sourceId: String(id),
  identityHash: `i${id}`,
  contentHash: `c${id}`,
  fields: {
    sessionId: "s1", task: pad(`task ${id}`, 200), input: pad("input", 600), output: pad("output", 700),
    critique: pad("critique", 250), reward: 0.5, success: true, latencyMs: 100, tokensUsed: 300,
    tags: ["coding"], metadata: { tool: "bash", cwd: "/home/user" }, ts: 1.76e12, createdAt: 1.76e12,
    agentName: "claude", agentPlatform: "linux", agentInterface: null, parentAgent: null, llmProvider: "anthropic", llmModel: null,
  },
});

const { secret } = await call("mutation", "sites:register", { name: "bench" }, true);
const batches = Array.from({ length: calls }, (_, b) => Array.from({ length: 200 }, (_, i) => episode(b * 200 + i + 1)));
const bytes = JSON.stringify(batches[0]).length;
for (const outcome of ["inserted", "unchanged"]) {
  const t1 = performance.now();
  for (const [b, episodes] of batches.entries()) {
    const { results } = await call("mutation", "episodes:bulkSyncEpisodes", { site: "bench", secret, cursor: (b + 1) * 200, episodes });
    if (results.some((r) => r.outcome !== outcome)) throw new Error(`expected ${outcome}`);
  }
  const seconds = (performance.now() - t1) / 1000;
  console.log(JSON.stringify({ outcome, calls, batchBytes: bytes, callsPerSecond: +(calls / seconds).toFixed(1), episodesPerSecond: Math.round((calls * 200) / seconds) }));
}
console.log(JSON.stringify({ startToReadyMs: Math.round(startMs) }));
child.stdin.end(); // the server exits when its stdin closes
await new Promise((resolve) => child.once("exit", resolve));
