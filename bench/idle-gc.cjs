// Preload for A/B runs, added by `INSTR_IDLE_GC=1 npm run bench:instructions` to every server it
// counts.
//
// On SIGUSR2 (sent by bench/instructions.ts halfway through the warm-up) the main thread runs
// six full garbage collections from the signal's callback, when no process.nextTick is queued.
// That is what V8's memory reducer does to a service that has gone idle for a moment. It frees
// objects' hidden classes that nothing holds, which is the condition src/lib/tick-shape.ts
// guards against. Without this preload, whether it happens in a run depends on timing. A
// signal rather than a timer: on a fast machine a timer can fall inside the counted requests,
// and the collections and the recompilation after them would be counted as per-request work.
'use strict';
const v8 = require('node:v8');
const vm = require('node:vm');
const { isMainThread } = require('node:worker_threads');

if (isMainThread) {
  v8.setFlagsFromString('--expose-gc');
  const gc = vm.runInNewContext('gc');
  process.on('SIGUSR2', () => {
    for (let i = 0; i < 6; i++) gc();
  });
}
