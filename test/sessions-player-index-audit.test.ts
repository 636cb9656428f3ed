import SQLite from 'better-sqlite3';
import { describe, expect, it } from 'vitest';
import { migrateToLatest, openDatabase } from '../src/db/index.js';
import { PlayerIndexer, playerIndexFile } from '../src/db/player-index.js';
import { insertGames } from './helpers/sqlite-plans.js';
import { createTestDatabase, TEST_DB } from './helpers/db.js';

// Audit of the SQLite player index (db/player-index.ts) through the service's real entry points.

describe.skipIf(TEST_DB !== 'sqlite')('stopping the player index worker (SQLite)', () => {
  it('stop() during a long pass (a rebuild) returns promptly, not after the whole pass', async () => {
    const tdb = await createTestDatabase();
    const file = tdb.url.slice('sqlite:'.length);
    const database = openDatabase(tdb.url);
    await migrateToLatest(database);
    await insertGames(database.db, 'g_a');
    await database.close();
    const raw = new SQLite(file);
    raw.exec(`with recursive n(i) as (select 1 union all select i + 1 from n where i < 300000)
      insert into sessions (game_id, session_id, combo_id, entered_at, left_at, close_reason, created_at)
      select 'g_a', 's' || i, 'p' || (i % 1000), i, null, null, i from n`);
    raw.close();
    // Small chunks: the pass takes seconds, as a rebuild of millions of sessions takes minutes.
    const indexer = new PlayerIndexer({ file, intervalMs: 3_600_000, chunkRows: 200 });
    const passing = indexer.pass().catch((e: Error) => e);
    await new Promise((r) => setTimeout(r, 300));
    const t0 = Date.now();
    await indexer.stop();
    const stopMs = Date.now() - t0;
    const result = await passing;
    const index = new SQLite(playerIndexFile(file), { readonly: true });
    const through = (index.prepare('select through from progress').get() as { through: number }).through;
    index.close();
    await tdb.drop();
    // What was indexed before the stop stays indexed (each chunk is its own transaction).
    expect(through).toBeGreaterThan(0);
    expect({ stopMs: stopMs < 1000 ? 'prompt' : stopMs, result }).toMatchObject({ stopMs: 'prompt' });
    expect(through).toBeLessThan(300000);
    expect(result).toBeInstanceOf(Error);
    expect(String(result)).toMatch(/the player index worker has stopped/);
  }, 60_000);
});
