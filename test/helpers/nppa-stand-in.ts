import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { decryptData, sign } from '../../src/compliance/nppa-crypto.js';
import type { Clock } from '../../src/lib/clock.js';

/**
 * A local stand-in for the national anti-addiction system (nppa.md): checks headers, the
 * signature, decrypts, applies the 180 s rule and the 10 requests/s per game limit, records
 * every request and accepted item, and answers scripted errors on demand.
 */
export interface StandInItem {
  no: number;
  si: string;
  bt: number;
  ot: number;
  ct: number;
  di?: string;
  pi?: string;
}

export interface StandInRequest {
  /** Real receive time (ms, monotonic): what the rate limit is about. */
  at: number;
  appId: string;
  path: string;
  timestamps: number;
  items: StandInItem[];
  answer: { errcode: number; errmsg: string; data?: unknown };
}

export interface Answer {
  errcode: number;
  errmsg: string;
  data?: unknown;
}

export interface StandIn {
  url: string;
  requests: StandInRequest[];
  /** Items accepted (errcode 0, not listed as failed), with their app id. */
  accepted: (StandInItem & { appId: string; timestamps: number })[];
  /** Broken rules seen (time window, rate limit, format, a logout timed before its login): must stay empty. */
  violations: string[];
  /**
   * The next requests (after verification) get these answers instead of success. 'no-json' is
   * a 502 HTML page; 'endless' a 200 JSON success whose body never ends (up to 64 MiB).
   */
  queue: (Answer | Fault)[];
  /** Bytes of 'endless' answers written before the client closed the connection, per answer. */
  endlessWritten: number[];
  /** While set, every request of that app id is answered with this. */
  hold: Map<string, Answer>;
  /** Per-item faults: return an error to refuse the item. */
  itemFault: ((item: StandInItem, appId: string) => { errcode: number; errmsg: string } | null) | null;
  /** Awaited before each answer is written (the request already recorded). */
  beforeAnswer: ((appId: string) => Promise<void>) | null;
  addApp(app: { appId: string; bizId: string; secretKey: string }): void;
  close(): Promise<void>;
}

const MAX_PER_SECOND = 10;

type Fault = 'no-json' | 'endless';

