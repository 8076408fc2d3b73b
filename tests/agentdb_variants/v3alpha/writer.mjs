// writer.mjs (agentdb@3.0.0-alpha.20): live agent; every save() = temp file + fsync + rename,
// guarded by PATH.agentdb.lock (sql.js path of dist/src/db-fallback.js).
// usage: node writer.mjs DBPATH [N=20] [INTERVAL_MS=500] [HOLD_MS=5000]
import fs from 'node:fs';
import path from 'node:path';
import { createRequire } from 'node:module';
// The package main ('agentdb') imports chalk (optional dep, omitted) -> use exported subpaths.
import { createDatabase, getDatabaseInfo } from 'agentdb/db-fallback';
import { ReflexionMemory } from 'agentdb/controllers/ReflexionMemory';
import { EmbeddingService } from 'agentdb/controllers/EmbeddingService';

console.log = (...a) => console.error(...a);
const [dbPath, N = '20', intervalMs = '500', holdMs = '5000'] = process.argv.slice(2);
if (!dbPath) { console.error('usage: writer.mjs DBPATH [N] [INTERVAL_MS] [HOLD_MS]'); process.exit(2); }
// Same steps as AgentDB.initialize() (dist/src/core/AgentDB.js, not exported) with forceWasm:
// createDatabase(path) then exec the inlined SCHEMA_SQL + FRONTIER_SCHEMA_SQL.
const dist = path.resolve(path.dirname(createRequire(import.meta.url).resolve('agentdb/db-fallback')));
const { SCHEMA_SQL, FRONTIER_SCHEMA_SQL } = await import(path.join(dist, 'schemas/inline.js'));

const db = await createDatabase(dbPath);   // better-sqlite3 if loadable (then WAL!), else sql.js
console.error('engine:', getDatabaseInfo().implementation);
db.exec(SCHEMA_SQL);
db.exec(FRONTIER_SCHEMA_SQL);
const embedder = new EmbeddingService({ model: 'all-MiniLM-L6-v2', dimension: 384, provider: 'mock' });
await embedder.initialize();
const reflexion = new ReflexionMemory(db, embedder);

const sleep = (ms) => new Promise((r) => setTimeout(r, ms));
for (let i = 1; i <= +N; i++) {
  const id = await reflexion.storeEpisode({
    sessionId: `sess-${i % 3}`, task: `task #${i}`, input: `input ${i}`, output: `output ${i}`,
    critique: i % 2 ? 'ok' : 'needs work', reward: (i % 10) / 10, success: i % 2 === 1,
    latencyMs: 100 + i, tokensUsed: 10 * i, tags: ['live', `t${i % 4}`],
    metadata: { agent_name: 'writer-3a20', seq: i },
  });
  db.save?.();                              // sql.js: lock, tmp write, fsync, rename, dir fsync
  const st = fs.statSync(dbPath);
  process.stdout.write(JSON.stringify({ stored: Number(id), i, ino: st.ino, size: st.size, t: Date.now() }) + '\n');
  if (i < +N) await sleep(+intervalMs);
}
await sleep(+holdMs);
db.close();                                  // sql.js: one more save
process.stdout.write(JSON.stringify({ done: true }) + '\n');
process.exit(0);                             // sql.js wrapper keeps a 10 s setInterval otherwise
