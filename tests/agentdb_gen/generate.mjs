#!/usr/bin/env node
/**
 * generate.mjs - create (or append to) a REAL AgentDB database using the
 * real `agentdb` npm package API (agentdb@1.6.1: sql.js/WASM engine,
 * ReflexionMemory.storeEpisode, SkillLibrary.createSkill).
 *
 * Usage:
 *   node gen/generate.mjs --db PATH [--n 200] [--sessions 10] [--seed 42]
 *        [--append] [--save-every 0] [--interval-ms 0]
 *        [--fixed-ts 1735689600] [--ts-step 60]
 *        [--skills 0] [--edge-cases] [--embed mock|transformers] [--via api|cli]
 *
 *   --db PATH         database file (created if missing; parent dirs created)
 *   --n N             episodes to add (default 200)
 *   --sessions S      distinct session ids (default 10)
 *   --seed SEED       PRNG seed (default 42). Same seed + same flags => same rows.
 *   --append          allow PATH to exist already (otherwise refuse to touch it)
 *   --save-every K    call db.save() (whole-file rewrite) after every K episodes;
 *                     0 = only once at the end (default). 1 = CLI-like.
 *   --interval-ms MS  sleep between episodes (simulate a live agent)
 *   --fixed-ts BASE   after each insert rewrite ts/created_at to BASE + i*ts-step
 *                     (unix seconds) so output is fully deterministic. Without it,
 *                     the package's own DEFAULT strftime('%s','now') is kept.
 *   --ts-step SEC     spacing for --fixed-ts (default 60)
 *   --skills M        also create M skills via SkillLibrary.createSkill
 *   --edge-cases      mix in unicode/quotes/empty/huge-output/no-metadata rows
 *   --embed MODE      'mock' (default): the package's own deterministic hash
 *                     embedding (EmbeddingService.mockEmbedding), offline.
 *                     'transformers': real Xenova/all-MiniLM-L6-v2; needs network
 *                     AND a working `sharp` build. With an --ignore-scripts install
 *                     the package falls back to mock but then crashes (exit 1)
 *                     asynchronously on the broken sharp module after writing.
 *   --via cli         store each episode by spawning the real CLI
 *                     (`agentdb reflexion store ...`, AGENTDB_PATH=PATH).
 *                     Slow (~0.5 s/episode); CLI cannot set tags/metadata.
 *
 * Prints one JSON summary line on stdout; all package chatter goes to stderr.
 */
import fs from 'node:fs';
import path from 'node:path';
import crypto from 'node:crypto';
import { spawnSync } from 'node:child_process';

// ---- keep stdout clean: agentdb console.log()s banners -------------------
const realLog = console.log.bind(console);
console.log = (...a) => console.error(...a);

// ---- args ----------------------------------------------------------------
function parseArgs(argv) {
  const o = { n: 200, sessions: 10, seed: 42, append: false, saveEvery: 0,
    intervalMs: 0, fixedTs: null, tsStep: 60, skills: 0, edgeCases: false,
    embed: 'mock', via: 'api', db: null };
  for (let i = 0; i < argv.length; i++) {
    const a = argv[i], v = () => argv[++i];
    switch (a) {
      case '--db': o.db = v(); break;
      case '--n': o.n = parseInt(v(), 10); break;
      case '--sessions': o.sessions = parseInt(v(), 10); break;
      case '--seed': o.seed = parseInt(v(), 10); break;
      case '--append': o.append = true; break;
      case '--save-every': o.saveEvery = parseInt(v(), 10); break;
      case '--interval-ms': o.intervalMs = parseInt(v(), 10); break;
      case '--fixed-ts': o.fixedTs = parseInt(v(), 10); break;
      case '--ts-step': o.tsStep = parseInt(v(), 10); break;
      case '--skills': o.skills = parseInt(v(), 10); break;
      case '--edge-cases': o.edgeCases = true; break;
      case '--embed': o.embed = v(); break;
      case '--via': o.via = v(); break;
      case '-h': case '--help':
        process.stderr.write(fs.readFileSync(new URL(import.meta.url)).toString().split('*/')[0]);
        process.exit(0);
      default: throw new Error(`unknown arg ${a}`);
    }
  }
  if (!o.db) throw new Error('--db PATH is required');
  if (!(o.n >= 0) || !(o.sessions >= 1)) throw new Error('bad --n/--sessions');
  return o;
}

