import { randomBytes } from 'node:crypto';
import { mkdtempSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import type pino from 'pino';
import { loadConfig } from '../../src/config/index.js';
import { createLogger } from '../../src/logger.js';
import { installProcessWide } from '../../src/process-wide.js';
import { createService, type Service } from '../../src/service.js';
import type { Clock } from '../../src/lib/clock.js';
import { authorizationHeader } from '../../src/signing/signer.js';
import { createTestDatabase, type TestDatabase } from './db.js';
import { NO_EVENT_LOOP_SHEDDING } from './spawn.js';

export const ADMIN_TOKEN = 'test-admin-token-0123456789';

export interface TestService {
  url: string;
  service: Service;
  db: TestDatabase;
  clock?: Clock;
  stop(): Promise<void>;
}

/** A real service on a random port over a fresh database of the suite's kind. */
export interface StartOptions {
  env?: Record<string, string>;
  clock?: Clock;
  db?: TestDatabase;
  /** The secrets key (default: random per service). */
  secretsKey?: Buffer;
  /** Where the JSON logs go (default: pino's stdout); LOG_LEVEL in env sets the level. */
  logDestination?: pino.DestinationStream;
  /** Runs after createService and before listen (e.g. to mount a test-only route). */
  beforeListen?: (service: Service) => void;
}

/** The secrets key of the first service started on each test database. */
const keysByDatabase = new Map<string, Buffer>();
function keyOf(url: string): Buffer {
  let key = keysByDatabase.get(url);
  if (!key) keysByDatabase.set(url, (key = randomBytes(32)));
  return key;
}

export async function startService(opts: StartOptions = {}): Promise<TestService> {
  const db = opts.db ?? (await createTestDatabase());
  const dataDir = mkdtempSync(path.join(os.tmpdir(), 'combo-data-'));
  const config = loadConfig({
    PORT: '0',
    HOST: '127.0.0.1',
    DATABASE_URL: db.url,
    ADMIN_TOKEN,
    DATA_DIR: dataDir,
    LOG_LEVEL: process.env.TEST_LOG_LEVEL ?? 'silent',
    ALLOW_PRIVATE_NOTIFY_URLS: '1',
    // Every test client is 127.0.0.1: tests of the per-IP limit set their own rate.
    CLIENT_RATE_LIMIT_PER_SECOND: '1000000',
    // The same goes for wrong admin tokens (every route's security suite sends some): the limit
    // is on, out of reach; the tests of it set their own.
    ADMIN_AUTH_FAILURES_PER_MINUTE: '1000000',
    // And one address may hold every in-progress place: the tests of the per-client share (and
    // of MAX_INFLIGHT_REQUESTS, whose floods all come from 127.0.0.1) set their own.
    MAX_INFLIGHT_PER_CLIENT_PERCENT: '100',
    // The service shares its event loop with the test and its clients (a headless browser's
    // driver among them) as well as the machine's cores with other test files (spawn.ts).
    ...NO_EVENT_LOOP_SHEDDING,
    ...opts.env,
  });
  installProcessWide();
  const service = await createService({
    config,
    logger: createLogger(config.logLevel, opts.logDestination),
    // Instances sharing a database (db given) must share the key that seals secrets at rest:
    // the one the first instance on it used, unless the test gives one (a service whose key
    // cannot open the stored secrets does not start).
    secretsKey: opts.secretsKey ?? config.secretsKey ?? keyOf(db.url),
    clock: opts.clock,
  });
  opts.beforeListen?.(service);
  const url = await service.listen();
  return {
    url,
    service,
    db,
    clock: opts.clock,
    async stop() {
      await service.stop();
      if (!opts.db) await db.drop();
    },
  };
}

export interface Answer<T = any> {
  status: number;
  headers: Headers;
  body: T;
  text: string;
}

async function answer(res: Response): Promise<Answer> {
  const text = await res.text();
  let body: unknown = undefined;
  if ((res.headers.get('content-type') ?? '').startsWith('application/json') && text) body = JSON.parse(text);
  return { status: res.status, headers: res.headers, body, text };
}

/** An operator API call with the admin bearer token. */
export async function admin(t: TestService, method: string, p: string, body?: unknown): Promise<Answer> {
  const res = await fetch(t.url + p, {
    method,
    headers: { authorization: `Bearer ${ADMIN_TOKEN}`, ...(body === undefined ? {} : { 'content-type': 'application/json' }) },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  return answer(res);
}

export interface TestGame {
  gameId: string;
  secret: string;
  keyId: string;
}

let seq = 0;
/**
 * Each test makes its own game (its own tenant), with one product `gem_60` (600 CNY minor
 * units). The sandbox channel is turned on (a new game has none): tests pay through it;
 * `sandbox_payments: false` in `settings` leaves the game without it.
 */
export async function createGame(t: TestService, settings: Record<string, unknown> = {}): Promise<TestGame> {
  const gameId = `g${process.pid}_${++seq}_${randomBytes(3).toString('hex')}`;
  const r = await admin(t, 'POST', '/admin/v1/games', { game_id: gameId, name: 'Test game', sandbox_payments: true, ...settings });
  if (r.status !== 201) throw new Error(`create game: ${r.status} ${r.text}`);
  const p = await admin(t, 'PUT', `/admin/v1/games/${gameId}/products/gem_60`, { name: '60 gems', price: 600, currency: 'CNY' });
  if (p.status !== 200) throw new Error(`put product: ${p.status} ${p.text}`);
  return { gameId, secret: r.body.secret_key, keyId: r.body.key_id };
}

/** A request signed as a game backend would sign it (the Combo SDK's algorithm). */
export async function signed(
  t: TestService,
  game: TestGame,
  method: string,
  uri: string,
  body?: string | Buffer | object,
  extraHeaders: Record<string, string> = {},
  nowMs?: number,
): Promise<Answer> {
  const raw = body === undefined ? '' : typeof body === 'string' || Buffer.isBuffer(body) ? body : JSON.stringify(body);
  const headers: Record<string, string> = {
    authorization: authorizationHeader({ kind: 'game', id: game.gameId }, game.secret, method, uri, raw, nowMs ?? t.clock?.now() ?? Date.now()),
    ...(body === undefined ? {} : { 'content-type': 'application/json' }),
    ...extraHeaders,
  };
  for (const [k, v] of Object.entries(headers)) if (v === '') delete headers[k];
  const res = await fetch(t.url + uri, { method, headers, body: body === undefined ? undefined : (raw as string) });
  return answer(res);
}

/**
 * An Authorization of `game` that passes every check of its headers (kind, time window, a known
 * game) with a signature that is wrong for any body but `{}`: one the service can only refuse
 * once it has the body.
 */
export function wrongSignature(game: TestGame, method: string, uri: string): string {
  return authorizationHeader({ kind: 'game', id: game.gameId }, game.secret, method, uri, '{}');
}

export function orderBody(overrides: Record<string, unknown> = {}): Record<string, unknown> {
  return {
    reference_id: `ref-${randomBytes(8).toString('hex')}`,
    combo_id: '1234567890',
    product_id: 'gem_60',
    platform: 'ios',
    notify_url: 'https://game.example.com/notify',
    ...overrides,
  };
}
