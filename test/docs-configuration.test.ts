/**
 * docs/configuration.md against src/config/index.ts: every setting the configuration reads is
 * documented in one of the page's tables, every documented one is read, each documented integer
 * range is the one loadConfig enforces, and each documented integer default is the one in effect.
 */
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ConfigError, loadConfig, type Config } from '../src/config/index.js';
import { REPO_ROOT } from './helpers/spawn.js';

const DOC = 'docs/configuration.md';
const SOURCE = 'src/config/index.ts';

interface Row {
  name: string;
  line: number;
  default: string;
  values: string;
}

/** The settings documented: the backquoted names in the first cell of each table row. */
function documented(): Row[] {
  const rows: Row[] = [];
  readFileSync(path.join(REPO_ROOT, DOC), 'utf8')
    .split('\n')
    .forEach((text, i) => {
      const cells = /^\|(.*)\|$/.exec(text)?.[1]?.split('|').map((c) => c.trim());
      if (!cells || cells.length < 3) return;
      for (const m of cells[0]!.matchAll(/`([A-Z][A-Z0-9_]*)`/g)) rows.push({ name: m[1]!, line: i + 1, default: cells[1]!, values: cells[2]! });
    });
  return rows;
}

/**
 * The settings the configuration reads: every name loadConfig asks its environment for (it is
 * handed a recording environment), and every name the source reads as `env.NAME`,
 * `env['NAME']` or passes to a reader as `reader('NAME', ...)` (a read behind a condition the
 * recording run does not meet).
 */
function read(): Set<string> {
  const names = new Set<string>();
  const recording = new Proxy({} as Record<string, string | undefined>, {
    get: (_t, key) => {
      if (typeof key === 'string') names.add(key);
      return undefined;
    },
  });
  loadConfig(recording);
  const source = readFileSync(path.join(REPO_ROOT, SOURCE), 'utf8');
  for (const m of source.matchAll(/\benv(?:\.([A-Z][A-Z0-9_]*)|\[['"]([A-Z][A-Z0-9_]*)['"]\])|\b[a-zA-Z0-9]+\(\s*['"]([A-Z][A-Z0-9_]*)['"]/g)) names.add((m[1] ?? m[2] ?? m[3])!);
  return names;
}

let dir: string;
beforeAll(() => {
  dir = mkdtempSync(path.join(os.tmpdir(), 'combo-config-doc-'));
});
afterAll(() => rmSync(dir, { recursive: true, force: true }));

/** loadConfig with a fixed data directory and admin token (the generated one is random). */
function load(env: Record<string, string>): Config | string[] {
  try {
    return loadConfig({ DATA_DIR: dir, ADMIN_TOKEN: 'docs-configuration-test-token', ...env });
  } catch (e) {
    if (e instanceof ConfigError) return e.problems;
    throw e;
  }
}

describe(DOC, () => {
  const rows = documented();
  const names = read();

  it('documents every setting src/config/index.ts reads', () => {
    const docNames = new Set(rows.map((r) => r.name));
    const missing = [...names].filter((n) => !docNames.has(n)).map((n) => `${n} is read by ${SOURCE} but not documented in a table of ${DOC}`);
    expect(missing).toEqual([]);
  });

  it('documents only settings src/config/index.ts reads, each once', () => {
    const unknown = rows.filter((r) => !names.has(r.name)).map((r) => `${r.name} is documented in ${DOC}:${r.line} but ${SOURCE} never reads it`);
    expect(unknown).toEqual([]);
    const twice = rows.filter((r, i) => rows.findIndex((o) => o.name === r.name) !== i).map((r) => `${r.name} is documented twice (${DOC}:${r.line})`);
    expect(twice).toEqual([]);
  });

  it('each documented integer range a..b is the one enforced: b+1 (and a-1) are refused by name, a and b accepted', () => {
    const wrong: string[] = [];
    for (const r of rows) {
      const range = /^(\d+)\.\.(\d+)$/.exec(r.values);
      if (!range) continue;
      const [min, max] = [Number(range[1]), Number(range[2])];
      const refused = (v: number) => {
        const got = load({ [r.name]: String(v) });
        return Array.isArray(got) && got.includes(`${r.name} must be an integer from ${min} to ${max} (got "${v}")`);
      };
      const accepted = (v: number) => !Array.isArray(load({ [r.name]: String(v) }));
      if (!refused(max + 1)) wrong.push(`${r.name} (${DOC}:${r.line}): ${max + 1} is not refused as outside ${min}..${max}`);
      if (min > 0 && !refused(min - 1)) wrong.push(`${r.name} (${DOC}:${r.line}): ${min - 1} is not refused as outside ${min}..${max}`);
      if (!accepted(min) || !accepted(max)) wrong.push(`${r.name} (${DOC}:${r.line}): ${min} or ${max} is refused`);
    }
    expect(wrong).toEqual([]);
    expect(rows.filter((r) => /^\d+\.\.\d+$/.test(r.values)).length).toBeGreaterThan(25);
  });

  it('each documented integer default is the one in effect: setting it changes nothing', () => {
    const base = load({});
    expect(Array.isArray(base), String(base)).toBe(false);
    const wrong: string[] = [];
    for (const r of rows) {
      const def = /^`(\d+)`/.exec(r.default)?.[1];
      if (def === undefined) continue;
      const got = load({ [r.name]: def });
      try {
        expect(got).toEqual(base);
      } catch {
        wrong.push(`${r.name} (${DOC}:${r.line}): setting the documented default ${def} changes the configuration`);
      }
    }
    expect(wrong).toEqual([]);
  });

  it('finds the settings read only with others (TLS_KEY, SECRETS_KEY_PREVIOUS) and the rows naming two', () => {
    expect(names.has('PORT') && names.has('TLS_KEY') && names.has('SECRETS_KEY_PREVIOUS')).toBe(true);
    expect(rows.find((r) => r.name === 'TLS_KEY')).toMatchObject({ default: 'unset' });
  });
});
