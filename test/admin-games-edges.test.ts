import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync, statSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { openDatabase } from '../src/db/index.js';
import { ManualClock } from '../src/lib/clock.js';
import { keyId, SecretBox } from '../src/lib/secret-box.js';
import { createTestDatabase, lockWaiters, TEST_DB, type TestDatabase } from './helpers/db.js';
import { createPartner } from './helpers/partners.js';
import { spawnCommand, spawnEntry, type Spawned } from './helpers/spawn.js';
import { admin, createGame, signed, startService, type TestGame, type TestService } from './helpers/service.js';

/**
 * Edges of game management (src/games), of secrets at rest (rotation, the start-up check, the
 * key file) that the main suites leave open.
 */
const ENTER = '/v1/server/enter-game';
const enterBody = () => ({ combo_id: 'p-1', session_id: `s-${randomBytes(4).toString('hex')}` });
let seq = 0;
const newId = () => `edge_${process.pid}_${++seq}_${randomBytes(3).toString('hex')}`;

/** The audit entries of one exact target (and action), as the operator API lists them. */
async function auditOf(t: TestService, target: string, action?: string): Promise<Record<string, any>[]> {
  const q = new URLSearchParams({ target, ...(action ? { action } : {}) });
  const r = await admin(t, 'GET', `/admin/v1/audit?${q}`);
  expect(r.status, r.text).toBe(200);
  return r.body.data;
}

