import type { Registry } from 'prom-client';

/** One (method, route, status) series: its count, latency sum and per-bucket counts. */
interface Series {
  readonly labels: { method: string; route: string; status: string };
  count: number;
  sum: number;
  /** Observations per bucket, not cumulative: bucket i holds those in (bounds[i-1], bounds[i]]. */
  readonly buckets: Float64Array;
}

/** What prom-client's Registry reads of a metric (the shape its own Counter and Histogram have). */
interface ExportedMetric {
  readonly name: string;
  readonly help: string;
  readonly type: 'counter' | 'histogram';
  readonly aggregator: 'sum';
  get(): Promise<Exported>;
  getForPromString(): Promise<Exported>;
  reset(): void;
}

type Exported = { name: string; help: string; type: string; aggregator: 'sum'; values: ExportedValue[] };

interface ExportedValue {
  labels: Record<string, string | number>;
  /** Labels every line of a histogram series shares, written after `labels` (prom-client's own layout). */
  sharedLabels?: Record<string, string>;
  value: number;
  metricName?: string;
}

/**
 * The per-request HTTP metrics: `combo_http_requests_total` and
 * `combo_http_request_duration_seconds`, by method, route pattern and status.
 *
 * prom-client's labelled Counter and Histogram hash their label object on every observation
 * (and the histogram converts its bucket bound to a string key): a few percent of a signed
 * request's whole cost.
 * Here an observation is three Map lookups on strings and a number, and a few additions; the
 * exposition is built only when /metrics is scraped, in the format prom-client itself writes.
 */
export class RequestMetrics {
  /** route -> method -> status -> series. Routes are patterns (bounded); unmatched requests share one. */
  private readonly series = new Map<string, Map<string, Map<number, Series>>>();

  constructor(
    registry: Registry,
    private readonly bounds: readonly number[],
  ) {
    registry.registerMetric(this.exported('combo_http_requests_total', 'HTTP requests answered, by route pattern and status', 'counter') as never);
    registry.registerMetric(this.exported('combo_http_request_duration_seconds', 'HTTP request latency, by route pattern and status', 'histogram') as never);
  }

  observe(method: string, route: string, status: number, seconds: number): void {
    let byMethod = this.series.get(route);
    if (!byMethod) this.series.set(route, (byMethod = new Map()));
    let byStatus = byMethod.get(method);
    if (!byStatus) byMethod.set(method, (byStatus = new Map()));
    let s = byStatus.get(status);
    if (!s) {
      s = { labels: { method, route, status: String(status) }, count: 0, sum: 0, buckets: new Float64Array(this.bounds.length) };
      byStatus.set(status, s);
    }
    s.count++;
    s.sum += seconds;
    const bounds = this.bounds;
    for (let i = 0; i < bounds.length; i++) {
      if (seconds <= (bounds[i] as number)) {
        (s.buckets[i] as number)++;
        break;
      }
    }
  }

  private *all(): Generator<Series> {
    for (const byMethod of this.series.values()) for (const byStatus of byMethod.values()) yield* byStatus.values();
  }

  private exported(name: string, help: string, type: 'counter' | 'histogram'): ExportedMetric {
    const values = type === 'counter' ? () => this.counterValues() : () => this.histogramValues(name);
    return {
      name,
      help,
      type,
      aggregator: 'sum',
      // The text exposition reads getForPromString; get() (JSON) has each line's labels whole.
      getForPromString: async () => ({ name, help, type, aggregator: 'sum', values: values() }),
      get: async () => ({ name, help, type, aggregator: 'sum', values: values().map(({ labels, sharedLabels, ...v }) => ({ ...v, labels: { ...labels, ...sharedLabels } })) }),
      reset: () => this.series.clear(),
    };
  }

  private counterValues(): ExportedValue[] {
    return [...this.all()].map((s) => ({ labels: { ...s.labels }, value: s.count }));
  }

  /** Cumulative buckets, then +Inf, _sum and _count, laid out as prom-client's Histogram lays them out. */
  private histogramValues(name: string): ExportedValue[] {
    const out: ExportedValue[] = [];
    const bucket = `${name}_bucket`;
    for (const s of this.all()) {
      const shared = s.labels;
      let acc = 0;
      this.bounds.forEach((le, i) => {
        acc += s.buckets[i] as number;
        out.push({ labels: { le }, sharedLabels: shared, value: acc, metricName: bucket });
      });
      out.push({ labels: { le: '+Inf' }, sharedLabels: shared, value: s.count, metricName: bucket });
      out.push({ labels: {}, sharedLabels: shared, value: s.sum, metricName: `${name}_sum` });
      out.push({ labels: {}, sharedLabels: shared, value: s.count, metricName: `${name}_count` });
    }
    return out;
  }
}
