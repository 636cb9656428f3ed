import { describe, expect, it } from 'vitest';
import { SESSION_COLUMNS, sessionParams, type SessionRow } from '../../src/sessions/store.js';
import { EVENT_COLUMNS, eventParams, ORDER_COLUMNS, orderParams, type OrderEventRow, type OrderRow } from '../../src/orders/store.js';

/** A row whose every field holds its own column name: the parameters must come out in column order. */
const labelled = <T>(columns: readonly string[]) => Object.fromEntries(columns.map((c) => [c, c])) as T;

describe('prepared insert parameters', () => {
  it('lists every order column once, in ORDER_COLUMNS order', () => {
    expect(orderParams(labelled<OrderRow>(ORDER_COLUMNS))).toEqual([...ORDER_COLUMNS]);
  });

  it('lists every event column once, in EVENT_COLUMNS order', () => {
    expect(eventParams(labelled<OrderEventRow>(EVENT_COLUMNS))).toEqual([...EVENT_COLUMNS]);
  });

  it('lists every session column once, in SESSION_COLUMNS order', () => {
    expect(sessionParams(labelled<SessionRow>(SESSION_COLUMNS))).toEqual([...SESSION_COLUMNS]);
  });
});
