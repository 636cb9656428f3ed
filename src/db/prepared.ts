import { CompiledQuery, type Compilable, type Kysely, type QueryResult, type Transaction } from 'kysely';
import { executeDirect } from './direct.js';
import type { DB } from './schema.js';

type Q = Kysely<DB> | Transaction<DB>;

/**
 * A query built and compiled once (with placeholder values), then executed with new parameters:
 * for the few statements on the hot request paths, where building and compiling the Kysely
 * query costs more than running it. Parameters are passed in the order the builder used them,
 * so the query is written with Kysely, type-checked, and dialect-correct (? or $n). On SQLite
 * the statement runs on the connection itself where the handle allows it (see db/direct.ts).
 */
export function prepare<R>(db: Kysely<DB>, build: (db: Kysely<DB>) => Compilable<R>): (q: Q, params: readonly unknown[]) => Promise<QueryResult<R>> {
  const { sql } = build(db).compile();
  return (q, params) => executeDirect<R>(q, sql, params) ?? q.executeQuery<R>(CompiledQuery.raw(sql, params as unknown[]));
}
