/**
 * Child process for test/unit/tick-shape.test.ts, run with --allow-natives-syntax --expose-gc.
 * Argument `pin` calls keepTickObjectShape first. The probe queues ticks, lets the queue empty,
 * runs several full collections (what an idle service and V8's memory reducer do), queues ticks
 * again and prints V8's feedback for process.nextTick, then whether a real tick object has the
 * pinned object's map. V8 natives are reached through `new Function`: TypeScript cannot parse them.
 */
import { createHook } from 'node:async_hooks';
import { setTimeout as sleep } from 'node:timers/promises';
import { keepTickObjectShape, pinnedTickObject } from '../../src/lib/tick-shape.js';

const native = (body: string) => new Function('a', 'b', body) as (a?: unknown, b?: unknown) => unknown;
const gc = (globalThis as { gc?: () => void }).gc;
if (!gc) throw new Error('run with --expose-gc');

function burst(): void {
  for (let i = 0; i < 20_000; i++) process.nextTick(() => {});
}

if (process.argv[2] === 'pin') keepTickObjectShape();
burst();
await sleep(20);
for (let i = 0; i < 6; i++) gc();
burst();
await sleep(20);
native('%DebugPrint(a)')(process.nextTick);

// A real tick object, caught by an async hook (enabled only now: hooks change V8's promise paths).
let real: object | undefined;
const hook = createHook({
  init(_id, type, _trigger, resource) {
    if (type === 'TickObject') real ??= resource as object;
  },
}).enable();
process.nextTick(() => {});
hook.disable();
const pinned = pinnedTickObject();
process.stdout.write(`\nSAME_MAP=${pinned && real ? String(native('return %HaveSameMap(a, b)')(real, pinned)) : 'no-pin'}\n`);
// The literal's properties: each one is a keyed definition with its own feedback slot.
process.stdout.write(`KEYS=${real ? Reflect.ownKeys(real).length : 0}\n`);
