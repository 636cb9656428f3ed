import Database from 'better-sqlite3';
import { describe, expect, it } from 'vitest';
import { executeDirect, runDirectly } from '../../src/db/direct.js';

describe('statements run directly on better-sqlite3', () => {
  const db = new Database(':memory:');
  db.exec('create table t (a, b)');
  const handle = {};
  runDirectly(handle, db, false);

  it.each([1, 64, 65, 500])('binds %i parameters in order, as arguments or as one array', async (n) => {
    const params = Array.from({ length: n }, (_, i) => (i % 2 ? `s${i}` : i));
    const sql = `select ${params.map((_, i) => `? as c${i}`).join(', ')}`;
    const r = await executeDirect<Record<string, unknown>>(handle, sql, params);
    expect(Object.values(r!.rows[0]!)).toEqual(params);
  });

  it('binds null, numbers, strings and buffers on a write', async () => {
    const r = await executeDirect(handle, 'insert into t (a, b) values (?, ?)', [null, Buffer.from('xy')]);
    expect(r!.numAffectedRows).toBe(1n);
    await executeDirect(handle, 'insert into t (a, b) values (?, ?)', [1.5, 'text']);
    expect(db.prepare('select a, b from t').all()).toEqual([
      { a: null, b: Buffer.from('xy') },
      { a: 1.5, b: 'text' },
    ]);
  });
});
