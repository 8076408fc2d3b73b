// Drives `memsync mcp` over stdio with the official MCP TypeScript SDK's Client, as an agent would.
//   node client.mjs PYTHON CONFIG QUERY            initialize, list tools, then every tool once
//   node client.mjs PYTHON CONFIG --wait ID S      wait_for_approval(ID, S seconds) only
// Prints one JSON object: each call's structuredContent (or {isError, text}) under the tool's name.
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js";

const [python, config, ...rest] = process.argv.slice(2);
const transport = new StdioClientTransport({
  command: python,
  args: ["-m", "daemon", "mcp", "--config", config],
  env: process.env,
  stderr: "inherit",
});
const client = new Client({ name: "memsync-e2e", version: "1.0.0" });
await client.connect(transport);

async function call(name, args) {
  const result = await client.callTool({ name, arguments: args });
  if (result.isError) return { isError: true, text: result.content.map((c) => c.text).join("\n") };
  return result.structuredContent;
}

const out = { server: client.getServerVersion() };
if (rest[0] === "--wait") {
  out.wait_for_approval = await call("wait_for_approval", { approval_id: rest[1], timeout_s: Number(rest[2]) });
} else {
  const listed = await client.listTools();
  out.tools = listed.tools.map((t) => ({ name: t.name, inputSchema: t.inputSchema, outputSchema: t.outputSchema }));
  out.search_memory = await call("search_memory", { query: rest[0], limit: 3, all: true });
  const first = out.search_memory.results?.[0];
  out.get_episode = first ? await call("get_episode", { id: first.pointId, neighbours: 2 }) : null;
  out.recent_activity = await call("recent_activity", { limit: 4 });
  out.memory_health = await call("memory_health", {});
  out.bad_arguments = await call("search_memory", { query: "x", limit: 1000 });
  out.request_approval = await call("request_approval", { category: "send_message", summary: "email the team" });
  out.wait_for_approval = await call("wait_for_approval", {
    approval_id: out.request_approval.approvalId,
    timeout_s: 0.2,
  });
}
await client.close();
process.stdout.write(JSON.stringify(out) + "\n");
