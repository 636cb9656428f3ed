/** The METRICS_TOKEN of the services the metrics tests start. */
export const METRICS_TOKEN = 'metrics-token-0123456789abcdef';

/** The samples of `name` in the exposition text: their labels and values. */
function samples(text: string, name: string): { labels: Record<string, string>; value: number }[] {
  const out: { labels: Record<string, string>; value: number }[] = [];
  for (const line of text.split('\n')) {
    const m = /^([a-zA-Z_:][\w:]*)(?:\{(.*)\})? (\S+)$/.exec(line);
    if (!m || m[1] !== name) continue;
    const labels = Object.fromEntries([...(m[2] ?? '').matchAll(/(\w+)="((?:[^"\\]|\\.)*)"/g)].map((x) => [x[1], x[2]])) as Record<string, string>;
    out.push({ labels, value: Number(m[3]) });
  }
  return out;
}

/** The value of one sample of the exposition text; labels must match exactly (in any order). */
export function sample(text: string, name: string, labels: Record<string, string> = {}): number | undefined {
  const want = JSON.stringify(Object.entries(labels).sort());
  return samples(text, name).find((s) => JSON.stringify(Object.entries(s.labels).sort()) === want)?.value;
}

/** The sum of the samples of `name` whose labels include `labels` (e.g. over every game_id). */
export function total(text: string, name: string, labels: Record<string, string> = {}): number {
  const matching = samples(text, name).filter((s) => Object.entries(labels).every(([k, v]) => s.labels[k] === v));
  return matching.reduce((sum, s) => sum + s.value, 0);
}
