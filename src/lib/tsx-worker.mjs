// The entry of a worker started from the TypeScript sources (src/lib/worker.ts): registers tsx's
// loader in this thread, then runs the worker module named by the first argument.
import { register } from 'tsx/esm/api';

register();
await import(process.argv[2]);
