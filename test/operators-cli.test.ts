/** The CLI's `operators` and `api-keys` commands (docs/cli.md) against a real service. */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { runCli } from './helpers/cli.js';
import { call, PASSWORD } from './helpers/operators.js';
import { ADMIN_TOKEN, startService, type TestService } from './helpers/service.js';

let t: TestService;
beforeAll(async () => {
  t = await startService();
}, 180_000);
afterAll(async () => t?.stop());

const cli = (args: string[], token = ADMIN_TOKEN) => runCli(args, { COMBO_URL: t.url, ADMIN_TOKEN: token });

describe('combo-platform operators / api-keys', () => {
  it('invites the first owner with ADMIN_TOKEN; an API key made by the CLI works as its token; revoke ends it', async () => {
    const invited = await cli(['operators', 'invite', 'owner@studio.example', '--role', 'owner', '--json']);
    expect(invited.code, invited.stderr).toBe(0);
    const body = JSON.parse(invited.stdout);
    expect(body).toMatchObject({ email: 'owner@studio.example', name: 'owner', role: 'owner', status: 'invited' });
    expect((await call(t, 'POST', `/admin/v1/invitations/${body.invitation.invitation_token}`, {}, { password: PASSWORD })).status).toBe(200);
    const listed = await cli(['operators', 'list']);
    expect(listed.stdout).toMatch(/owner@studio\.example\s+owner\s+owner\s+.*active/);

    const created = await cli(['api-keys', 'create', 'nightly-export', '--role', 'viewer', '--games', 'g1,g2', '--expires-days', '30', '--json']);
    expect(created.code, created.stderr).toBe(0);
    const { api_key: key, key_id: keyId } = JSON.parse(created.stdout) as { api_key: string; key_id: string };
    expect(key).toMatch(/^ak_[A-Za-z0-9_-]{43}$/);
    const me = await cli(['api', 'GET', '/admin/v1/me', '--json'], key);
    expect(me.code, me.stderr).toBe(0);
    expect(JSON.parse(me.stdout)).toMatchObject({ kind: 'api_key', actor: 'api-key:nightly-export', role: 'viewer', games: ['g1', 'g2'] });
    expect((await cli(['api-keys', 'revoke', keyId])).stdout).toBe(`revoked API key ${keyId}\n`);
    expect((await call(t, 'GET', '/admin/v1/me', { authorization: `Bearer ${key}` })).status).toBe(401);
  }, 240_000);

  it('refuses a missing --role (exit 2)', async () => {
    expect((await cli(['operators', 'invite', 'x@studio.example'])).code).toBe(2);
  }, 60_000);
});
