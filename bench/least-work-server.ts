import Database from 'better-sqlite3';
import Fastify, { type FastifyRequest } from 'fastify';
import { CreateOrderBody } from '../src/orders/schemas.js';
import { SessionReportBody } from '../src/sessions/schemas.js';
import { schemaCompiler } from '../src/http/validation.js';
import { EMPTY_BODY_SHA256, parseAuthorization, sha256Hex, signatureMatches } from '../src/signing/signer.js';

/**
 * A second reference point of the benchmark, beside the bare route: the least work each of the
 * three measured routes cannot do without, in a bare Fastify app. It checks the request's
 * signature (PROTOCOL 1, with the service's own signer) and then:
 * - enter-game: inserts the session into SQLite, durable before the answer (WAL,
 *   synchronous=NORMAL, concurrent inserts grouped into one transaction per event-loop turn);
 * - create-order: inserts the order the same way (one row, as the service writes it);
 * - query-binding: reads the binding and answers a constant role (a warm role cache).
 *
 * Nothing else: no hooks, trace ids, rate limits, metrics, load shedding, caller lookup or
 * purchase guard, and tables with their keys only (none of the listing indexes the operator
 * API needs at 10 million rows). Its ratio to the bare route shows what the ratio targets
 * leave for everything else on the machine at hand (docs/benchmarks.md, "What bounds each
 * route"). Secrets come from LEAST_GAME_SECRET and LEAST_PARTNER_SECRET.
 */
const gameSecret = process.env.LEAST_GAME_SECRET ?? '';
const partnerSecret = process.env.LEAST_PARTNER_SECRET ?? '';
const db = new Database(process.env.LEAST_DB ?? ':memory:');
db.pragma('journal_mode = WAL');
db.pragma('synchronous = NORMAL');
db.exec(`
  create table sessions (game_id text not null, session_id text not null, combo_id text not null,
    entered_at integer, created_at integer not null, primary key (game_id, session_id));
  create table orders (order_id integer primary key, game_id text not null, reference_id text not null,
    combo_id text not null, product_id text not null, meta text, created_at integer not null, unique (game_id, reference_id));
  create table bindings (game_id text, partner_id text, partner_user_id text, combo_id text, role_id text,
    primary key (game_id, partner_id, partner_user_id));`);
const insertSession = db.prepare('insert into sessions values (?, ?, ?, ?, ?) on conflict do nothing');
const insertOrder = db.prepare('insert into orders values (?, ?, ?, ?, ?, ?, ?)');
const findBinding = db.prepare('select combo_id, role_id from bindings where game_id = ? and partner_id = ? and partner_user_id = ?');
const insertBinding = db.prepare('insert into bindings values (?, ?, ?, ?, ?)');

// Group commit: the writes of one event-loop turn share one transaction; each answer waits for it.
let batch: { write: () => void; done: () => void }[] = [];
function durably(write: () => void): Promise<void> {
  return new Promise((done) => {
    if (batch.length === 0) setImmediate(commitBatch);
    batch.push({ write, done });
  });
}
function commitBatch(): void {
  const jobs = batch;
  batch = [];
  db.exec('begin immediate');
  for (const j of jobs) j.write();
  db.exec('commit');
  for (const j of jobs) j.done();
}

type Signed = FastifyRequest & { rawBody?: Buffer };
function verify(req: Signed, secret: string): string {
  const auth = parseAuthorization(req.headers.authorization);
  if (typeof auth === 'string') throw Object.assign(new Error(auth), { statusCode: 401 });
  const bodyHash = req.rawBody?.length ? sha256Hex(req.rawBody) : EMPTY_BODY_SHA256;
  if (!signatureMatches([secret], auth.signature, req.method, req.url, auth.timestamp, bodyHash)) {
    throw Object.assign(new Error('signature does not match'), { statusCode: 401 });
  }
  return auth.principal.id;
}

const app = Fastify({ logger: false });
app.setValidatorCompiler(schemaCompiler);
app.removeAllContentTypeParsers();
app.addContentTypeParser('application/json', { parseAs: 'buffer' }, (req, body, done) => {
  (req as Signed).rawBody = body as Buffer;
  try {
    done(null, JSON.parse((body as Buffer).toString('utf8')));
  } catch (e) {
    done(Object.assign(e as Error, { statusCode: 400 }));
  }
});

app.post('/v1/server/enter-game', { schema: { body: SessionReportBody } }, async (req) => {
  const game = verify(req, gameSecret);
  const { combo_id, session_id } = req.body as SessionReportBody;
  const now = Date.now();
  await durably(() => insertSession.run(game, session_id, combo_id, now, now));
  return {};
});

let lastOrder = 0;
app.post('/v1/server/create-order', { schema: { body: CreateOrderBody } }, async (req) => {
  const game = verify(req, gameSecret);
  const body = req.body as CreateOrderBody;
  const now = Date.now();
  const orderId = (lastOrder = Math.max(lastOrder + 1, now * 1000));
  await durably(() => insertOrder.run(orderId, game, body.reference_id, body.combo_id, body.product_id, JSON.stringify(body.meta ?? null), now));
  return { order_id: String(orderId), order_token: 'least-work', expires_at: now + 900_000 };
});

app.get('/v1/query-binding', async (req) => {
  const partner = verify(req, partnerSecret);
  const q = req.query as { game_id: string; partner_user_id: string };
  const b = findBinding.get(q.game_id, partner, q.partner_user_id) as { combo_id: string; role_id: string } | undefined;
  if (!b) throw Object.assign(new Error('binding not found'), { statusCode: 404 });
  return {
    combo_id: b.combo_id,
    role: { server_id: 1, server_name: 'S1', role_id: b.role_id, role_name: 'hero', role_level: 9, avatar_url: '', create_time: 1_700_000_000 },
  };
});

// The bench's one binding (LEAST_BINDING: game,partner,partner_user_id,combo_id,role_id).
if (process.env.LEAST_BINDING) insertBinding.run(...(process.env.LEAST_BINDING.split(',') as [string, string, string, string, string]));

const address = await app.listen({ port: 0, host: '127.0.0.1' });
process.stdout.write(`${JSON.stringify({ address })}\n`);
process.on('SIGTERM', () => app.close().then(() => process.exit(0)));
