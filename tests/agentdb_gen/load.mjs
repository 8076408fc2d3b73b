#!/usr/bin/env node
/**
 * load.mjs - write given episodes into a REAL AgentDB file with the real agentdb package
 * (agentdb@1.6.1, ReflexionMemory.storeEpisode), each with the timestamp it is given.
 *
 *   node load.mjs --db PATH < episodes.jsonl
 *
 * Each input line: {"episode": {sessionId, task, input, output, critique, reward, success,
 * latencyMs, tokensUsed, tags, metadata}, "ts": UNIX_SECONDS}. After each insert the row's ts and
 * created_at are set to "ts" (the package stamps them with its own clock), and the file is saved
 * once at the end. PATH must not exist yet. Prints one JSON line: {"ids": [...]} in input order.
 */
import fs from 'node:fs';
import path from 'node:path';
import readline from 'node:readline';
import { loadAgentDB, initSchema } from './lib.mjs';

const realLog = console.log.bind(console);
console.log = (...a) => console.error(...a);   // the package prints banners: keep stdout for the reply

async function main() {
  const argv = process.argv.slice(2);
  if (argv.length !== 2 || argv[0] !== '--db') throw new Error('usage: node load.mjs --db PATH < episodes.jsonl');
  const dbPath = path.resolve(argv[1]);
  if (fs.existsSync(dbPath)) throw new Error(`${dbPath} exists; load.mjs only creates new files`);
  fs.mkdirSync(path.dirname(dbPath), { recursive: true });
  const A = await loadAgentDB();
  const db = await A.createDatabase(dbPath);
  initSchema(db);
  const embedder = new A.EmbeddingService({ model: 'Xenova/all-MiniLM-L6-v2', dimension: 384, provider: 'mock' });
  await embedder.initialize();
  const memory = new A.ReflexionMemory(db, embedder);
  const stamp = db.prepare('UPDATE episodes SET ts = ?, created_at = ? WHERE id = ?');
  const ids = [];
  for await (const line of readline.createInterface({ input: process.stdin })) {
    if (!line.trim()) continue;
    const { episode, ts } = JSON.parse(line);
    if (!Number.isInteger(ts)) throw new Error(`line ${ids.length + 1}: "ts" must be whole unix seconds`);
    const id = Number(await memory.storeEpisode(episode));
    stamp.run(ts, ts, id);
    ids.push(id);
  }
  db.close();   // agentdb's close() saves the whole file
  realLog(JSON.stringify({ ids }));
}

main().catch((e) => { process.stderr.write(`[load] ERROR: ${e.stack || e}\n`); process.exit(1); });