describe('games (frozen clock)', () => {
  const clock = new ManualClock(Date.UTC(2026, 0, 5, 8, 0, 0));
  const secretsKey = randomBytes(32);
  let t: TestService;
  beforeAll(async () => {
    t = await startService({ clock, secretsKey });
  });
  afterAll(async () => t?.stop());

  it('a game id looked up before it existed signs requests right after it is created (no wait for the cache)', async () => {
    const gameId = newId();
    const g: TestGame = { gameId, secret: `sk_${randomBytes(20).toString('hex')}`, keyId: '' };
    // Asked for while it does not exist: remembered as missing.
    const before = await signed(t, g, 'POST', ENTER, enterBody());
    expect([before.status, before.body.error]).toEqual([401, 'invalid_signature']);
    const created = await admin(t, 'POST', '/admin/v1/games', { game_id: gameId, name: 'Late', secret_key: g.secret });
    expect(created.status, created.text).toBe(201);
    // The clock does not move: only the create itself can make the new game known.
    const after = await signed(t, g, 'POST', ENTER, enterBody());
    expect(after.status, after.text).toBe(200);
  });

  it("GET /admin/v1/games refuses the partners listing's cursor with 400 invalid_request", async () => {
    await createPartner(t, []);
    await createPartner(t, []);
    const partners = await admin(t, 'GET', '/admin/v1/partners?limit=1');
    expect(partners.status).toBe(200);
    expect(typeof partners.body.next_cursor).toBe('string');
    const r = await admin(t, 'GET', `/admin/v1/games?cursor=${encodeURIComponent(partners.body.next_cursor)}`);
    expect([r.status, r.body.error]).toEqual([400, 'invalid_request']);
  });

  it('PATCH {nppa: null} removes the sealed national-system secret from the database, not only the ids', async () => {
    const g = await createGame(t);
    const set = await admin(t, 'PATCH', `/admin/v1/games/${g.gameId}`, { nppa: { app_id: 'a'.repeat(32), biz_id: '1101999999', secret_key: 'ab'.repeat(16) } });
    expect(set.status, set.text).toBe(200);
    const row = () => t.service.database.db.selectFrom('games').select(['nppa_app_id', 'nppa_biz_id', 'nppa_secret_enc']).where('game_id', '=', g.gameId).executeTakeFirstOrThrow();
    expect((await row()).nppa_secret_enc).toMatch(/^v2:/);
    const cleared = await admin(t, 'PATCH', `/admin/v1/games/${g.gameId}`, { nppa: null });
    expect(cleared.status, cleared.text).toBe(200);
    expect(cleared.body.nppa).toBeNull();
    expect(await row()).toEqual({ nppa_app_id: null, nppa_biz_id: null, nppa_secret_enc: null });
    expect((await t.service.games.stored(g.gameId))?.nppaSecret).toBeNull();
  });

  it('PATCH of an unknown game is 404 and writes no audit entry', async () => {
    const gameId = newId();
    const r = await admin(t, 'PATCH', `/admin/v1/games/${gameId}`, { name: 'ghost' });
    expect([r.status, r.body.error]).toEqual([404, 'not_found']);
    expect(await auditOf(t, gameId)).toEqual([]);
    expect((await admin(t, 'GET', `/admin/v1/games/${gameId}`)).status).toBe(404);
  });

  it('adding and deleting a signing key write game.key.create and game.key.delete audit entries, without the secret', async () => {
    const g = await createGame(t);
    const added = await admin(t, 'POST', `/admin/v1/games/${g.gameId}/keys`, {});
    expect(added.status, added.text).toBe(201);
    const secret = added.body.secret_key as string;
    const created = await auditOf(t, `${g.gameId}/${added.body.key_id}`, 'game.key.create');
    expect(created).toHaveLength(1);
    expect(created[0]).toMatchObject({ actor: 'ADMIN_TOKEN', action: 'game.key.create', target: `${g.gameId}/${added.body.key_id}`, at: clock.now() });

    expect((await admin(t, 'DELETE', `/admin/v1/games/${g.gameId}/keys/${g.keyId}`)).status).toBe(200);
    const deleted = await auditOf(t, `${g.gameId}/${g.keyId}`, 'game.key.delete');
    expect(deleted).toHaveLength(1);
    expect(deleted[0]).toMatchObject({ actor: 'ADMIN_TOKEN', action: 'game.key.delete', target: `${g.gameId}/${g.keyId}` });

    const rows = await t.service.database.db.selectFrom('audit_log').selectAll().where('target', 'like', `${g.gameId}%`).execute();
    const text = JSON.stringify(rows);
    for (const s of [secret, g.secret]) {
      expect(text).not.toContain(s);
      expect(text).not.toContain(s.slice(3, 20));
    }
  });

  it('a gm_url stored with a password by an older release is shown without it', async () => {
    const gameId = newId();
    const now = clock.now();
    await t.service.database.db
      .insertInto('games')
      .values({
        game_id: gameId,
        name: 'Legacy',
        iap_enabled: 1,
        sandbox_payments: 1,
        order_ttl_seconds: 1800,
        gm_url: 'https://gmuser:gmpass-hunter2@gm.example.com/gm',
        rate_limit_per_second: 1000,
        nppa_app_id: null,
        nppa_biz_id: null,
        nppa_secret_enc: null,
        created_at: now,
        updated_at: now,
      })
      .execute();
    const got = await admin(t, 'GET', `/admin/v1/games/${gameId}`);
    expect(got.status, got.text).toBe(200);
    expect(got.body.gm_url).toBe('https://gmuser:***@gm.example.com/gm');
    expect(got.text).not.toContain('hunter2');
    let cursor: string | null = null;
    let listed: Record<string, any> | undefined;
    do {
      const page = await admin(t, 'GET', `/admin/v1/games?limit=200${cursor ? `&cursor=${cursor}` : ''}`);
      expect(page.text).not.toContain('hunter2');
      listed ??= page.body.data.find((x: { game_id: string }) => x.game_id === gameId);
      cursor = page.body.next_cursor;
    } while (cursor);
    expect(listed?.gm_url).toBe('https://gmuser:***@gm.example.com/gm');
  });

  it('replacing a product later moves its stored updated_at (GET after), keeping created_at', async () => {
    const g = await createGame(t);
    const p = `/admin/v1/games/${g.gameId}/products/vip`;
    const first = clock.now();
    expect((await admin(t, 'PUT', p, { name: 'VIP', price: 3000, currency: 'CNY' })).status).toBe(200);
    clock.advance(60_000);
    const put = await admin(t, 'PUT', p, { name: 'VIP+', price: 3300, currency: 'CNY' });
    expect(put.body).toMatchObject({ created_at: first, updated_at: first + 60_000 });
    const got = await admin(t, 'GET', p);
    expect(got.body).toMatchObject({ name: 'VIP+', price: 3300, created_at: first, updated_at: first + 60_000 });
    const listed = (await admin(t, 'GET', `/admin/v1/games/${g.gameId}/products`)).body.data.find((x: { product_id: string }) => x.product_id === 'vip');
    expect(listed).toEqual(got.body);
  });

  it('a stored key of a known key id with no payload (a damaged value) answers 500 internal_error, not the 503 of a key rotation in progress', async () => {
    const g = await createGame(t);
    await t.service.database.db
      .insertInto('game_keys')
      .values({ key_id: `key_broken_${randomBytes(4).toString('hex')}`, game_id: g.gameId, secret_enc: `v2:${keyId(secretsKey)}`, created_at: clock.now() - 1 })
      .execute();
    t.service.games.invalidate(g.gameId);
    const r = await signed(t, g, 'POST', ENTER, enterBody());
    expect([r.status, r.body.error]).toEqual([500, 'internal_error']);
  });
});

