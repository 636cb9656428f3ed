import { execFileSync, spawn, type ChildProcess } from 'node:child_process';
import { existsSync, mkdirSync, readdirSync, rmdirSync, statSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';

export const REPO_ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..');

/** The newest modification time of the files below `dir`. */
function newest(dir: string): number {
  let t = 0;
  for (const e of readdirSync(dir, { withFileTypes: true })) {
    const p = path.join(dir, e.name);
    t = Math.max(t, e.isDirectory() ? newest(p) : statSync(p).mtimeMs);
  }
  return t;
}

const isBuilt = (main: string) => existsSync(main) && statSync(main).mtimeMs >= newest(path.join(REPO_ROOT, 'src'));

/**
 * Compiles the service into dist/ (as `npm run build` does, without the console) when its
 * sources are newer, for tests that run `node dist/src/main.js` as operators do. Test files run
 * at once: a lock directory lets one compile while the others wait for it.
 */
export function ensureServiceBuilt(): void {
  const main = path.join(REPO_ROOT, 'dist/src/main.js');
  const lock = path.join(REPO_ROOT, 'dist.build-lock');
  for (;;) {
    if (isBuilt(main)) return;
    try {
      mkdirSync(lock);
    } catch {
      // Another test file is compiling: wait for it (a synchronous pause, as tsc is). A lock
      // older than any compile is one a killed run left behind.
      const held = statSync(lock, { throwIfNoEntry: false });
      if (held && Date.now() - held.mtimeMs > 300_000) rmdirSync(lock);
      else Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0, 200);
      continue;
    }
    try {
      if (!isBuilt(main)) execFileSync(process.execPath, [path.join(REPO_ROOT, 'node_modules/typescript/bin/tsc'), '-p', 'tsconfig.json'], { cwd: REPO_ROOT, stdio: 'pipe' });
    } finally {
      rmdirSync(lock);
    }
  }
}

export interface Spawned {
  child: ChildProcess;
  stdout(): string;
  stderr(): string;
  /** Resolves with the first stdout JSON log line whose msg is `msg` (rejects on exit first). */
  logLine(msg: string, timeoutMs?: number): Promise<Record<string, unknown>>;
  /** Resolves with the exit code (or the signal name). */
  exited: Promise<number | string>;
}

/** The environment a child gets: only what node needs plus the given variables. */
function baseEnv(env: Record<string, string | undefined>): NodeJS.ProcessEnv {
  const out: NodeJS.ProcessEnv = { PATH: process.env.PATH, HOME: process.env.HOME, NODE_ENV: 'development' };
  for (const [k, v] of Object.entries(env)) if (v !== undefined) out[k] = v;
  return out;
}

/** Runs a TypeScript entry point of the repository (src/main.ts, src/cli.ts) as a real process. */
export function spawnEntry(entry: string, env: Record<string, string | undefined>, args: string[] = [], cwd = REPO_ROOT): Spawned {
  if (cwd === REPO_ROOT) return spawnCommand(process.execPath, ['--import', 'tsx', entry, ...args], env);
  // From another working directory: tsx and the entry by their absolute paths.
  const tsx = pathToFileURL(path.join(REPO_ROOT, 'node_modules/tsx/dist/loader.mjs')).href;
  return spawnCommand(process.execPath, ['--import', tsx, path.join(REPO_ROOT, entry), ...args], env, cwd);
}

/** Runs a command in the repository root (e.g. `npm start`), or in `cwd`, with only the given environment. */
export function spawnCommand(command: string, args: string[], env: Record<string, string | undefined>, cwd = REPO_ROOT): Spawned {
  const child = spawn(command, args, { cwd, env: baseEnv(env), stdio: ['ignore', 'pipe', 'pipe'] });
  let out = '';
  let err = '';
  const waiters: (() => void)[] = [];
  const wake = () => waiters.splice(0).forEach((w) => w());
  child.stdout?.setEncoding('utf8').on('data', (c: string) => {
    out += c;
    wake();
  });
  child.stderr?.setEncoding('utf8').on('data', (c: string) => {
    err += c;
    wake();
  });
  const exited = new Promise<number | string>((resolve) => {
    child.on('exit', (code, signal) => {
      resolve(code ?? (signal as string));
      wake();
    });
  });
  let done = false;
  void exited.then(() => (done = true));

  const logLine = (msg: string, timeoutMs = 30_000) =>
    new Promise<Record<string, unknown>>((resolve, reject) => {
      const deadline = setTimeout(() => reject(new Error(`no "${msg}" log line in ${timeoutMs} ms; stdout:\n${out}\nstderr:\n${err}`)), timeoutMs);
      const check = () => {
        for (const line of out.split('\n')) {
          if (!line.startsWith('{')) continue;
          try {
            const j = JSON.parse(line) as Record<string, unknown>;
            if (j.msg === msg) {
              clearTimeout(deadline);
              resolve(j);
              return;
            }
          } catch {
            // a partial line: wait for more output
          }
        }
        if (done) {
          clearTimeout(deadline);
          reject(new Error(`process exited before "${msg}"; stdout:\n${out}\nstderr:\n${err}`));
          return;
        }
        waiters.push(check);
      };
      check();
    });

  return { child, stdout: () => out, stderr: () => err, logLine, exited };
}

/**
 * Load shedding on event-loop delay, off in the services tests start: on a machine running many
 * test files at once, a process waiting for a core lags for the test run's doing, not overload,
 * and that must not turn answers into 503s. test/load-shedding.test.ts sets its own.
 */
export const NO_EVENT_LOOP_SHEDDING = { MAX_EVENT_LOOP_DELAY_MS: '0' } as const;

/** Starts src/main.ts and waits for "service listening"; returns its base URL. */
export async function spawnService(env: Record<string, string | undefined>, cwd = REPO_ROOT): Promise<Spawned & { url: string }> {
  const s = spawnEntry('src/main.ts', { PORT: '0', HOST: '127.0.0.1', LOG_LEVEL: 'info', ...NO_EVENT_LOOP_SHEDDING, ...env }, [], cwd);
  const line = await s.logLine('service listening');
  return { ...s, url: String(line.address) };
}
