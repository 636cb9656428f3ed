// Preload for A/B runs: `NODE_OPTIONS="--require ./bench/idle-gc.cjs" npm run bench:instructions`.
//
// Once, IDLE_GC_AFTER_MS after start (default 20000: under valgrind, during the warm-up), the main
// thread runs six full garbage collections from a timer, when no process.nextTick is queued.
// That is what V8's memory reducer does to a service that has gone idle for a moment. It frees
// objects' hidden classes that nothing holds, which is the condition src/lib/tick-shape.ts
// guards against. Without this preload, whether it happens in a run depends on timing
// (docs/benchmarks.md, "Twelfth session").
'use strict';
const v8 = require('node:v8');
const vm = require('node:vm');
const { isMainThread } = require('node:worker_threads');

if (isMainThread) {
  v8.setFlagsFromString('--expose-gc');
  const gc = vm.runInNewContext('gc');
  const timer = setTimeout(() => {
    for (let i = 0; i < 6; i++) gc();
  }, Number(process.env.IDLE_GC_AFTER_MS ?? 20000));
  timer.unref();
}