export async function startNppaStandIn(opts: { clock?: Clock } = {}): Promise<StandIn> {
  const clock = opts.clock ?? { now: () => Date.now() };
  const apps = new Map<string, { bizId: string; secretKey: string }>();
  const recent = new Map<string, number[]>();
  const s: StandIn = {
    url: '',
    close: async () => {},
    requests: [],
    accepted: [],
    violations: [],
    queue: [],
    endlessWritten: [],
    hold: new Map(),
    itemFault: null,
    beforeAnswer: null,
    addApp: (a) => apps.set(a.appId, { bizId: a.bizId, secretKey: a.secretKey }),
  };

  // A session's accepted login and logout times, whatever order they came in: a logout timed
  // before its login would make the national system's play time of the session wrong.
  const sessions = new Map<string, { login?: number; logout?: number }>();
  const checkSessionOrder = (key: string, it: StandInItem) => {
    const seen = sessions.get(key) ?? {};
    sessions.set(key, seen);
    if (it.bt === 1) seen.login = it.ot;
    else seen.logout = it.ot;
    if (seen.login !== undefined && seen.logout !== undefined && seen.logout < seen.login) {
      s.violations.push(`session order: ${key} logout ot ${seen.logout} before login ot ${seen.login}`);
    }
  };

  const handle = (req: http.IncomingMessage, raw: string): Answer | Fault => {
    const at = performance.now();
    const u = new URL(req.url ?? '/', 'http://x');
    if (req.method !== 'POST') return { errcode: 1003, errmsg: 'wrong method' };
    if (u.pathname !== '/behavior/collection/loginout' && !/^\/test\/collection\/loginout\/[^/]+$/.test(u.pathname)) {
      return { errcode: 1002, errmsg: 'not found' };
    }
    const h = (n: string) => req.headers[n.toLowerCase()] as string | undefined;
    const appId = h('appId');
    const bizId = h('bizId');
    const ts = h('timestamps');
    const signature = h('sign');
    if (!appId || !bizId || !ts || !signature || h('content-type') !== 'application/json; charset=utf-8') {
      s.violations.push(`headers missing: ${JSON.stringify(req.headers)}`);
      return { errcode: 1004, errmsg: 'header missing' };
    }
    const app = apps.get(appId);
    if (!app || app.bizId !== bizId) return { errcode: 1008, errmsg: 'identity invalid' };
    const expected = sign(app.secretKey, { ...Object.fromEntries(u.searchParams), appId, bizId, timestamps: ts }, raw);
    if (expected !== signature) {
      s.violations.push('bad signature');
      return { errcode: 1011, errmsg: 'identity check failed' };
    }
    // The rate limit counts every signed request of the game, whatever follows.
    const times = (recent.get(appId) ?? []).filter((t) => t > at - 1000);
    times.push(at);
    recent.set(appId, times);
    if (times.length > MAX_PER_SECOND) {
      s.violations.push(`rate: ${times.length} requests of ${appId} within 1 s`);
      return { errcode: 1006, errmsg: 'over rate limit' };
    }
    const tsNum = Number(ts);
    if (Math.abs(clock.now() - tsNum) > 60_000) return { errcode: 1007, errmsg: 'request expired' };
    let items: StandInItem[];
    try {
      const data = (JSON.parse(raw) as { data: string }).data;
      items = (JSON.parse(decryptData(app.secretKey, data)) as { collections: StandInItem[] }).collections;
    } catch {
      s.violations.push('undecryptable body');
      return { errcode: 1012, errmsg: 'message check failed' };
    }
    const record: StandInRequest = { at, appId, path: u.pathname, timestamps: tsNum, items, answer: { errcode: 0, errmsg: 'OK' } };
    s.requests.push(record);
    const answer = ((): Answer | Fault => {
      const held = s.hold.get(appId);
      if (held) return held;
      const queued = s.queue.shift();
      if (queued) return queued;
      if (!Array.isArray(items) || items.length === 0) return { errcode: 3002, errmsg: 'empty' };
      if (items.length > 128) return { errcode: 3003, errmsg: 'too many items' };
      const results: { no: number; errcode: number; errmsg: string }[] = [];
      items.forEach((it, i) => {
        const fail = (errcode: number, errmsg: string) => {
          results.push({ no: it.no, errcode, errmsg });
        };
        if (it.no !== i + 1) return fail(3004, 'bad no');
        if (typeof it.si !== 'string' || it.si.length === 0 || it.si.length > 32) return fail(3004, 'bad si');
        if (it.bt !== 0 && it.bt !== 1) return fail(3007, 'bad bt');
        if (it.ct === 0 && (typeof it.pi !== 'string' || it.pi.length !== 38)) return fail(it.pi ? 3010 : 3008, 'pi');
        if (it.ct === 2 && (typeof it.di !== 'string' || it.di.length === 0 || it.di.length > 32)) return fail(3009, 'di missing');
        if (it.ct !== 0 && it.ct !== 2) return fail(3006, 'bad ct');
        const injected = s.itemFault?.(it, appId);
        if (injected) return fail(injected.errcode, injected.errmsg);
      });
      // The 180 s rule applies to the batch: earliest less than 180 s before timestamps, latest not after.
      const ots = items.map((i) => i.ot * 1000);
      if (tsNum - Math.min(...ots) >= 180_000 || Math.max(...ots) > tsNum) {
        s.violations.push(`time window: ots ${Math.min(...ots)}..${Math.max(...ots)} timestamps ${tsNum}`);
        for (const it of items) if (!results.some((r) => r.no === it.no)) results.push({ no: it.no, errcode: 3005, errmsg: 'bad time' });
      }
      for (const it of items) {
        if (results.some((r) => r.no === it.no)) continue;
        s.accepted.push({ ...it, appId, timestamps: tsNum });
        checkSessionOrder(`${appId}/${it.si}`, it);
      }
      return { errcode: 0, errmsg: 'OK', data: results.length ? { results } : null };
    })();
    if (typeof answer !== 'string') record.answer = answer;
    return answer;
  };

  const server = http.createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', async () => {
      const answer = handle(req, Buffer.concat(chunks).toString('utf8'));
      await s.beforeAnswer?.(String(req.headers.appid ?? ''));
      if (answer === 'no-json') {
        res.writeHead(502, { 'content-type': 'text/html' }).end('<html>bad gateway</html>');
        return;
      }
      if (answer === 'endless') return void writeEndless(res).then((n) => s.endlessWritten.push(n));
      res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify(answer));
    });
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  const port = (server.address() as AddressInfo).port;
  s.url = `http://127.0.0.1:${port}`;
  s.close = () =>
    new Promise<void>((r) => {
      server.closeAllConnections();
      server.close(() => r());
    });
  return s;
}

/** A JSON success padded without end, written as fast as the client reads, until it hangs up. */
async function writeEndless(res: http.ServerResponse): Promise<number> {
  const chunk = Buffer.alloc(64 * 1024, 'x');
  let written = 0;
  let closed = false;
  res.on('close', () => (closed = true));
  res.writeHead(200, { 'content-type': 'application/json' });
  res.write('{"errcode":0,"errmsg":"OK","pad":"');
  while (!closed && written < 64 * 1024 * 1024) {
    written += chunk.length;
    if (!res.write(chunk)) await drainedOrClosed(res);
  }
  if (!closed) res.end('"}');
  return written;
}

function drainedOrClosed(res: http.ServerResponse): Promise<void> {
  return new Promise((resolve) => {
    const done = () => {
      res.off('drain', done).off('close', done);
      resolve();
    };
    if (res.destroyed) return resolve();
    res.on('drain', done).on('close', done);
  });
}

/** Highest number of requests of one app id inside any 1-second window (counting, not timing). */
export function maxPerSecond(requests: StandInRequest[], appId: string): number {
  const times = requests.filter((r) => r.appId === appId).map((r) => r.at).sort((a, b) => a - b);
  let best = 0;
  let lo = 0;
  for (let hi = 0; hi < times.length; hi++) {
    while ((times[hi] as number) - (times[lo] as number) >= 1000) lo++;
    best = Math.max(best, hi - lo + 1);
  }
  return best;
}
