import { spawnSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Receiver, until } from './helpers/receiver.js';
import { METRICS_TOKEN } from './helpers/metrics.js';
import { createGame, orderBody, signed, startService, type TestService } from './helpers/service.js';
import { UNDELIVERED } from '../src/observability/undelivered.js';

/** The shipped monitoring (deploy/prometheus/alerts.yml, deploy/grafana/combo-dashboard.json). */
const ROOT = path.resolve(import.meta.dirname, '..');
const RULES = path.join(ROOT, 'deploy/prometheus/alerts.yml');
const DASHBOARD = path.join(ROOT, 'deploy/grafana/combo-dashboard.json');

const PROMTOOL = process.env.PROMTOOL_PATH ?? 'promtool';
const havePromtool = spawnSync(PROMTOOL, ['--version']).status === 0;
if (!havePromtool && process.env.CI) throw new Error(`promtool is required in CI for the alert rules test (no ${PROMTOOL} on the PATH)`);
if (!havePromtool) console.warn(`*** alert rules check SKIPPED: no ${PROMTOOL} on the PATH (apt-get install prometheus) ***`);

/** Prometheus's own series for each scrape target, not one the service exports. */
const PROMETHEUS_SERIES = new Set(['up']);
const PROMQL_WORDS = new Set(['and', 'or', 'unless', 'by', 'without', 'on', 'ignoring', 'group_left', 'group_right', 'bool', 'offset', 'inf', 'nan']);

/**
 * The metric names a PromQL expression reads: identifiers that are not functions (followed by
 * `(`), keywords, label names (inside `{...}`, `by (...)`), strings or durations.
 */
export function metricNames(expr: string): string[] {
  const bare = expr
    .replace(/"(?:[^"\\]|\\.)*"/g, '""')
    .replace(/\{[^}]*\}/g, ' ')
    .replace(/\[[^\]]*\]/g, ' ')
    .replace(/\b(by|without|on|ignoring|group_left|group_right)\s*\([^)]*\)/g, ' ');
  const names = new Set<string>();
  for (const m of bare.matchAll(/([a-zA-Z_:][a-zA-Z0-9_:]*)(\s*\()?/g)) {
    const [, name, call] = m as unknown as [string, string, string | undefined];
    if (call || PROMQL_WORDS.has(name.toLowerCase())) continue;
    names.add(name);
  }
  return [...names];
}

/** Every PromQL expression of the alert rules (their `expr:` values, one line or a block). */
function ruleExpressions(): string[] {
  const lines = readFileSync(RULES, 'utf8').split('\n');
  const out: string[] = [];
  for (let i = 0; i < lines.length; i++) {
    const m = /^(\s*)expr:\s*(.*)$/.exec(lines[i] as string);
    if (!m) continue;
    if (m[2] !== '|') {
      out.push(m[2] as string);
      continue;
    }
    const block: string[] = [];
    while (i + 1 < lines.length && ((lines[i + 1] as string).startsWith(`${m[1]}  `) || (lines[i + 1] as string).trim() === '')) block.push(lines[++i] as string);
    out.push(block.join('\n'));
  }
  return out;
}

