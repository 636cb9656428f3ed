import { Counter, Histogram, Registry } from 'prom-client';
import { describe, expect, it } from 'vitest';
import { RequestMetrics } from '../../src/observability/request-metrics.js';

const BOUNDS = [0.005, 0.01, 0.1];
const OBSERVED: [string, string, number, number][] = [
  ['POST', '/v1/server/create-order', 200, 0.005], // on a bound: counted in that bucket
  ['POST', '/v1/server/create-order', 200, 0.0051],
  ['POST', '/v1/server/create-order', 200, 0.1],
  ['POST', '/v1/server/create-order', 200, 3], // above every bound: +Inf only
  ['POST', '/v1/server/create-order', 400, 0.001],
  ['GET', '(unmatched)', 404, 0.002],
];

const lines = (text: string) => text.split('\n').filter(Boolean).sort();

describe('RequestMetrics', () => {
  it('writes the exposition prom-client writes for the same observations', async () => {
    const ours = new Registry();
    const metrics = new RequestMetrics(ours, BOUNDS);
    // The reference: prom-client's own Counter and Histogram, as the service used before.
    const theirs = new Registry();
    const labelNames = ['method', 'route', 'status'] as const;
    const count = new Counter({ name: 'combo_http_requests_total', help: 'HTTP requests answered, by route pattern and status', labelNames, registers: [theirs] });
    const latency = new Histogram({ name: 'combo_http_request_duration_seconds', help: 'HTTP request latency, by route pattern and status', labelNames, buckets: BOUNDS, registers: [theirs] });
    for (const [method, route, status, seconds] of OBSERVED) {
      metrics.observe(method, route, status, seconds);
      count.inc({ method, route, status: String(status) });
      latency.observe({ method, route, status: String(status) }, seconds);
    }
    for (const r of [ours, theirs]) r.setDefaultLabels({ node_id: '3' });
    expect(lines(await ours.metrics())).toEqual(lines(await theirs.metrics()));
    // getMetricsAsJSON: the same values, each with its labels whole (prom-client adds an empty exemplar).
    const json = (r: Registry) =>
      r.getMetricsAsJSON().then((ms) => ms.map((m) => ({ ...m, values: (m.values as { exemplar?: unknown }[]).map(({ exemplar: _, ...v }) => JSON.stringify(v)).sort() })));
    expect(await json(ours)).toEqual(await json(theirs));
  });

  it('counts cumulative buckets, sum and count per (method, route, status)', async () => {
    const registry = new Registry();
    const metrics = new RequestMetrics(registry, BOUNDS);
    for (const [method, route, status, seconds] of OBSERVED) metrics.observe(method, route, status, seconds);
    const text = await registry.metrics();
    const labels = 'method="POST",route="/v1/server/create-order",status="200"';
    expect(text).toContain(`combo_http_requests_total{${labels}} 4`);
    expect(text).toContain(`combo_http_request_duration_seconds_bucket{le="0.005",${labels}} 1`);
    expect(text).toContain(`combo_http_request_duration_seconds_bucket{le="0.01",${labels}} 2`);
    expect(text).toContain(`combo_http_request_duration_seconds_bucket{le="0.1",${labels}} 3`);
    expect(text).toContain(`combo_http_request_duration_seconds_bucket{le="+Inf",${labels}} 4`);
    expect(text).toContain(`combo_http_request_duration_seconds_sum{${labels}} ${0.005 + 0.0051 + 0.1 + 3}`);
    expect(text).toContain(`combo_http_request_duration_seconds_count{${labels}} 4`);
    expect(text).toContain('combo_http_requests_total{method="GET",route="(unmatched)",status="404"} 1');
  });

  it('starts again from zero after a registry reset', async () => {
    const registry = new Registry();
    const metrics = new RequestMetrics(registry, BOUNDS);
    metrics.observe('GET', '/healthz', 200, 0.001);
    registry.resetMetrics();
    expect(await registry.metrics()).not.toContain('/healthz');
    metrics.observe('GET', '/healthz', 200, 0.001);
    expect(await registry.metrics()).toContain('combo_http_requests_total{method="GET",route="/healthz",status="200"} 1');
  });
});