// ---- deterministic PRNG (mulberry32) -------------------------------------
function mulberry32(seed) {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6D2B79F5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

import { loadAgentDB, initSchema, agentdbPkg, sqljsPkg, agentdbDist } from './lib.mjs';

// ---- content vocab -------------------------------------------------------
const TASKS = ['implement_auth', 'fix_login_bug', 'refactor_db_layer', 'write_unit_tests',
  'optimize_query', 'add_api_endpoint', 'update_docs', 'review_pr', 'deploy_staging',
  'debug_memory_leak', 'migrate_schema', 'configure_ci', 'parse_csv_import', 'add_caching',
  'triage_issue'];
const AGENTS = [
  { agent_name: 'coder', agent_platform: 'claude-flow', agent_interface: 'cli' },
  { agent_name: 'reviewer', agent_platform: 'claude-flow', agent_interface: 'mcp' },
  { agent_name: 'tester', agent_platform: 'agentic-flow', agent_interface: 'sdk' },
  { agent_name: 'researcher', agent_platform: 'agentic-flow', agent_interface: 'mcp' },
  { agent_name: 'planner', agent_platform: 'claude-code', agent_interface: 'hook' }];
const LLMS = [['anthropic', 'claude-sonnet-4-5'], ['anthropic', 'claude-opus-4-1'],
  ['openai', 'gpt-4.1'], ['openrouter', 'deepseek/deepseek-chat'], ['ollama', 'llama3.1:8b']];
const TAGS = ['backend', 'frontend', 'security', 'perf', 'tests', 'docs', 'infra', 'bugfix', 'urgent'];
const CRIT_OK = ['Worked first try; keep the same approach.', 'Succeeded after adding retries.',
  'Good result, but slow: cache intermediate results next time.'];
const CRIT_BAD = ['Failed: missed an edge case with empty input.', 'Timed out waiting for the DB lock.',
  'Wrong assumption about the API contract; read the spec first.'];
const EDGE_TEXT = ['emoji 🚀🔥 and CJK 漢字 テスト', "quotes ' \" ` and backslash \\ and %s %d",
  'line1\nline2\r\nline3\ttab', '{"looks":"like json"}', 'NULL', '', 'x'.repeat(65536)];

function makeEpisode(i, rnd, o) {
  const pick = (arr) => arr[Math.floor(rnd() * arr.length)];
  const sessionIdx = Math.floor(rnd() * o.sessions);
  const task = pick(TASKS);
  const reward = Math.round(rnd() * 1000) / 1000;            // 0.000 .. 1.000
  const success = rnd() < 0.1 ? reward < 0.5 : reward >= 0.5; // ~10% label noise
  const agent = pick(AGENTS);
  const [prov, model] = pick(LLMS);
  const ntags = Math.floor(rnd() * 4);
  const tags = [...new Set(Array.from({ length: ntags }, () => pick(TAGS)))];
  const ep = {
    sessionId: `session-${String(sessionIdx).padStart(3, '0')}`,
    task,
    input: `Task ${task} #${i}: ${pick(['user request', 'issue body', 'failing test log'])}`,
    output: `Result for ${task}: ${success ? 'done' : 'incomplete'} (step ${Math.floor(rnd() * 20)})`,
    critique: success ? pick(CRIT_OK) : pick(CRIT_BAD),
    reward,
    success,
    latencyMs: 50 + Math.floor(rnd() * 30000),
    tokensUsed: 100 + Math.floor(rnd() * 20000),
    tags,
    metadata: {
      ...agent,
      parent_agent: rnd() < 0.3 ? 'queen-coordinator' : null,
      llm_provider: prov,
      llm_model: model,
      gen_index: i,
      files_changed: Array.from({ length: Math.floor(rnd() * 3) }, (_, k) => `src/mod${k}.ts`),
      nested: { attempt: 1 + Math.floor(rnd() * 3), env: pick(['dev', 'ci', 'prod']) },
    },
  };
  if (o.edgeCases && rnd() < 0.15) {
    const kind = Math.floor(rnd() * 5);
    if (kind === 0) { ep.task = pick(EDGE_TEXT.slice(0, 4)); ep.critique = pick(EDGE_TEXT); }
    if (kind === 1) { ep.output = EDGE_TEXT[EDGE_TEXT.length - 1]; }          // 64 KiB output
    if (kind === 2) { delete ep.metadata; delete ep.tags; }                    // NULL json cols
    if (kind === 3) { ep.input = ''; ep.output = ''; ep.latencyMs = 0; ep.tokensUsed = 0; } // -> NULLs
    if (kind === 4) { ep.metadata = { ...ep.metadata, note: pick(EDGE_TEXT.slice(0, 5)) }; ep.tags = []; }
  }
  return ep;
}

const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

async function main() {
  const o = parseArgs(process.argv.slice(2));
  const dbPath = path.resolve(o.db);
  const existed = fs.existsSync(dbPath);
  if (existed && !o.append) throw new Error(`${dbPath} exists; pass --append to add to it`);
  fs.mkdirSync(path.dirname(dbPath), { recursive: true });
  const rnd = mulberry32(o.seed);
  const t0 = process.hrtime.bigint();
  let firstId = null, lastId = null, saves = 0, tLoop0 = null, tLoop1 = null;

  if (o.via === 'cli') {
    const cli = path.join(agentdbDist, 'cli', 'agentdb-cli.js');
    tLoop0 = process.hrtime.bigint();
    const env = { ...process.env, AGENTDB_PATH: dbPath };
    for (let i = 0; i < o.n; i++) {
      const e = makeEpisode(i, rnd, o);
      const r = spawnSync(process.execPath, [cli, 'reflexion', 'store', e.sessionId, e.task,
        String(e.reward), String(e.success), e.critique || '', e.input || '', e.output || '',
        String(e.latencyMs || ''), String(e.tokensUsed || '')], { env, encoding: 'utf8' });
      const m = /Stored episode #(\d+)/.exec(r.stdout || '');
      if (r.status !== 0 || !m) throw new Error(`cli failed: ${r.stderr}\n${r.stdout}`);
      lastId = Number(m[1]); if (firstId === null) firstId = lastId; saves++;
      if (o.intervalMs) await sleep(o.intervalMs);
    }
    tLoop1 = process.hrtime.bigint();
  } else {
    const A = await loadAgentDB();
    const db = await A.createDatabase(dbPath);
    initSchema(db);   // CREATE ... IF NOT EXISTS: harmless on an existing DB
    const embedder = new A.EmbeddingService({ model: 'Xenova/all-MiniLM-L6-v2', dimension: 384,
      provider: o.embed === 'transformers' ? 'transformers' : 'mock' });
    await embedder.initialize();
    const reflexion = new A.ReflexionMemory(db, embedder);
    const fixTs = o.fixedTs !== null ? db.prepare('UPDATE episodes SET ts = ?, created_at = ? WHERE id = ?') : null;
    const base = o.fixedTs;
    tLoop0 = process.hrtime.bigint();
    for (let i = 0; i < o.n; i++) {
      const id = Number(await reflexion.storeEpisode(makeEpisode(i, rnd, o)));
      if (fixTs) fixTs.run(base + i * o.tsStep, base + i * o.tsStep, id);
      if (firstId === null) firstId = id; lastId = id;
      if (o.saveEvery > 0 && (i + 1) % o.saveEvery === 0) { db.save(); saves++; }
      if (o.intervalMs) await sleep(o.intervalMs);
    }
    tLoop1 = process.hrtime.bigint();
    if (o.skills > 0) {
      const skills = new A.SkillLibrary(db, embedder);
      for (let k = 0; k < o.skills; k++) {
        const name = `skill_${o.seed}_${k}_${TASKS[k % TASKS.length]}`;
        const exists = db.prepare('SELECT id FROM skills WHERE name = ?').get(name);
        if (exists) continue;
        await skills.createSkill({ name, description: `Reusable approach for ${TASKS[k % TASKS.length]}`,
          signature: { inputs: { task: 'string' }, outputs: { ok: 'boolean' } },
          code: `// step list for ${name}`, successRate: Math.round(rnd() * 100) / 100,
          uses: Math.floor(rnd() * 50), avgReward: Math.round(rnd() * 100) / 100,
          avgLatencyMs: Math.floor(rnd() * 5000), metadata: { seed: o.seed } });
      }
      if (o.fixedTs !== null) {
        // skills timestamps default to now; AFTER UPDATE trigger update_skill_timestamp
        // would re-stamp updated_at, so lift it for this one UPDATE and restore it verbatim.
        const trg = db.prepare("SELECT sql FROM sqlite_master WHERE type='trigger' AND name='update_skill_timestamp'").get();
        if (trg) db.exec('DROP TRIGGER update_skill_timestamp');
        db.prepare('UPDATE skills SET created_at = ?, updated_at = ? WHERE created_at > ?').run(o.fixedTs, o.fixedTs, o.fixedTs);
        if (trg) db.exec(trg.sql);
      }
    }
    db.close(); saves++;   // agentdb's close() == save() (full-file rewrite) + free
  }
  const secs = Number(process.hrtime.bigint() - t0) / 1e9;
  const buf = fs.readFileSync(dbPath);
  realLog(JSON.stringify({
    db: dbPath, created: !existed, via: o.via, n: o.n, sessions: o.sessions, seed: o.seed,
    first_id: firstId, last_id: lastId, saves, seconds: +secs.toFixed(3),
    loop_seconds: tLoop0 !== null ? +(Number(tLoop1 - tLoop0) / 1e9).toFixed(3) : null,
    loop_episodes_per_sec: tLoop0 !== null && o.n ? +(o.n / (Number(tLoop1 - tLoop0) / 1e9)).toFixed(1) : null,
    episodes_per_sec: o.n ? +(o.n / secs).toFixed(1) : null, bytes: buf.length,
    sha256: crypto.createHash('sha256').update(buf).digest('hex'),
    agentdb: agentdbPkg.version, sqljs: sqljsPkg.version,
  }));
}

main().catch((e) => { process.stderr.write(`[gen] ERROR: ${e.stack || e}\n`); process.exit(1); });