/** Every PromQL expression of the dashboard: panel targets and the game variable's query. */
function dashboardExpressions(): string[] {
  const d = JSON.parse(readFileSync(DASHBOARD, 'utf8')) as {
    panels: { targets?: { expr: string }[] }[];
    templating: { list: { query?: string | { query: string } }[] };
  };
  const exprs = d.panels.flatMap((p) => (p.targets ?? []).map((t) => t.expr));
  for (const v of d.templating.list) {
    const q = typeof v.query === 'object' ? v.query.query : v.query;
    const m = q ? /^label_values\(\s*([a-zA-Z_:][\w:]*)/.exec(q) : null;
    if (m) exprs.push(m[1] as string);
  }
  return exprs;
}

describe.skipIf(!havePromtool)('alert rules', () => {
  it('pass promtool check rules', () => {
    const r = spawnSync(PROMTOOL, ['check', 'rules', RULES], { encoding: 'utf8' });
    expect(r.status, `${r.stdout}\n${r.stderr}`).toBe(0);
    expect(r.stdout).toMatch(/SUCCESS: \d+ rules found/);
  });
});

describe('metrics the dashboard and the alert rules name', () => {
  let t: TestService;
  let receiver: Receiver;
  beforeAll(async () => {
    receiver = await new Receiver({ keys: new Map(), now: () => Date.now() }).start();
    t = await startService({ env: { METRICS_TOKEN, NOTIFY_POLL_INTERVAL_MS: '50' } });
  });
  afterAll(async () => {
    await t?.stop();
    await receiver?.close();
  });

  it('name only statuses the undelivered gauge has (failing among them)', () => {
    const statuses = new Set<string>();
    for (const e of [...ruleExpressions(), ...dashboardExpressions()]) {
      for (const m of e.matchAll(/combo_notifications_undelivered\{[^}]*\bstatus=~?"([^"]*)"/g)) for (const s of (m[1] as string).split('|')) statuses.add(s);
    }
    expect(statuses.has('failing')).toBe(true);
    expect([...statuses].filter((s) => !UNDELIVERED.includes(s as never))).toEqual([]);
  });

  it('reads PromQL names as expected', () => {
    expect(metricNames('sum by (game_id, result) (rate(combo_a_total{result="x", b=~"5.."}[5m])) / on (x) combo_b > bool 2 and up{job="j"}').sort()).toEqual(['combo_a_total', 'combo_b', 'up']);
    expect(metricNames('histogram_quantile(0.95, sum by (le) (rate(combo_c_bucket[5m])))')).toEqual(['combo_c_bucket']);
  });

  it('are all exported by the service after real traffic', async () => {
    // Traffic: an order paid and its notification delivered, a session report.
    const game = await createGame(t);
    const o = await signed(t, game, 'POST', '/v1/server/create-order', orderBody({ notify_url: `${receiver.url}/n` }));
    expect(o.status).toBe(200);
    const paid = await fetch(`${t.url}/v1/client/pay`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ order_token: o.body.order_token, channel: 'sandbox' }),
    });
    expect(paid.status).toBe(200);
    expect((await signed(t, game, 'POST', '/v1/server/enter-game', { combo_id: 'p1', session_id: 's1' })).status).toBe(200);
    await until('the notification is attempted', () => receiver.on('/n')[0]);

    const res = await fetch(`${t.url}/metrics`, { headers: { authorization: `Bearer ${METRICS_TOKEN}` } });
    expect(res.status).toBe(200);
    const text = await res.text();
    const exported = new Set([...text.matchAll(/^# TYPE (\S+) /gm)].map((m) => m[1] as string));
    // The per-game counters carry the game's id after its traffic.
    for (const name of ['combo_orders_created_total', 'combo_payments_total', 'combo_session_reports_total', 'combo_notification_attempts_total']) {
      expect(text).toMatch(new RegExp(`^${name}\\{[^}]*game_id="${game.gameId}"`, 'm'));
    }

    const named = new Map<string, string>();
    for (const [where, exprs] of [
      ['deploy/prometheus/alerts.yml', ruleExpressions()],
      ['deploy/grafana/combo-dashboard.json', dashboardExpressions()],
    ] as const) {
      expect(exprs.length, where).toBeGreaterThan(5);
      for (const e of exprs) for (const n of metricNames(e)) named.set(n, where);
    }
    const unknown = [...named]
      .map(([n, where]) => [n.replace(/_(bucket|sum|count)$/, ''), where] as const)
      .filter(([n]) => !PROMETHEUS_SERIES.has(n) && !exported.has(n));
    expect(unknown).toEqual([]);
    // Both files name the per-game series.
    expect([...named.keys()]).toEqual(expect.arrayContaining(['combo_notifications_undelivered', 'combo_notification_attempts_total', 'combo_ready']));
  });
});
