import { spawn, type ChildProcess } from 'node:child_process';
import { createInterface } from 'node:readline';
import { NO_EVENT_LOOP_SHEDDING } from './spawn.js';

export interface ServiceProcess {
  child: ChildProcess;
  url: string;
  /** Everything the process wrote to stdout and stderr so far. */
  output: string[];
  /** Resolves with the exit code (or signal) when the process ends. */
  exited: Promise<number | string>;
}

/**
 * The real entry point (`src/main.ts`) as a child process, as an operator runs it. Resolves
 * once it logged "service listening" with its address (PORT=0 picks a free port).
 */
export function spawnService(env: Record<string, string>, timeoutMs = 30_000): Promise<ServiceProcess> {
  const child = spawn(process.execPath, ['--import', 'tsx', 'src/main.ts'], {
    env: { ...process.env, PORT: '0', HOST: '127.0.0.1', LOG_LEVEL: 'info', ...NO_EVENT_LOOP_SHEDDING, ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  const output: string[] = [];
  const exited = new Promise<number | string>((resolve) => child.on('exit', (code, signal) => resolve(code ?? signal ?? -1)));
  const keep = (l: string) => {
    output.push(l);
    if (output.length > 500) output.splice(0, output.length - 500);
  };
  createInterface({ input: child.stderr! }).on('line', keep);
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`service did not start:\n${output.slice(-20).join('\n')}`)), timeoutMs);
    createInterface({ input: child.stdout! }).on('line', (line) => {
      keep(line);
      if (!line.includes('service listening')) return;
      try {
        const j = JSON.parse(line);
        if (j.msg === 'service listening') {
          clearTimeout(timer);
          resolve({ child, url: j.address, output, exited });
        }
      } catch {
        /* not a log line */
      }
    });
    void exited.then((code) => {
      clearTimeout(timer);
      reject(new Error(`service exited (${code}) before listening:\n${output.slice(-20).join('\n')}`));
    });
  });
}
