#!/usr/bin/env node
/**
 * agent.mjs - a scriptable agent process that writes episodes into an AgentDB file with the
 * real agentdb package (1.6.1, sql.js: every save rewrites the whole file in place).
 *
 *   node agent.mjs --db PATH            read JSON commands, one a line, on stdin
 *   node agent.mjs --db PATH --live N --interval-ms MS [--seed S] [--session S]
 *                  [--jitter-ms J] [--marker M]
 *                                       store N generated episodes, saving after each one;
 *                                       each gap MS +- up to J (uniform, seeded by S), and with
 *                                       M each output ends in M + i (6 digits) + 'z', i from 0
 *
 * Commands (stdin), each answered by one JSON line on stdout:
 *   {"op":"store","episode":{sessionId,task,input,output,critique,reward,success,latencyMs,
 *                            tokensUsed,tags,metadata},"save":true}  -> {"id":N,"savedAtMs":T}
 *   {"op":"update","id":N,"set":{"reward":0.9,"critique":"..."},"save":true}
 *   {"op":"exec","sql":"...","save":true}     any statement, through the package's own handle
 *   {"op":"save"} | {"op":"reload"} (drop the in-memory copy, load the file again) | {"op":"close"}
 * Two agents on one file, each holding its own in-memory copy, reproduce the id reuse of racing
 * writers: the later save silently replaces the earlier one's rows.
 * In --live mode each save prints {"id":N,"savedAtMs":T} (T: wall-clock ms, with a fraction).
 */
import fs from 'node:fs';
import path from 'node:path';
import readline from 'node:readline';
import { loadAgentDB, initSchema } from './lib.mjs';

const realLog = console.log.bind(console);
console.log = (...a) => console.error(...a);   // the package prints banners: keep stdout for replies

function parseArgs(argv) {
  const o = { db: null, live: 0, intervalMs: 0, jitterMs: 0, seed: 1, session: 'live', marker: '', pad: true };
  for (let i = 0; i < argv.length; i++) {
    const a = argv[i], v = () => argv[++i];
    if (a === '--db') o.db = v();
    else if (a === '--live') o.live = parseInt(v(), 10);
    else if (a === '--interval-ms') o.intervalMs = parseInt(v(), 10);
    else if (a === '--seed') o.seed = parseInt(v(), 10);
    else if (a === '--session') o.session = v();
    else if (a === '--jitter-ms') o.jitterMs = parseInt(v(), 10);
    else if (a === '--marker') o.marker = v();
    else if (a === '--no-pad') o.pad = false; // the demo: results read better without the size padding
    else throw new Error(`unknown arg ${a}`);
  }
  if (!o.db) throw new Error('--db PATH is required');
  return o;
}