describe('GET /admin/v1/games paging over 51 games', () => {
  let t: TestService;
  const ids = Array.from({ length: 51 }, (_, i) => `page_${String(i).padStart(3, '0')}`);
  beforeAll(async () => {
    t = await startService(); // its own database: these 51 games are all there is
    for (let i = 0; i < ids.length; i += 10) {
      const answers = await Promise.all(ids.slice(i, i + 10).map((id) => admin(t, 'POST', '/admin/v1/games', { game_id: id, name: id })));
      for (const a of answers) expect(a.status, a.text).toBe(201);
    }
  });
  afterAll(async () => t?.stop());

  it('without limit answers 50 games (the documented default) and a cursor to the 51st', async () => {
    const first = await admin(t, 'GET', '/admin/v1/games');
    expect(first.status).toBe(200);
    expect(first.body.data.map((g: { game_id: string }) => g.game_id)).toEqual(ids.slice(0, 50));
    expect(typeof first.body.next_cursor).toBe('string');
    const second = await admin(t, 'GET', `/admin/v1/games?cursor=${first.body.next_cursor}`);
    expect(second.body.data.map((g: { game_id: string }) => g.game_id)).toEqual([ids[50]]);
    expect(second.body.next_cursor).toBeNull();
  });

  it('an exactly full last page answers next_cursor null', async () => {
    const all = await admin(t, 'GET', '/admin/v1/games?limit=51');
    expect(all.body.data).toHaveLength(51);
    expect(all.body.next_cursor).toBeNull();
    // 51 = 3 x 17: three full pages, the last without a cursor.
    const seen: string[] = [];
    const cursors: (string | null)[] = [];
    let cursor: string | null = null;
    do {
      const r = await admin(t, 'GET', `/admin/v1/games?limit=17${cursor ? `&cursor=${cursor}` : ''}`);
      expect(r.body.data).toHaveLength(17);
      seen.push(...r.body.data.map((g: { game_id: string }) => g.game_id));
      cursor = r.body.next_cursor;
      cursors.push(cursor);
    } while (cursor && cursors.length < 5);
    expect(cursors.map((c) => c === null)).toEqual([false, false, true]);
    expect(seen).toEqual(ids);
  });
});

describe('concurrent key creations (PostgreSQL, deterministic)', () => {
  it.skipIf(TEST_DB !== 'postgres')('two creations that both read one key before either inserts: the game row lock lets only one through', async () => {
    const t = await startService();
    const locker = new pg.Client({ connectionString: t.db.url });
    await locker.connect();
    try {
      const g = await createGame(t);
      // Inserts into game_keys wait (SHARE conflicts with ROW EXCLUSIVE); reads do not. Without
      // the game's row lock, both creations would read one key here and both insert.
      await locker.query('BEGIN');
      await locker.query('LOCK TABLE game_keys IN SHARE MODE');
      const pending = [0, 1].map(() => admin(t, 'POST', `/admin/v1/games/${g.gameId}/keys`, {}));
      // Both are waiting on a lock: one for the table (after its read), the other for the first
      // one's game row (with the row lock) or for the table (without it).
      await lockWaiters(t.db.url, 'both key creations to wait on a lock', 2);
      await locker.query('COMMIT');
      const answers = await Promise.all(pending);
      expect(answers.map((a) => a.status).sort()).toEqual([201, 409]);
      expect((await admin(t, 'GET', `/admin/v1/games/${g.gameId}`)).body.key_ids).toHaveLength(2);
    } finally {
      await locker.end().catch(() => {});
      await t.stop();
    }
  });
});

