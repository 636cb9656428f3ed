import { mkdirSync } from 'node:fs';
import path from 'node:path';
import SQLite from 'better-sqlite3';
import { Kysely, SqliteDialect } from 'kysely';
import type { DB } from './schema.js';
import type { Database, DatabaseOptions } from './database.js';
import { GroupCommitter } from './group-commit.js';
import { runDirectly } from './direct.js';
import { TurnSnapshot } from './turn-snapshot.js';
import { SAFETY_NET_PAGES, WalCheckpointer } from './checkpointer.js';
import {
  attachPlayerIndex,
  attachPlayerIndexInMemory,
  markPlayerIndexDamaged,
  onPlayerIndexDamaged,
  openPlayerIndexFile,
  PlayerIndexer,
  resetIfStale,
} from './player-index.js';

export function openSqlite(file: string, options: DatabaseOptions): Database {
  if (file !== ':memory:') mkdirSync(path.dirname(path.resolve(file)), { recursive: true });
  const raw = new SQLite(file);
  // WAL: a committed transaction survives the process being killed. synchronous=NORMAL may
  // lose the last transactions on power loss (never corrupts); FULL fsyncs every commit.
  raw.pragma('journal_mode = WAL');
  raw.pragma(`synchronous = ${options.sqliteSynchronous ?? 'NORMAL'}`);
  raw.pragma(`busy_timeout = ${SQLITE_BUSY_TIMEOUT_MS}`);
  // Journals in memory: a group-commit batch runs each job in a savepoint, and the savepoint's
  // journal (the pages the job changes, ~40-60 KiB) soon outgrows SQLite's 64 KiB in-memory
  // spill limit; in a temporary file every page then costs write system calls. In memory,
  // create-order's database work is markedly cheaper (`npm run bench:sqlite-writes` measures
  // both; docs/benchmarks.md, "SQLite writes"). A batch holds little; a transaction
  // that may change many rows asks for temporary files (TransactionOptions.large), and so do
  // migrations.
  raw.pragma('temp_store = MEMORY');
  const checkpointer =
    file !== ':memory:' && options.sqliteCheckpointIntervalMs
      ? new WalCheckpointer({ file, intervalMs: options.sqliteCheckpointIntervalMs, synchronous: options.sqliteSynchronous ?? 'NORMAL' })
      : undefined;
  if (checkpointer) raw.pragma(`wal_autocheckpoint = ${SAFETY_NET_PAGES}`);
  // Hot reads outside transactions use a second, read-only connection (db/direct.ts), in one
  // read transaction per event-loop turn that every write of this process ends first
  // (db/turn-snapshot.ts). An in-memory database is private to its connection: there, reads go
  // through Kysely.
  // The sessions of a player: in a second file on SQLite, attached to the read-only connection
  // (db/player-index.ts); in memory, an empty one attached to the one connection.
  const playerIndex = file === ':memory:' ? null : openPlayerIndexFile(file);
  if (!playerIndex) attachPlayerIndexInMemory(raw);
  const reader = file === ':memory:' ? null : withStatementCache(openReader(file));
  const snapshot = reader ? new TurnSnapshot(reader) : null;
  const statements = withStatementCache(raw, snapshot ? () => snapshot.endForWrite() : undefined);
  const db = new Kysely<DB>({ dialect: new SqliteDialect({ database: statements }) });
  const committer = new GroupCommitter(db, statements);
  if (reader && snapshot) runDirectly(db, reader, true, snapshot);
  // A listing that found the file damaged: made again at the next start.
  if (playerIndex) onPlayerIndexDamaged(db, () => markPlayerIndexDamaged(playerIndex));
  let indexer: PlayerIndexer | undefined;
  return {
    db,
    dialect: 'sqlite',
    sqliteFile: file === ':memory:' ? undefined : file,
    checkpointer,
    transaction: committer.run,
    oneStatement: committer.runStatement,
    onWriteLockWait: committer.onLockWait,
    ping: async () => {
      raw.prepare('select 1').get();
    },
    startPlayerIndexer:
      file === ':memory:'
        ? undefined
        : (o) => {
            if (indexer) throw new Error('the player indexer is already running');
            // A file that no longer matches the database is emptied now, not at the worker's
            // first pass: listings read it from the first request on. Not able to tell (another
            // instance's worker holds the file past the busy time-out): the worker checks at its
            // first pass.
            let stale = false;
            try {
              stale = resetIfStale(playerIndex!, raw);
            } catch {
              // left to the worker
            }
            const started = (indexer = new PlayerIndexer({ file, intervalMs: o?.intervalMs }));
            if (stale) process.nextTick(() => started.emit('reset'));
            return started;
          },
    get playerIndexer() {
      return indexer;
    },
    close: async () => {
      await indexer?.stop();
      await checkpointer?.stop();
      snapshot?.end();
      reader?.close();
      playerIndex?.close();
      await db.destroy();
    },
  };
}
export const SQLITE_BUSY_TIMEOUT_MS = 5000;

function openReader(file: string): SQLite.Database {
  const reader = new SQLite(file, { readonly: true });
  reader.pragma(`busy_timeout = ${SQLITE_BUSY_TIMEOUT_MS}`);
  attachPlayerIndex(reader, file);
  return reader;
}

/**
 * Kysely's SQLite driver prepares every statement on every call; preparing costs more than
 * running a simple insert. Statements are cached by SQL text (Kysely emits the same text for
 * the same query shape, with values as parameters), bounded so odd shapes cannot grow it.
 * `beforeWrite` is called whenever any statement but a plain read is handed out (a write, also
 * one with RETURNING, and transaction control, COMMIT included): every statement reaches the
 * connection through here (Kysely's driver, the group commit, db/direct.ts) and runs right after.
 */
function withStatementCache(raw: SQLite.Database, beforeWrite?: () => void) {
  const cache = new Map<string, SQLite.Statement>();
  return {
    prepare(sqlText: string) {
      let stmt = cache.get(sqlText);
      if (!stmt) {
        stmt = raw.prepare(sqlText);
        if (cache.size >= 2000) cache.clear();
        cache.set(sqlText, stmt);
      }
      if (beforeWrite && !(stmt.reader && stmt.readonly)) beforeWrite();
      return stmt;
    },
    transactionOpen: () => raw.inTransaction,
    close() {
      cache.clear();
      raw.close();
    },
  };
}
