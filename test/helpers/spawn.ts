import { spawn, type ChildProcess } from 'node:child_process';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

export const REPO_ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..');

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
export function spawnEntry(entry: string, env: Record<string, string | undefined>, args: string[] = []): Spawned {
  const child = spawn(process.execPath, ['--import', 'tsx', entry, ...args], { cwd: REPO_ROOT, env: baseEnv(env), stdio: ['ignore', 'pipe', 'pipe'] });
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

/** Starts src/main.ts and waits for "service listening"; returns its base URL. */
export async function spawnService(env: Record<string, string | undefined>): Promise<Spawned & { url: string }> {
  const s = spawnEntry('src/main.ts', { PORT: '0', HOST: '127.0.0.1', LOG_LEVEL: 'info', ...env });
  const line = await s.logLine('service listening');
  return { ...s, url: String(line.address) };
}
