// Loads the pinned, real agentdb package (1.6.1, sql.js engine) for the scripts beside this file.
import fs from 'node:fs';
import path from 'node:path';
import { createRequire } from 'node:module';
import { pathToFileURL } from 'node:url';

// ---- locate the installed agentdb package --------------------------------
const require = createRequire(import.meta.url);
const agentdbMain = require.resolve('agentdb');               // .../agentdb/dist/index.js
export const agentdbDist = path.dirname(agentdbMain);                 // .../agentdb/dist
export const agentdbPkg = JSON.parse(fs.readFileSync(path.join(agentdbDist, '..', 'package.json'), 'utf8'));
// sql.js as agentdb itself resolves it; its exports map hides package.json, so walk up.
const sqljsMain = createRequire(agentdbMain).resolve('sql.js');   // .../sql.js/dist/sql-wasm.js
export const sqljsPkg = JSON.parse(fs.readFileSync(path.join(path.dirname(sqljsMain), '..', 'package.json'), 'utf8'));

export async function loadAgentDB() {
  // Preferred: the package's public entry point. It eagerly imports
  // hnswlib-node (native addon); if that addon isn't built, fall back to the
  // same modules by file path (exports map hides dist/db-fallback.js).
  let nativeOk = true;
  try { createRequire(agentdbMain)('hnswlib-node'); } catch { nativeOk = false; }
  try {
    if (!nativeOk) throw new Error('hnswlib-node native addon not built');
    const m = await import('agentdb');
    return { createDatabase: m.createDatabase, ReflexionMemory: m.ReflexionMemory,
      SkillLibrary: m.SkillLibrary, EmbeddingService: m.EmbeddingService, entry: 'agentdb' };
  } catch (e) {
    process.stderr.write(`[gen] import('agentdb') failed (${e.message.split('\n')[0]}); using dist/ modules directly\n`);
    const u = (p) => pathToFileURL(path.join(agentdbDist, p)).href;
    const [{ createDatabase }, { ReflexionMemory }, { SkillLibrary }, { EmbeddingService }] = await Promise.all([
      import(u('db-fallback.js')), import(u('controllers/ReflexionMemory.js')),
      import(u('controllers/SkillLibrary.js')), import(u('controllers/EmbeddingService.js'))]);
    return { createDatabase, ReflexionMemory, SkillLibrary, EmbeddingService, entry: 'dist-files' };
  }
}

// Same steps as AgentDBCLI.initialize() / the MCP server in agentdb 1.6.1.
export function initSchema(db) {
  db.pragma('journal_mode = WAL');
  db.pragma('synchronous = NORMAL');
  db.pragma('cache_size = -64000');
  for (const f of ['schema.sql', 'frontier-schema.sql']) {
    db.exec(fs.readFileSync(path.join(agentdbDist, 'schemas', f), 'utf8'));
  }
}

