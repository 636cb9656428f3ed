#!/usr/bin/env node
// `npm test`: the whole suite on SQLite, then on PostgreSQL when one is reachable.
// Without PostgreSQL the second run is skipped and that is said plainly (in CI it is an error).
// Ends with a line "FAILED <run>: <file> > <test>: <first line of the error>" per failed test (so a
// CI log's tail names them) and one line "N passed, N failed, N skipped" over both runs.
import { spawnSync } from 'node:child_process';
import { mkdirSync, readFileSync } from 'node:fs';
import pg from 'pg';

const extra = process.argv.slice(2);
const pgUrl = process.env.TEST_PG_URL ?? 'postgres://postgres@127.0.0.1:5432/test';
mkdirSync('test-output', { recursive: true });
const failures = [];

// Records the failed tests of one vitest JSON report, and its files that failed without a failed
// test (they did not load, or a hook failed); returns how many of those files there were.
function failedIn(j, label) {
  const cwd = process.cwd() + '/';
  let brokenFiles = 0;
  const firstLine = (messages) => String(messages?.[0] ?? '').split('\n').find((l) => l.trim() !== '')?.trim().slice(0, 300) ?? '';
  for (const f of j.testResults ?? []) {
    const file = String(f.name ?? '').replace(cwd, '');
    const failed = (f.assertionResults ?? []).filter((a) => a.status === 'failed');
    for (const a of failed) failures.push(`FAILED ${label}: ${file} > ${a.fullName}: ${firstLine(a.failureMessages)}`);
    if (f.status === 'failed' && failed.length === 0) {
      brokenFiles++;
      failures.push(`FAILED ${label}: ${file}: ${firstLine([f.message])}`);
    }
  }
  return brokenFiles;
}

function run(db, label = db, args = extra, env = {}) {
  const out = `test-output/vitest-${label.replace(/\W+/g, '-')}.json`;
  console.log(`\n=== ${label === db ? `test suite on ${db}` : label} ===\n`);
  const r = spawnSync('npx', ['vitest', 'run', '--reporter=default', '--reporter=json', `--outputFile.json=${out}`, ...args], {
    stdio: 'inherit',
    env: { ...process.env, TEST_DB: db, ...env },
  });
  let counts = { passed: 0, failed: 0, skipped: 0 };
  try {
    const j = JSON.parse(readFileSync(out, 'utf8'));
    // A file that failed without a failed test counts once; a failed test is not counted again
    // for its file.
    const brokenFiles = failedIn(j, label);
    counts = { passed: j.numPassedTests, failed: j.numFailedTests + brokenFiles, skipped: j.numPendingTests + j.numTodoTests };
  } catch {
    counts.failed += 1;
    failures.push(`FAILED ${label}: no test report (${out})`);
  }
  if (r.status !== 0 && counts.failed === 0) {
    counts.failed = 1;
    failures.push(`FAILED ${label}: vitest exited with ${r.status ?? r.signal} and no failed test`);
  }
  return counts;
}

async function postgresReachable() {
  const c = new pg.Client({ connectionString: pgUrl, connectionTimeoutMillis: 3000 });
  try {
    await c.connect();
    await c.query('select 1');
    return null;
  } catch (e) {
    return e.message;
  } finally {
    await c.end().catch(() => {});
  }
}

const total = { passed: 0, failed: 0, skipped: 0 };
const add = (c) => {
  for (const k of Object.keys(total)) total[k] += c[k];
};
add(run('sqlite'));
const pgProblem = await postgresReachable();
if (pgProblem === null) add(run('postgres'));
else if (process.env.CI) {
  console.error(`\nPostgreSQL is required in CI and is not reachable at ${pgUrl}: ${pgProblem}`);
  total.failed += 1;
} else {
  console.warn(`\n*** PostgreSQL suite SKIPPED: no PostgreSQL at ${pgUrl} (${pgProblem}). Set TEST_PG_URL or start PostgreSQL to run it. ***`);
}
// TEST_LONG=1 (CI): the long forms of the fuzz (100,000 requests) and crash (8 kills) tests.
if (process.env.TEST_LONG === '1' && extra.length === 0) {
  add(run('sqlite', 'fuzz, 100000 requests, sqlite', ['test/fuzz'], { FUZZ_RUNS: process.env.FUZZ_RUNS ?? '100000' }));
  add(run('sqlite', 'crash, 8 kills, sqlite', ['test/crash'], { CRASH_ROUNDS: process.env.CRASH_ROUNDS ?? '8' }));
  if (pgProblem === null) add(run('postgres', 'crash, 8 kills, postgres', ['test/crash'], { CRASH_ROUNDS: process.env.CRASH_ROUNDS ?? '8' }));
  // Restarts the PostgreSQL server: runs last and alone.
  if (pgProblem === null) add(run('postgres', 'faults: PostgreSQL restarted mid-run', ['test/faults'], { TEST_FAULTS: '1' }));
}
if (failures.length > 0) console.log(`\n${failures.join('\n')}`);
console.log(`\n${total.passed} passed, ${total.failed} failed, ${total.skipped} skipped`);
process.exit(total.failed > 0 ? 1 : 0);