describe('rotate-secrets', () => {
  const keyA = randomBytes(32);
  const keyB = randomBytes(32);
  const keyC = randomBytes(32); // configured nowhere
  const cliEnv = (db: TestDatabase, current: Buffer, previous?: Buffer) => ({
    DATABASE_URL: db.url,
    DATA_DIR: mkdtempSync(path.join(os.tmpdir(), 'combo-cli-')),
    SECRETS_KEY: current.toString('base64'),
    ...(previous ? { SECRETS_KEY_PREVIOUS: previous.toString('base64') } : {}),
  });
  async function gameKeys(db: TestDatabase): Promise<Record<string, string>> {
    const database = openDatabase(db.url);
    try {
      const rows = await database.db.selectFrom('game_keys').select(['key_id', 'secret_enc']).execute();
      return Object.fromEntries(rows.map((r) => [r.key_id, r.secret_enc]));
    } finally {
      await database.close();
    }
  }

  it('is one transaction: a value that does not open (the last column) leaves the values it could open unchanged', async () => {
    const db = await createTestDatabase();
    try {
      const a = await startService({ db, secretsKey: keyA });
      try {
        const g = await createGame(a);
        // games.nppa_secret_enc comes after game_keys in the rotation: sealed with a key the
        // rotation is not given.
        await a.service.database.db
          .updateTable('games')
          .set({ nppa_app_id: 'c'.repeat(32), nppa_biz_id: '1101999999', nppa_secret_enc: new SecretBox(keyC).seal('ab'.repeat(16)) })
          .where('game_id', '=', g.gameId)
          .execute();
      } finally {
        await a.stop();
      }
      const before = await gameKeys(db);
      expect(Object.values(before).every((v) => v.startsWith(`v2:${keyId(keyA)}:`))).toBe(true);
      const cli = spawnEntry('src/cli.ts', cliEnv(db, keyB, keyA), ['rotate-secrets']);
      expect(await cli.exited).toBe(1);
      expect(cli.stderr()).toMatch(/games\.nppa_secret_enc of .*nothing was changed/);
      // The game key opened with the previous key, yet was not re-sealed.
      expect(await gameKeys(db)).toEqual(before);
    } finally {
      await db.drop();
    }
  });

  it.skipIf(TEST_DB !== 'postgres')('a value changed by a running instance during the rotation is not overwritten', async () => {
    const db = await createTestDatabase();
    const locker = new pg.Client({ connectionString: db.url });
    let cli: Spawned | undefined;
    try {
      const a = await startService({ db, secretsKey: keyA });
      let g: TestGame;
      let second: string;
      try {
        g = await createGame(a);
        const k = await admin(a, 'POST', `/admin/v1/games/${g.gameId}/keys`, {});
        expect(k.status).toBe(201);
        second = k.body.key_id;
      } finally {
        await a.stop();
      }
      await locker.connect();
      // An instance already sealing with the new key changes the second key's value; its
      // transaction is still open while the rotation reads the old value.
      const changed = new SecretBox(keyB).seal('sk_changed_concurrently_0123456789');
      await locker.query('BEGIN');
      await locker.query('UPDATE game_keys SET secret_enc = $1 WHERE key_id = $2', [changed, second]);
      cli = spawnEntry('src/cli.ts', cliEnv(db, keyB, keyA), ['rotate-secrets']);
      await lockWaiters(db.url, "the rotation to wait for the concurrent change's row lock");
      await locker.query('COMMIT');
      expect(await cli.exited, cli.stderr()).toBe(0);
      const after = await gameKeys(db);
      expect(after[second]).toBe(changed);
      expect(after[g.keyId]?.startsWith(`v2:${keyId(keyB)}:`)).toBe(true);
    } finally {
      if (cli && cli.child.exitCode === null && cli.child.signalCode === null) cli.child.kill('SIGKILL');
      await locker.end().catch(() => {});
      await db.drop();
    }
  });
});

