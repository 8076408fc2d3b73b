#!/usr/bin/env node
/**
 * A local stand-in for a Convex deployment's HTTP API, serving the real cloud_functions from
 * convex-test's in-memory backend, so the Python daemon can be tested end to end offline. Paths
 * outside /api/ go to the deployment's HTTP actions (cloud_functions/http.ts).
 *
 *   PORT=0 CONVEX_LOCAL_ADMIN_KEY=some-key node tests/convex_local/server.mjs
 *
 * Prints {"url": "http://127.0.0.1:NNNN"} on stdout once ready (nothing else goes to stdout) and
 * exits on SIGTERM, SIGINT, or when stdin closes (so a test's crash cannot leave it running).
 */
import http from "node:http";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { createServer as createVite } from "vite";
import { ViteNodeRunner } from "vite-node/client";
import { ViteNodeServer } from "vite-node/server";

const here = path.dirname(fileURLToPath(import.meta.url));
const repo = path.resolve(here, "../..");
const adminKey = process.env.CONVEX_LOCAL_ADMIN_KEY ?? "";
const port = Number(process.env.PORT ?? 0);
const MAX_BODY = 16 * 1024 * 1024 + 64 * 1024; // Convex takes 16 MiB of arguments

// stdout carries the ready line only.
console.log = console.info = (...args) => process.stderr.write(`${args.join(" ")}\n`);

async function loadApi() {
  const vite = await createVite({
    root: repo,
    configFile: false,
    logLevel: "error",
    server: { hmr: false, ws: false, watch: null, middlewareMode: true },
    optimizeDeps: { noDiscovery: true, include: [] },
  });
  await vite.pluginContainer.buildStart({});
  const node = new ViteNodeServer(vite, { deps: { inline: ["convex-test"] } });
  const runner = new ViteNodeRunner({
    root: vite.config.root,
    base: vite.config.base,
    fetchModule: (id) => node.fetchModule(id),
    resolveId: (id, importer) => node.resolveId(id, importer),
  });
  return { api: await runner.executeFile(path.join(here, "api.ts")), vite };
}

function readRaw(req) {
  return new Promise((resolve, reject) => {
    const chunks = [];
    let size = 0;
    req.on("data", (chunk) => {
      size += chunk.length;
      if (size > MAX_BODY) reject(new Error("body too large"));
      else chunks.push(chunk);
    });
    req.on("end", () => resolve(Buffer.concat(chunks)));
    req.on("error", reject);
  });
}

async function readBody(req) {
  return (await readRaw(req)).toString("utf8");
}

function send(res, status, body) {
  const text = JSON.stringify(body);
  res.writeHead(status, { "Content-Type": "application/json", "Content-Length": Buffer.byteLength(text) });
  res.end(text);
}

/** Admin (may call internal functions) only with the exact key; a wrong admin key is refused. */
function adminOf(header) {
  if (header === undefined || !header.startsWith("Convex ")) return { admin: false };
  if (adminKey !== "" && header === `Convex ${adminKey}`) return { admin: true };
  return { refused: true };
}

/** Any path outside /api/: the deployment's HTTP actions (cloud_functions/http.ts). */
async function serveHttpAction(api, req, res) {
  const headers = [];
  for (let i = 0; i < req.rawHeaders.length; i += 2) headers.push([req.rawHeaders[i], req.rawHeaders[i + 1]]);
  const body = await readRaw(req);
  const reply = await api.fetchHttp(req.url, { method: req.method, headers, body: body.length ? body : undefined });
  const out = Buffer.from(reply.body);
  const kept = reply.headers.filter(([name]) => !["content-length", "transfer-encoding", "connection"].includes(name.toLowerCase()));
  res.writeHead(reply.status, [...kept.flat(), "Content-Length", String(out.length)]);
  res.end(out);
}

async function serve(api, req, res) {
  const { pathname } = new URL(req.url, "http://x");
  if (pathname === "/_local/dump") {
    // Not Convex's API: the whole store, for tests reading around the functions. Admin only.
    if (!adminOf(req.headers.authorization).admin) return send(res, 401, { code: "Unauthorized", message: "admin key needed" });
    return send(res, 200, await api.dump());
  }
  if (pathname === "/_local/seed") {
    // Not Convex's API: the seed design's documents (tests/data/seed), written around the functions. Admin only.
    if (!adminOf(req.headers.authorization).admin) return send(res, 401, { code: "Unauthorized", message: "admin key needed" });
    return send(res, 200, await api.seed());
  }
  if (!pathname.startsWith("/api/")) return serveHttpAction(api, req, res);
  const route = /^\/api\/(query|mutation|action)\/?$/.exec(pathname);
  if (route === null) return send(res, 404, { code: "NotFound", message: `no route ${req.method} ${req.url}` });
  if (req.method !== "POST") return send(res, 405, { code: "MethodNotAllowed", message: "use POST" });
  const auth = adminOf(req.headers.authorization);
  if (auth.refused) return send(res, 401, { code: "BadAdminKey", message: "The provided admin key was invalid for this instance" });
  let body;
  try {
    body = JSON.parse(await readBody(req));
  } catch (error) {
    return send(res, 400, { code: "BadJsonBody", message: String(error.message ?? error) });
  }
  const reply = await api.handle({ kind: route[1], admin: auth.admin, body });
  send(res, reply.httpStatus, reply.body);
}

const started = performance.now();
const { api, vite } = await loadApi();
const server = http.createServer((req, res) => {
  serve(api, req, res).catch((error) => send(res, 500, { code: "InternalServerError", message: String(error?.stack ?? error) }));
});
server.keepAliveTimeout = 60_000;

let closing = false;
function shutdown() {
  if (closing) return;
  closing = true;
  server.close();
  server.closeAllConnections();
  vite.close().finally(() => process.exit(0));
  setTimeout(() => process.exit(0), 2000).unref();
}
process.on("SIGTERM", shutdown);
process.on("SIGINT", shutdown);
if (process.env.CONVEX_LOCAL_IGNORE_STDIN !== "1") {
  process.stdin.on("end", shutdown);
  process.stdin.on("close", shutdown);
  process.stdin.resume();
}

server.listen(port, "127.0.0.1", () => {
  const { port: bound } = server.address();
  process.stdout.write(`${JSON.stringify({ url: `http://127.0.0.1:${bound}` })}\n`);
  process.stderr.write(`convex_local: ready in ${Math.round(performance.now() - started)} ms\n`);
});