const nowMs = () => performance.timeOrigin + performance.now();
// What live agents work on: varied enough that a search over a demo's episodes finds something.
// Keep in step with LIVE_TASKS in daemon/demo/agents.py (the fallback writer without Node).
const LIVE_TASKS = [
  ['fix ERR_CONN_4471 in the http client retry loop', 'capped the backoff at 30s and honoured Retry-After'],
  ['deploy the billing api to staging with the helm chart', 'rolled out 3 replicas; smoke tests green'],
  ['investigate OPS-2291: nightly backup job timing out', 'raised the timeout to 2h and split the dump per schema'],
  ['rotate the TLS certificate on the edge proxy', 'new cert from the internal CA, reloaded nginx without downtime'],
  ['database migration failed with E11000 duplicate key on users.email', 'deduplicated 14 rows, then re-ran the migration'],
  ['write unit tests for parse_retry_after', 'covered seconds, HTTP dates and garbage input; 12 tests'],
  ['speed up the search endpoint p99', 'added an index on (tenant_id, created_at); p99 from 900ms to 80ms'],
  ['summarise yesterday\'s incident for the team', 'root cause: a config push disabled the health checks'],
];
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));
// mulberry32: a tiny seeded PRNG, so that every run with one seed writes on the same schedule
function seeded(seed) {
  let state = (seed >>> 0) || 1;
  return () => {
    state = (state + 0x6d2b79f5) >>> 0;
    let t = Math.imul(state ^ (state >>> 15), 1 | state);
    t = (t + Math.imul(t ^ (t >>> 7), 61 | t)) ^ t;
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

async function main() {
  const o = parseArgs(process.argv.slice(2));
  const dbPath = path.resolve(o.db);
  fs.mkdirSync(path.dirname(dbPath), { recursive: true });
  const A = await loadAgentDB();
  const embedder = new A.EmbeddingService({ model: 'Xenova/all-MiniLM-L6-v2', dimension: 384, provider: 'mock' });
  await embedder.initialize();
  let db = null, memory = null;
  const open = async () => {
    db = await A.createDatabase(dbPath);
    initSchema(db);
    memory = new A.ReflexionMemory(db, embedder);
  };
  await open();
  const save = () => { db.save(); return nowMs(); };

  if (o.live > 0) {
    const random = seeded(o.seed);
    const gap = () => Math.max(0, o.intervalMs + (o.jitterMs ? (2 * random() - 1) * o.jitterMs : 0));
    const tag = (i) => (o.marker ? ` ${o.marker}${String(i).padStart(6, '0')}z` : '');
    for (let i = 0; i < o.live; i++) {
      const id = Number(await memory.storeEpisode({
        sessionId: o.session, task: `${LIVE_TASKS[(i + o.seed) % LIVE_TASKS.length][0]} (run ${o.seed}-${i})`,
        input: `live input ${i}`, output: `${LIVE_TASKS[(i + o.seed) % LIVE_TASKS.length][1]} ${o.pad ? 'x'.repeat(i % 50) : ''}${tag(i)}`,
        critique: i % 3 ? 'fine' : 'needs retries', reward: (i % 10) / 10, success: i % 4 !== 0,
        latencyMs: 100 + i, tokensUsed: 1000 + i, tags: ['live', `seed-${o.seed}`],
        metadata: { agent_name: 'live-agent', llm_provider: 'anthropic', seq: i },
      }));
      realLog(JSON.stringify({ id, savedAtMs: save() }));
      if (o.intervalMs || o.jitterMs) await sleep(gap());
    }
    db.close();
    return;
  }

  const rl = readline.createInterface({ input: process.stdin });
  for await (const line of rl) {
    if (!line.trim()) continue;
    const cmd = JSON.parse(line);
    let reply = { ok: true };
    try {
      if (cmd.op === 'store') {
        reply.id = Number(await memory.storeEpisode(cmd.episode));
      } else if (cmd.op === 'update') {
        const cols = Object.keys(cmd.set);
        const vals = cols.map((c) => (typeof cmd.set[c] === 'object' && cmd.set[c] !== null ? JSON.stringify(cmd.set[c]) : cmd.set[c]));
        db.prepare(`UPDATE episodes SET ${cols.map((c) => `${c} = ?`).join(', ')} WHERE id = ?`).run(...vals, cmd.id);
      } else if (cmd.op === 'exec') {
        db.exec(cmd.sql);
      } else if (cmd.op === 'reload') {
        await open();
      } else if (cmd.op === 'close') {
        db.close();
        realLog(JSON.stringify(reply));
        process.exit(0);   // stdin is still open and would keep the event loop alive
      } else if (cmd.op !== 'save') {
        throw new Error(`unknown op ${cmd.op}`);
      }
      if (cmd.op === 'save' || cmd.save) reply.savedAtMs = save();
    } catch (e) {
      reply = { ok: false, error: String(e && e.message || e) };
    }
    realLog(JSON.stringify(reply));
  }
}

main().catch((e) => { process.stderr.write(`[agent] ERROR: ${e.stack || e}\n`); process.exit(1); });
