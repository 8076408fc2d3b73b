// writer.mjs (agentdb@1.3.9): live agent writing episodes through better-sqlite3 in WAL mode.
// usage: node writer.mjs DBPATH [N=20] [INTERVAL_MS=500] [HOLD_MS=5000] [JITTER_MS=0] [SEED=1] [MARKER]
//   JITTER_MS: each gap is INTERVAL_MS +- up to JITTER_MS (uniform, from a PRNG seeded by SEED, so
//   two runs with one seed write on the same schedule); MARKER: appended to each output as
//   MARKER + i (6 digits) + 'z', a string no other episode contains (the benchmarks look for it).
//   Each line also carries tMs: wall-clock ms with a fraction, right after the store returned.
import fs from 'node:fs';
import path from 'node:path';
import { createRequire } from 'node:module';
import Database from 'better-sqlite3';
import { ReflexionMemory } from 'agentdb/controllers/ReflexionMemory';
import { EmbeddingService } from 'agentdb/controllers/EmbeddingService';

console.log = (...a) => console.error(...a);            // keep stdout for our own lines
const [dbPath, N = '20', intervalMs = '500', holdMs = '5000', jitterMs = '0', seed = '1', marker = ''] = process.argv.slice(2);
if (!dbPath) { console.error('usage: writer.mjs DBPATH [N] [INTERVAL_MS] [HOLD_MS] [JITTER_MS] [SEED] [MARKER]'); process.exit(2); }
// package.json is not in the exports map (and '.' -> dist/index.js does not exist in 1.3.9): walk up
const pkgDir = path.resolve(path.dirname(createRequire(import.meta.url).resolve('agentdb/controllers/ReflexionMemory')), '../..');

// Same open sequence as agentdb 1.3.9's own CLI (dist/cli/agentdb-cli.js AgentDBCLI.initialize)
const db = new Database(dbPath);
db.pragma('journal_mode = WAL');
db.pragma('synchronous = NORMAL');
db.pragma('cache_size = -64000');
// The package's schema files (the CLI's own schema loading is broken: "__dirname is not defined")
for (const f of ['schema.sql', 'frontier-schema.sql'])
  db.exec(fs.readFileSync(path.join(pkgDir, 'src/schemas', f), 'utf8'));

// 'mock' = the package's deterministic hash embedding (no @xenova/transformers / sharp)
const embedder = new EmbeddingService({ model: 'all-MiniLM-L6-v2', dimension: 384, provider: 'mock' });
await embedder.initialize();
const reflexion = new ReflexionMemory(db, embedder);

const sleep = (ms) => new Promise((r) => setTimeout(r, ms));
// mulberry32: a tiny seeded PRNG, so that the gaps are the same for every run with the same seed
let state = (+seed >>> 0) || 1;
const random = () => {
  state = (state + 0x6d2b79f5) >>> 0;
  let t = Math.imul(state ^ (state >>> 15), 1 | state);
  t = (t + Math.imul(t ^ (t >>> 7), 61 | t)) ^ t;
  return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
};
const gap = () => Math.max(0, +intervalMs + (+jitterMs ? (2 * random() - 1) * +jitterMs : 0));
const tag = (i) => (marker ? ` ${marker}${String(i).padStart(6, '0')}z` : '');
for (let i = 1; i <= +N; i++) {
  const id = await reflexion.storeEpisode({
    sessionId: `sess-${i % 3}`, task: `task #${i}`, input: `input ${i}`, output: `output ${i}${tag(i)}`,
    critique: i % 2 ? 'ok' : 'needs work', reward: (i % 10) / 10, success: i % 2 === 1,
    latencyMs: 100 + i, tokensUsed: 10 * i, tags: ['live', `t${i % 4}`],
    metadata: { agent_name: 'writer-139', seq: i },
  });
  const tMs = performance.timeOrigin + performance.now();
  process.stdout.write(JSON.stringify({ stored: Number(id), i, t: Date.now(), tMs }) + '\n');
  if (i < +N) await sleep(gap());
}
await sleep(+holdMs);                                     // stay alive, connection open (WAL not checkpointed away)
db.close();
process.stdout.write(JSON.stringify({ done: true }) + '\n');
