import { releaseResponsesOnAnswer } from './http/load-shedding.js';
import { keepTickObjectShape } from './lib/tick-shape.js';

let installed = false;

/**
 * The service's changes to the whole process, installed once by whoever composes it (main.ts;
 * the test helper that builds services) before createService. Each one says why where it is
 * defined:
 * - releaseResponsesOnAnswer (http/load-shedding.ts): Node's response prototypes end a
 *   request's place in the load shedder when it is answered, not when its answer has left;
 * - keepTickObjectShape (lib/tick-shape.ts): V8's hidden classes of process.nextTick objects
 *   are kept alive, so that their inline caches stay monomorphic.
 * PostgreSQL's int8 parser is not one of them: it is given to the service's own pool only
 * (db/open-postgres.ts). Idempotent.
 */
export function installProcessWide(): void {
  if (installed) return;
  installed = true;
  releaseResponsesOnAnswer();
  keepTickObjectShape();
}
