import { mkdtempSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import SQLite from 'better-sqlite3';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { runCli } from './helpers/cli.js';
import { pay } from './helpers/orders.js';
import { TEST_DB } from './helpers/db.js';
import { createGame, orderBody, signed, startService, type TestService } from './helpers/service.js';

// `combo-platform backup --to FILE` (docs/guides/operators.md): the CLI as a child process
// copying the database of a real service while it is writing.
let t: TestService;
let dir: string;
beforeAll(async () => {
  t = await startService();
  dir = mkdtempSync(path.join(os.tmpdir(), 'combo-backup-'));
});
afterAll(async () => {
  await t?.stop();
  rmSync(dir, { recursive: true, force: true });
});

describe.runIf(TEST_DB === 'sqlite')('backup (SQLite)', () => {
  it('copies a consistent database while the service keeps committing orders', async () => {
    const game = await createGame(t);
    // Each step creates an order and pays it: the payment, its state change and the ship_order
    // notification are one transaction, which a consistent copy holds whole or not at all.
    const create = async () => {
      const o = await signed(t, game, 'POST', '/v1/server/create-order', orderBody());
      expect(o.status).toBe(200);
      expect((await pay(t, o.body.order_token)).status).toBe(200);
    };
    for (let i = 0; i < 50; i++) await create();
    // Orders keep arriving during the backup.
    let writing = true;
    let written = 0;
    const load = (async () => {
      while (writing) {
        await create();
        written++;
      }
    })();
    const to = path.join(dir, 'live.db');
    const r = await runCli(['backup', '--to', to], { DATABASE_URL: t.db.url });
    writing = false;
    await load;
    expect(r.code, r.stderr).toBe(0);
    expect(r.stdout).toMatch(/^backed up .* to .*live\.db \(\d+ pages\)\n$/);
    expect(written).toBeGreaterThan(0);
    expect(readdirSync(dir)).toEqual(['live.db']); // no partial file left behind

    const copy = new SQLite(to, { readonly: true });
    try {
      expect(copy.pragma('integrity_check', { simple: true })).toBe('ok');
      const n = (copy.prepare('select count(*) as n from orders where game_id = ?').get(game.gameId) as { n: number }).n;
      expect(n).toBeGreaterThanOrEqual(50);
      expect(n).toBeLessThanOrEqual(50 + written);
      // A snapshot: every paid order in the copy has its payment, its state change and its
      // ship_order notification, and nothing of them exists for an order still unpaid.
      const paid = copy.prepare("select count(*) as n from orders where game_id = ? and status <> 'created'").get(game.gameId) as { n: number };
      expect(paid.n).toBeGreaterThanOrEqual(50);
      const torn = copy
        .prepare(
          `select count(*) as n from orders o where o.game_id = ? and (
             (o.status <> 'created') <> exists (select 1 from payments p where p.order_id = o.order_id) or
             (o.status <> 'created') <> exists (select 1 from order_events e where e.order_id = o.order_id and e.to_status = 'paid') or
             (o.status <> 'created') <> exists (select 1 from notifications n where n.order_id = o.order_id and n.type = 'ship_order'))`,
        )
        .get(game.gameId) as { n: number };
      expect(torn.n).toBe(0);
    } finally {
      copy.close();
    }
  }, 60_000);

  it('refuses to overwrite an existing file unless --force, and refuses the database itself', async () => {
    const to = path.join(dir, 'exists.db');
    writeFileSync(to, 'keep me');
    const refused = await runCli(['backup', '--to', to], { DATABASE_URL: t.db.url });
    expect(refused.code).toBe(1);
    expect(refused.stderr).toContain('exists (--force replaces it)');
    const forced = await runCli(['backup', '--to', to, '--force'], { DATABASE_URL: t.db.url });
    expect(forced.code, forced.stderr).toBe(0);
    const self = await runCli(['backup', '--to', t.db.url.slice('sqlite:'.length)], { DATABASE_URL: t.db.url });
    expect(self.code).toBe(1);
    expect(self.stderr).toContain('--to is the database itself');
    const usage = await runCli(['backup'], { DATABASE_URL: t.db.url });
    expect(usage.code).toBe(2);
  });
});

describe.runIf(TEST_DB === 'postgres')('backup (PostgreSQL)', () => {
  it('points to pg_dump instead', async () => {
    const r = await runCli(['backup', '--to', path.join(dir, 'x.db')], { DATABASE_URL: t.db.url });
    expect(r.code).toBe(1);
    expect(r.stderr).toContain('back it up with pg_dump');
  });
});
