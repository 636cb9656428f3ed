import { executionAsyncResource } from 'node:async_hooks';

/**
 * Keeps V8's hidden classes of Node's `process.nextTick` objects alive for the life of the process.
 *
 * Why: Node builds each tick object with one literal, `{ [async_id_symbol]: id,
 * [trigger_async_id_symbol]: id, callback, args }` on Node 20, with `[kAsyncContextFrame]: frame`
 * after the ids from Node 22 on. Each property after the first computed key is defined through an
 * inline cache that has no polymorphic state: it remembers one map and goes megamorphic for good
 * as soon as it sees another. Tick objects live for microseconds, and V8 holds the intermediate
 * maps ({asyncId}, {asyncId, triggerId}, ...) only weakly from the feedback. After a few full
 * collections in a moment with no tick queued (an idle service, the memory reducer), those maps
 * are freed, the next tick builds fresh ones, and the cache goes megamorphic. From then on every
 * tick (a query-binding request makes 9 inside Node's HTTP and stream code) defines its keys
 * through `Runtime_DefineKeyedOwnPropertyInLiteral`, V8's slow path: about a seventh of such a
 * request's work, and a tenth of an enter-game's or a create-order's.
 *
 * One real tick object, held here, keeps its map chain alive. It is taken without an async hook
 * (enabling one, even briefly, installs V8 promise hooks and invalidates a protector for good):
 * while a tick's callback runs, Node has pushed the tick object as the execution's async
 * resource, so the callback of one tick queued here reads it with `executionAsyncResource()`.
 * Its ids are doubles, as in every tick object (they come from a Float64Array), so no later id
 * can generalize the fields and deprecate the held maps. Node 22's key is a module-private
 * symbol, so a look-alike literal could not have the same map; the real object always does.
 *
 * Harmless when Node changes: the worst case is one unused object. `test/unit/tick-shape.test.ts`
 * checks in a child process that the maps are the same and that the cache stays monomorphic.
 */
let pinned: object | undefined;
let queued = false;

export function keepTickObjectShape(): void {
  if (queued) return;
  queued = true;
  process.nextTick(() => {
    pinned = executionAsyncResource();
  });
}

/** The tick object that holds the maps, from the tick after keepTickObjectShape on. */
export function pinnedTickObject(): object | undefined {
  return pinned;
}
