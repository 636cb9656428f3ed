import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import type { FastifyInstance } from 'fastify';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createFastify } from '../src/http/app.js';
import { registerConsoleRoutes, resolveInside } from '../src/http/console.js';
import { createLogger } from '../src/logger.js';

// The static-file route of the web console, over a real Fastify pipeline and a real folder.
function appFor(dir: string): FastifyInstance {
  const app = createFastify({
    logger: createLogger('silent'),
    tls: null,
    hooks: { isDraining: () => false, authenticate: async () => {} },
  });
  registerConsoleRoutes(app, { dir });
  return app;
}

describe('console static files', () => {
  let root: string;
  let dist: string;
  let app: FastifyInstance;

  beforeAll(async () => {
    root = mkdtempSync(path.join(os.tmpdir(), 'console-static-'));
    dist = path.join(root, 'dist');
    mkdirSync(path.join(dist, 'assets'), { recursive: true });
    writeFileSync(path.join(dist, 'index.html'), '<!doctype html><title>console</title>');
    writeFileSync(path.join(dist, 'assets', 'app-1.js'), 'console.log(1)');
    writeFileSync(path.join(dist, 'assets', 'app-1.css'), 'body{}');
    writeFileSync(path.join(dist, 'assets', 'logo.svg'), '<svg/>');
    writeFileSync(path.join(root, 'secret.txt'), 'outside');
    app = appFor(dist);
    await app.ready();
  });
  afterAll(async () => {
    await app.close();
    rmSync(root, { recursive: true, force: true });
  });

  it('redirects /console to /console/', async () => {
    const r = await app.inject({ method: 'GET', url: '/console' });
    expect(r.statusCode).toBe(302);
    expect(r.headers.location).toBe('/console/');
  });

  it('serves index.html at /console/ with a strict CSP and no caching', async () => {
    const r = await app.inject({ method: 'GET', url: '/console/' });
    expect(r.statusCode).toBe(200);
    expect(r.headers['content-type']).toBe('text/html; charset=utf-8');
    expect(r.headers['cache-control']).toBe('no-cache');
    expect(r.headers['content-security-policy']).toContain("default-src 'self'");
    expect(r.headers['x-content-type-options']).toBe('nosniff');
    expect(r.body).toContain('<title>console</title>');
  });

  it.each([
    ['assets/app-1.js', 'text/javascript; charset=utf-8'],
    ['assets/app-1.css', 'text/css; charset=utf-8'],
    ['assets/logo.svg', 'image/svg+xml'],
  ])('serves %s as %s, cached for good', async (file, type) => {
    const r = await app.inject({ method: 'GET', url: `/console/${file}` });
    expect(r.statusCode).toBe(200);
    expect(r.headers['content-type']).toBe(type);
    expect(r.headers['cache-control']).toContain('immutable');
  });

  it.each(['/console/orders', '/console/orders/ord_123', '/console/games/g1?x=1', '/console/games/com.example.demo', '/console/partners/partner.cn'])('falls back to index.html for the client route %s', async (url) => {
    const r = await app.inject({ method: 'GET', url });
    expect(r.statusCode).toBe(200);
    expect(r.headers['content-type']).toBe('text/html; charset=utf-8');
    expect(r.body).toContain('<title>console</title>');
  });

  it('answers a missing asset with 404 ErrorResponse, not index.html', async () => {
    const r = await app.inject({ method: 'GET', url: '/console/assets/missing.js' });
    expect(r.statusCode).toBe(404);
    expect(r.json()).toEqual({ error: 'not_found', message: 'no console file at /console/assets/missing.js' });
    expect((await app.inject({ method: 'GET', url: '/console/missing.png' })).statusCode).toBe(404);
    expect((await app.inject({ method: 'GET', url: '/console/assets/chunk' })).statusCode).toBe(404);
  });

  it.each(['/console/../secret.txt', '/console/%2e%2e/secret.txt', '/console/assets/%2e%2e/%2e%2e/secret.txt', '/console/..%2fsecret.txt', '/console/..%5csecret.txt'])(
    'never serves a file outside the console folder: %s',
    async (url) => {
      const r = await app.inject({ method: 'GET', url });
      expect(r.body).not.toContain('outside');
      expect([200, 404]).toContain(r.statusCode);
      if (r.statusCode === 200) expect(r.body).toContain('<title>console</title>');
    },
  );

  it('resolveInside refuses parent segments, NUL and backslashes', () => {
    expect(resolveInside(dist, '../secret.txt')).toBeNull();
    expect(resolveInside(dist, 'assets/../../secret.txt')).toBeNull();
    expect(resolveInside(dist, 'a\0b')).toBeNull();
    expect(resolveInside(dist, '..\\secret.txt')).toBeNull();
    expect(resolveInside(dist, 'assets/./app-1.js')).toBe(path.join(dist, 'assets', 'app-1.js'));
  });

  it('answers 404 ErrorResponse saying how to build when the console is not built', async () => {
    const empty = mkdtempSync(path.join(os.tmpdir(), 'console-empty-'));
    const bare = appFor(path.join(empty, 'console'));
    try {
      for (const url of ['/console/', '/console/orders', '/console/assets/app.js']) {
        const r = await bare.inject({ method: 'GET', url });
        expect(r.statusCode).toBe(404);
        expect(r.headers['content-type']).toContain('application/json');
        const body = r.json();
        expect(body.error).toBe('not_found');
        expect(body.message).toContain('npm run build');
      }
    } finally {
      await bare.close();
      rmSync(empty, { recursive: true, force: true });
    }
  });

  it('answers HEAD like GET without a body', async () => {
    const r = await app.inject({ method: 'HEAD', url: '/console/' });
    expect(r.statusCode).toBe(200);
    expect(r.body).toBe('');
  });
});
