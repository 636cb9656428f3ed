import { AsyncResource } from 'node:async_hooks';

/**
 * Keeps V8's hidden classes of Node's `process.nextTick` objects alive for the life of the process.
 *
 * Why: Node 20 builds each tick object as `{ [async_id_symbol]: id, [trigger_async_id_symbol]:
 * id, callback, args }`. Each property after the first computed key is defined through an inline
 * cache that has no polymorphic state: it remembers one map and goes megamorphic for good as soon
 * as it sees another. Tick objects live for microseconds, and V8 holds the intermediate maps
 * ({asyncId}, {asyncId, triggerId}, ...) only weakly from the feedback. After a few full
 * collections in a moment with no tick queued (an idle service, the memory reducer), those maps
 * are freed, the next tick builds fresh ones, and the cache goes megamorphic. From then on every
 * tick (a query-binding request makes 9 inside Node's HTTP and stream code) defines three keys
 * through `Runtime_DefineKeyedOwnPropertyInLiteral`, V8's slow path: about a seventh of such a
 * request's work, and a tenth of an enter-game's or a create-order's.
 *
 * One object built by an identical literal, with the same two symbols (an AsyncResource carries
 * them as own keys), gets the same map chain and, held here, keeps it alive. Node keeps its ids
 * in double fields (they come from a Float64Array); the pin's ids are doubles too, so the fields
 * have that representation from the first object on and no later id can generalize them (a
 * representation change would deprecate the pinned maps).
 *
 * Harmless when Node changes: the worst case is one unused object. `test/unit/tick-shape.test.ts`
 * checks in a child process that the maps are the same and that the cache stays monomorphic.
 */
let pinned: object | undefined;

export function keepTickObjectShape(): void {
  if (pinned) return;
  const keys = Object.getOwnPropertySymbols(new AsyncResource('ComboTickShape'));
  const asyncId = keys.find((k) => k.description === 'async_id_symbol');
  const triggerId = keys.find((k) => k.description === 'trigger_async_id_symbol');
  if (!asyncId || !triggerId) {
    pinned = {};
    return;
  }
  const callback = (): void => {};
  // Same keys, same order, same value kinds as the literal in node:internal/process/task_queues.
  pinned = { [asyncId]: -1.5, [triggerId]: -1.5, callback, args: undefined };
}

/** The object that holds the maps (for the test that compares it with Node's own tick objects). */
export function pinnedTickObject(): object | undefined {
  return pinned;
}
