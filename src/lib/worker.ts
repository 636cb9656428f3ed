import { existsSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { Worker, type WorkerOptions } from 'node:worker_threads';

/**
 * Starts the worker module `url` (`new URL('./x-worker.js', import.meta.url)`), a TypeScript
 * module of src/ like any other. Built (dist/), the compiled .js is there and node runs it.
 * From the sources (tsx for `npm run dev` and the CLI, vite-node under Vitest) only the .ts is:
 * the worker starts at tsx-worker.mjs, which registers tsx's loader in the worker's thread and
 * imports the .ts module. (A worker does not get a loader from `--import tsx` in its execArgv
 * in time for its entry module on Node 20, hence the step.)
 */
export function startWorker(url: URL, options: WorkerOptions = {}): Worker {
  if (existsSync(fileURLToPath(url))) return new Worker(url, options);
  const source = url.href.replace(/\.js$/, '.ts');
  return new Worker(new URL('./tsx-worker.mjs', import.meta.url), { ...options, argv: [source, ...(options.argv ?? [])] });
}
