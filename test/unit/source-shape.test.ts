/**
 * The shape of the source tree that docs/architecture.md describes, checked as text: files of a
 * readable size, a composition root that only composes, route handlers typed by their schemas,
 * worker threads from TypeScript modules, and console response types taken from the schemas.
 */
import { readdirSync, readFileSync } from 'node:fs';
import { join, relative } from 'node:path';
import { describe, expect, it } from 'vitest';

const root = join(import.meta.dirname, '..', '..');
const MAX_LINES = 400;

function filesUnder(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((e) => {
    const path = join(dir, e.name);
    if (e.isDirectory()) return filesUnder(path);
    return e.name.endsWith('.ts') ? [path] : [];
  });
}

const sources = filesUnder(join(root, 'src')).map((path) => ({ name: relative(root, path), text: readFileSync(path, 'utf8') }));

describe('the source tree', () => {
  it(`keeps every file in src/ under ${MAX_LINES} lines`, () => {
    const long = sources.filter((f) => f.text.split('\n').length > MAX_LINES).map((f) => `${f.name}: ${f.text.split('\n').length}`);
    expect(long).toEqual([]);
  });

  it('composes in src/service.ts: no store is built there (each domain factory builds its own)', () => {
    const service = sources.find((f) => f.name === join('src', 'service.ts'));
    expect(service).toBeDefined();
    expect(service?.text).not.toMatch(/from '\.\/[a-z-]+\/(?:[a-z-]+-)?store\.js'/);
    expect(service?.text).not.toMatch(/new [A-Za-z]+Store\(/);
  });

  it('gives route handlers their values typed by the schemas: no req.body/query/params casts in route files', () => {
    const casts = sources
      .filter((f) => /routes\.ts$/.test(f.name))
      .filter((f) => /\breq\.(?:body|query|params) as\b/.test(f.text))
      .map((f) => f.name);
    expect(casts).toEqual([]);
  });

  it('starts worker threads from TypeScript modules, never from code in a string', () => {
    expect(sources.filter((f) => /eval:\s*true/.test(f.text)).map((f) => f.name)).toEqual([]);
  });

  it('takes the console’s response types from the schemas (console/src/api.ts declares only its Page<T>)', () => {
    const api = readFileSync(join(root, 'console', 'src', 'api.ts'), 'utf8');
    const declared = [...api.matchAll(/^export interface (\w+)/gm)].map((m) => m[1]);
    expect(declared).toEqual(['Page']);
  });
});
