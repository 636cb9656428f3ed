import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ManualClock } from '../src/lib/clock.js';
import { admin, createGame, startService, type TestGame, type TestService } from './helpers/service.js';

const bj = (s: string) => Date.parse(`${s}+08:00`);
const NOW = bj('2026-11-20T12:00:00');
const PI = '1fffbjzos82bs9cnyj1dna7d6d29zg4esnh99u';

describe('player records: the audit log, the birth_date bound, unknown players and adults (PROTOCOL 12)', () => {
  let t: TestService;
  let game: TestGame;
  const clock = new ManualClock(NOW);
  beforeAll(async () => {
    t = await startService({ clock });
    game = await createGame(t);
  });
  afterAll(async () => t?.stop());

  const putPlayer = (comboId: string, body: unknown) => admin(t, 'PUT', `/admin/v1/games/${game.gameId}/players/${comboId}`, body);

  // docs/api.md: the audit log "secrets never appear in it"; players.ts: "the audit log records
  // that it [pi] changed, not its value".
  it('records a player PUT in the audit log as player.put with the pi masked, never its value', async () => {
    expect((await putPlayer('audited', { pi: PI, birth_date: '2000-01-01', banned: false })).status).toBe(200);
    expect((await putPlayer('audited', { pi: null })).status).toBe(200);
    expect((await putPlayer('audited', { banned: true })).status).toBe(200);
    const r = await admin(t, 'GET', `/admin/v1/audit?action=player.put&target=${encodeURIComponent(`${game.gameId}/audited`)}`);
    expect(r.status).toBe(200);
    expect(r.text).not.toContain(PI);
    // newest first: the ban, the pi cleared, the pi set (that it changed, not what to)
    expect(r.body.data.map((e: any) => [e.action, e.actor, e.detail])).toEqual([
      ['player.put', 'ADMIN_TOKEN', { banned: true }],
      ['player.put', 'ADMIN_TOKEN', { pi: null }],
      ['player.put', 'ADMIN_TOKEN', { pi: '***', birth_date: '2000-01-01', banned: false }],
    ]);
    // nor in the stored log itself
    const rows = await t.service.database.db.selectFrom('audit_log').select(['detail']).where('action', '=', 'player.put').execute();
    expect(rows.length).toBeGreaterThanOrEqual(3);
    for (const row of rows) expect(String(row.detail)).not.toContain(PI);
  });

  // The service's bound (players.ts checkBirthDate: "birth_date must be 1900-01-01 or later").
  it('refuses a birth_date before 1900-01-01 with 400 and accepts 1900-01-01', async () => {
    const before = await putPlayer('old', { birth_date: '1899-12-31' });
    expect([before.status, before.body?.error]).toEqual([400, 'invalid_request']);
    expect(before.body.message).toContain('birth_date');
    expect((await admin(t, 'GET', `/admin/v1/games/${game.gameId}/players/old`)).body.recorded).toBe(false);
    const first = await putPlayer('old', { birth_date: '1900-01-01' });
    expect(first.status).toBe(200);
    expect(first.body).toMatchObject({ birth_date: '1900-01-01', age: 126, limits: null });
  });

  it('answers an unknown player of a known game 200 with recorded false and nothing recorded', async () => {
    const r = await admin(t, 'GET', `/admin/v1/games/${game.gameId}/players/never-seen`);
    expect(r.status).toBe(200);
    expect(r.body).toMatchObject({
      game_id: game.gameId,
      combo_id: 'never-seen',
      recorded: false,
      pi: null,
      birth_date: null,
      banned: false,
      age: null,
      nppa_ct: 2,
      limits: null,
      spending: { currency: 'CNY', paid: 0, reserved: 0, remaining: null },
      online_seconds_today: 0,
      created_at: null,
      updated_at: null,
    });
    // after a PUT it is recorded
    expect((await putPlayer('never-seen', {})).body.recorded).toBe(true);
  });

  // docs/compliance.md: limits apply under 18 (8-15, 16-17, under 8); adults are not limited.
  it('shows limits null and no remaining allowance for an adult, and the 16-17 limits the day before the 18th birthday', async () => {
    const adult = await putPlayer('adult', { birth_date: '2008-11-20' }); // 18 today (Beijing)
    expect(adult.status).toBe(200);
    expect(adult.body).toMatchObject({ age: 18, limits: null, spending: { remaining: null } });
    const minor = await putPlayer('almost', { birth_date: '2008-11-21' }); // 17 until tomorrow
    expect(minor.body).toMatchObject({ age: 17, limits: { per_order: 10000, per_month: 40000 }, spending: { remaining: 40000 } });
  });
});
