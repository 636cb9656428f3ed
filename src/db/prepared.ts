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

/** A query compiled once with named parameters (see prepareNamed). */
export interface NamedQuery<N extends string> {
  sql: string;
  /** Per parameter: the name whose value goes there, or the constant the builder wrote. */
  slots: ({ name: N } | { fixed: unknown })[];
}

/**
 * Compiles the query `build` makes from a stand-in value for each name (whatever it writes as a
 * constant stays fixed). Each stand-in is found in the compiled parameters here, once, so the
 * caller need not know the order in which the builder placed them.
 */
export function compileNamed<N extends string>(db: Kysely<DB>, names: readonly N[], build: (db: Kysely<DB>, p: Record<N, never>) => Compilable<unknown>): NamedQuery<N> {
  const standIns = Object.fromEntries(names.map((n) => [n, `\u0000param:${n}`])) as unknown as Record<N, never>;
  const compiled = build(db, standIns).compile();
  const slots = compiled.parameters.map((v) => {
    const name = names.find((n) => standIns[n] === v);
    return name === undefined ? { fixed: v } : { name };
  });
  return { sql: compiled.sql, slots };
}

/** Runs a NamedQuery with these values (on SQLite's connection directly where it may, as prepare). */
export function runNamed<N extends string, R>(q: Q, query: NamedQuery<N>, values: Record<N, unknown>): Promise<QueryResult<R>> {
  const params = query.slots.map((s) => ('name' in s ? values[s.name] : s.fixed));
  return executeDirect<R>(q, query.sql, params) ?? q.executeQuery<R>(CompiledQuery.raw(query.sql, params));
}

/** `prepare` for a query whose parameters are named (compileNamed), run with a record of values. */
export function prepareNamed<N extends string, R>(
  db: Kysely<DB>,
  names: readonly N[],
  build: (db: Kysely<DB>, p: Record<N, never>) => Compilable<R>,
): (q: Q, values: Record<N, unknown>) => Promise<QueryResult<R>> {
  const query = compileNamed(db, names, build);
  return (q, values) => runNamed<N, R>(q, query, values);
}
