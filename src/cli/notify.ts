import { randomBytes } from 'node:crypto';
import { IdGenerator, prefixedId } from '../lib/ids.js';
import { OutboundClient } from '../lib/outbound.js';
import { notificationBody, type NotificationType } from '../notifications/outbox.js';
import type { OrderRow } from '../orders/store.js';
import { authorizationHeader } from '../signing/signer.js';
import { bool, CommandError, group, int, parse, str, UsageError, type Command, type Io, type Values } from './io.js';
import { keyValue } from './output.js';
import { secretOf } from './sign.js';
import { wireUrl } from '../lib/wire-url.js';
import { describeError } from '../notifications/sender.js';

const MAX_ANSWER_BYTES = 64 * 1024;

/** A made-up order in the shape the service stores, so the body is built by the real builder. */
function sampleOrder(gameId: string, url: string, v: Values): OrderRow {
  const ids = new IdGenerator();
  const now = Date.now();
  const quantity = int(v, 'quantity') ?? 1;
  return {
    order_id: ids.next(now),
    game_id: gameId,
    reference_id: str(v, 'reference-id') ?? `test-${randomBytes(6).toString('hex')}`,
    combo_id: str(v, 'combo-id') ?? '1000000000',
    product_id: str(v, 'product') ?? 'test_product',
    platform: 'ios',
    notify_url: url,
    quantity,
    meta: null,
    context: str(v, 'context') ?? null,
    amount: int(v, 'amount') ?? 100 * quantity,
    currency: str(v, 'currency') ?? 'CNY',
    status: 'paid',
    token_secret: '',
    is_sandbox: bool(v, 'sandbox') === false ? 0 : 1,
    late_payment: 0,
    created_at: now,
    expires_at: now + 1_800_000,
    updated_at: now,
    paid_at: now,
    delivered_at: null,
    expired_at: null,
    canceled_at: null,
    refunded_at: null,
  };
}

/**
 * Sends one signed sample notification (PROTOCOL 5) to a game's endpoint, the way the service
 * will, and shows what the endpoint answered: the integrator's check that their receiver
 * verifies signatures and acknowledges with a 2xx.
 */
async function test(args: string[], io: Io): Promise<number> {
  const { values, positionals } = parse(args, {
    game: { type: 'string' },
    secret: { type: 'string' },
    url: { type: 'string' },
    type: { type: 'string' },
    product: { type: 'string' },
    amount: { type: 'string' },
    currency: { type: 'string' },
    quantity: { type: 'string' },
    'combo-id': { type: 'string' },
    'reference-id': { type: 'string' },
    context: { type: 'string' },
    sandbox: { type: 'string' },
    timeout: { type: 'string' },
    json: { type: 'boolean' },
  });
  if (positionals.length) throw new UsageError(`unexpected argument "${positionals[0]}"`);
  const gameId = str(values, 'game');
  if (!gameId) throw new UsageError('--game is required');
  const secret = secretOf(values, io);
  const url = str(values, 'url');
  if (!url) throw new UsageError('--url is required (the game\'s notify URL)');
  let target: URL;
  try {
    // Sent and signed as the dispatcher sends them (| and ^ escaped: see lib/wire-url.ts).
    target = wireUrl(url);
  } catch {
    throw new UsageError(`--url must be an absolute http(s) URL (got "${url}")`);
  }
  const type = (str(values, 'type') ?? 'ship_order') as NotificationType;
  if (type !== 'ship_order' && type !== 'refund') throw new UsageError('--type must be ship_order or refund');
  const timeoutMs = (int(values, 'timeout') ?? 10) * 1000;

  const notificationId = prefixedId('ntf', new IdGenerator());
  const body = notificationBody(notificationId, type, sampleOrder(gameId, url, values));
  const authorization = authorizationHeader({ kind: 'game', id: gameId }, secret, 'POST', target.pathname + target.search, body);
  // The operator points this at their own test receivers, often on localhost: allowed here.
  const client = new OutboundClient({ blockPrivate: false });
  const started = performance.now();
  let answer;
  try {
    answer = await client.post(target.href, body, { 'content-type': 'application/json', authorization }, { timeoutMs, maxBytes: MAX_ANSWER_BYTES });
  } catch (e) {
    throw new CommandError(`POST ${url} failed: ${describeError(e, timeoutMs)}`);
  } finally {
    await client.close();
  }
  const latencyMs = Math.round(performance.now() - started);
  const delivered = answer.status >= 200 && answer.status <= 299;
  const text = answer.body.toString('utf8');
  if (values.json === true) {
    io.out(`${JSON.stringify({ url, notification_id: notificationId, request_body: JSON.parse(body), status: answer.status, delivered, latency_ms: latencyMs, response_body: text }, null, 2)}\n`);
  } else {
    io.out(`POST ${url}\n${body}\n\n`);
    io.out(keyValue({ status: answer.status, delivered: delivered ? 'yes (a 2xx acknowledges the notification)' : answer.status === 410 ? 'no: 410 Gone, the service would stop retrying (status gone)' : 'no: the service would retry', latency_ms: latencyMs, response_body: text + (answer.truncated ? '…' : '') }));
  }
  return delivered ? 0 : 1;
}

export const notifyCommand: Command = {
  name: 'notify',
  summary: "send a signed sample notification to a game's notify URL",
  help: `usage:
  combo-platform notify test --game G --secret SK --url NOTIFY_URL [--type ship_order|refund] [options]

  POSTs a sample notification (PROTOCOL 5) signed with the game's key, exactly as the service
  delivers them, and shows the receiver's status and body. Exits 0 when the receiver answered
  2xx (acknowledged), 1 otherwise. Nothing is stored; no order exists.
  --secret SK        the game's secret key (env COMBO_SECRET_KEY keeps it out of argv)
  --product P --amount MINOR --currency CUR --quantity N --combo-id ID --reference-id R --context S
                     fields of the sample order (defaults: test_product, 100, CNY, 1, ...)
  --sandbox BOOL     is_sandbox of a ship_order (default true)
  --timeout SEC      wait at most SEC seconds for the answer (default 10)
  --json             machine-readable result`,
  run: group({ test }),
};
