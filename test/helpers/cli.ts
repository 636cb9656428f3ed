import { spawn, type ChildProcessWithoutNullStreams } from 'node:child_process';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..');

export interface CliResult {
  code: number | null;
  stdout: string;
  stderr: string;
}

export interface RunningCli {
  child: ChildProcessWithoutNullStreams;
  stdout(): string;
  /** Resolves once stdout matches (polled on each chunk), rejects after `timeoutMs`. */
  waitFor(text: string | RegExp, timeoutMs?: number): Promise<void>;
  exited: Promise<CliResult>;
}

/** Starts the real CLI as a child process: `node --import tsx src/cli.ts ...args`. */
export function startCli(args: string[], env: Record<string, string> = {}, stdin?: string): RunningCli {
  // The parent's settings must not leak into the CLI under test.
  const clean = Object.fromEntries(Object.entries(process.env).filter(([k]) => !['ADMIN_TOKEN', 'COMBO_URL', 'COMBO_SECRET_KEY', 'COMBO_OPERATOR'].includes(k)));
  const child = spawn(process.execPath, ['--import', 'tsx', path.join(ROOT, 'src/cli.ts'), ...args], { cwd: ROOT, env: { ...clean, ...env } });
  let stdout = '';
  let stderr = '';
  const waiters = new Set<() => void>();
  child.stdout.on('data', (d) => {
    stdout += String(d);
    for (const w of waiters) w();
  });
  child.stderr.on('data', (d) => (stderr += String(d)));
  child.stdin.end(stdin ?? '');
  const exited = new Promise<CliResult>((resolve, reject) => {
    child.on('error', reject);
    child.on('close', (code) => resolve({ code, stdout, stderr }));
  });
  return {
    child,
    stdout: () => stdout,
    exited,
    waitFor(text, timeoutMs = 20_000) {
      const matches = () => (typeof text === 'string' ? stdout.includes(text) : text.test(stdout));
      if (matches()) return Promise.resolve();
      return new Promise((resolve, reject) => {
        const timer = setTimeout(() => {
          waiters.delete(check);
          reject(new Error(`timed out waiting for ${String(text)}; stdout:\n${stdout}\nstderr:\n${stderr}`));
        }, timeoutMs);
        const check = () => {
          if (!matches()) return;
          clearTimeout(timer);
          waiters.delete(check);
          resolve();
        };
        waiters.add(check);
        void exited.then(check);
      });
    },
  };
}

/** Runs the CLI to completion. */
export function runCli(args: string[], env: Record<string, string> = {}, stdin?: string): Promise<CliResult> {
  return startCli(args, env, stdin).exited;
}