describe('start-up (src/main.ts as a process)', () => {
  const running: Spawned[] = [];
  const dirs: string[] = [];
  const tmp = () => {
    const d = mkdtempSync(path.join(os.tmpdir(), 'combo-edge-'));
    dirs.push(d);
    return d;
  };
  afterAll(async () => {
    for (const s of running) {
      if (s.child.exitCode === null && s.child.signalCode === null) s.child.kill('SIGKILL');
      await s.exited;
    }
    for (const d of dirs) rmSync(d, { recursive: true, force: true });
  });
  const baseEnv = (db: TestDatabase, dataDir: string) => ({
    DATABASE_URL: db.url,
    DATA_DIR: dataDir,
    ADMIN_TOKEN: 'edge-admin-token-0123456789',
    PORT: '0',
    HOST: '127.0.0.1',
    LOG_LEVEL: 'info',
  });
  /** The process either exits or reports it listens, whichever first. */
  const outcome = (s: Spawned) =>
    Promise.race([s.exited.then((code) => ({ exit: code })), s.logLine('service listening', 60_000).then(() => ({ exit: 'listening' as const }))]);

  it('values sealed under two key ids in one column, one not configured: the service stops at start naming that key id', async () => {
    const db = await createTestDatabase();
    try {
      const keyA = randomBytes(32);
      const keyC = randomBytes(32);
      const a = await startService({ db, secretsKey: keyA });
      try {
        const g = await createGame(a); // its key, sealed with A, is the first row of game_keys
        await a.service.database.db
          .insertInto('game_keys')
          .values({ key_id: `key_zz_${randomBytes(4).toString('hex')}`, game_id: g.gameId, secret_enc: new SecretBox(keyC).seal('sk_sealed_elsewhere_0123456789'), created_at: Date.now() - 60_000 })
          .execute();
      } finally {
        await a.stop();
      }
      const s = spawnEntry('src/main.ts', { ...baseEnv(db, tmp()), SECRETS_KEY: keyA.toString('base64') });
      running.push(s);
      expect(await outcome(s)).toEqual({ exit: 2 });
      expect(s.stderr()).toContain(`game_keys.secret_enc holds values sealed with key id ${keyId(keyC)}, which SECRETS_KEY (key id ${keyId(keyA)})`);
      expect(s.stderr()).not.toMatch(/\n\s+at /);
    } finally {
      await db.drop();
    }
  });

  it('the generated secrets key file is created with mode 0600, whatever the umask', async () => {
    const db = await createTestDatabase();
    try {
      const dataDir = path.join(tmp(), 'data'); // created by the service
      const s = spawnCommand('sh', ['-c', 'umask 000 && exec "$0" --import tsx src/main.ts', process.execPath], baseEnv(db, dataDir));
      running.push(s);
      expect(await outcome(s)).toEqual({ exit: 'listening' });
      expect(statSync(path.join(dataDir, 'secrets.key')).mode & 0o777).toBe(0o600);
      s.child.kill('SIGTERM');
      expect(await s.exited).toBe(0);
    } finally {
      await db.drop();
    }
  });

  it('a key file of the wrong length is refused: exit 2 with one line naming the file', async () => {
    const db = await createTestDatabase();
    try {
      const dataDir = tmp();
      const file = path.join(dataDir, 'secrets.key');
      writeFileSync(file, `${randomBytes(16).toString('base64')}\n`, { mode: 0o600 });
      const s = spawnEntry('src/main.ts', baseEnv(db, dataDir));
      running.push(s);
      expect(await outcome(s)).toEqual({ exit: 2 });
      expect(s.stderr()).toContain(`${file} must hold 32 base64-encoded bytes`);
      expect(s.stderr()).not.toMatch(/\n\s+at /);
    } finally {
      await db.drop();
    }
  });
});
