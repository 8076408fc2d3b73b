// Two sites' `memsync mcp` servers over stdio, each driven by the official MCP TypeScript SDK's
// Client as an agent would: a memory saved on A (save_memory) is searched for on B (search_memory)
// until found, timed from the call.
//   node remember.mjs PYTHON CONFIG_A CONFIG_B SAVES.json
// SAVES.json: [{content, memory_type?, tags?, find}] where ``find`` is a word only that memory
// holds (null: save only). Prints one JSON object: {client, saves: [{saved, ms, found}]}.
import { readFileSync } from "node:fs";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js";

const [python, configA, configB, savesPath] = process.argv.slice(2);
const saves = JSON.parse(readFileSync(savesPath, "utf-8"));
const CLIENT_NAME = "e2e-agent";

async function connect(config) {
  const transport = new StdioClientTransport({
    command: python,
    args: ["-m", "daemon", "mcp", "--config", config],
    env: process.env,
    stderr: "inherit",
  });
  const client = new Client({ name: CLIENT_NAME, version: "1.0.0" });
  await client.connect(transport);
  return client;
}

async function call(client, name, args) {
  const result = await client.callTool({ name, arguments: args });
  if (result.isError) return { isError: true, text: result.content.map((c) => c.text).join("\n") };
  return result.structuredContent;
}

const a = await connect(configA);
const b = await connect(configB);
const out = { client: CLIENT_NAME, saves: [] };
for (const save of saves) {
  const { find, ...args } = save;
  const started = performance.now();
  const saved = await call(a, "save_memory", args);
  let found = null;
  if (find && !saved.isError) {
    const deadline = started + 60_000;
    while (performance.now() < deadline) {
      const answer = await call(b, "search_memory", { query: find, limit: 3, all: true });
      found = answer.results?.find((r) => r.sourceSite === saved.id.split(":")[0] && r.sourceId === saved.id.split(":")[1]);
      if (found) break;
      await new Promise((r) => setTimeout(r, 25));
    }
  }
  out.saves.push({ saved, ms: performance.now() - started, found: found ?? null });
}
await a.close();
await b.close();
process.stdout.write(JSON.stringify(out) + "\n");
