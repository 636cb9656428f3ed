import { existsSync } from 'node:fs';
import { readFile, stat } from 'node:fs/promises';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import type { FastifyReply } from 'fastify';
import { Errors } from '../errors.js';
import { responses } from './errors-schema.js';
import type { ApiApp } from './route-info.js';

const CONTENT_TYPES: Record<string, string> = {
  '.html': 'text/html; charset=utf-8',
  '.js': 'text/javascript; charset=utf-8',
  '.mjs': 'text/javascript; charset=utf-8',
  '.css': 'text/css; charset=utf-8',
  '.json': 'application/json; charset=utf-8',
  '.map': 'application/json; charset=utf-8',
  '.svg': 'image/svg+xml',
  '.png': 'image/png',
  '.ico': 'image/x-icon',
  '.woff2': 'font/woff2',
  '.txt': 'text/plain; charset=utf-8',
};

// The console talks only to this origin; nothing inline, no framing.
const SECURITY_HEADERS = {
  'content-security-policy':
    "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' data:; connect-src 'self'; frame-ancestors 'none'; base-uri 'none'; form-action 'none'",
  'x-content-type-options': 'nosniff',
  'referrer-policy': 'no-referrer',
};

/**
 * dist/console of this checkout: found from this module's place (src/http when run from
 * source, dist/src/http when compiled) by walking up to the folder holding package.json.
 */
export function defaultConsoleDir(): string {
  let dir = path.dirname(fileURLToPath(import.meta.url));
  for (let i = 0; i < 6; i++) {
    if (existsSync(path.join(dir, 'package.json'))) return path.join(dir, 'dist', 'console');
    dir = path.dirname(dir);
  }
  return path.resolve('dist', 'console');
}

/**
 * The web console (a built single-page app) at /console/. Files come from `dir`; a path
 * without a file extension is a client-side route and gets index.html.
 */
export function registerConsoleRoutes(app: ApiApp, opts: { dir: string }): void {
  const root = path.resolve(opts.dir);
  const schema = { tags: ['ops'], summary: 'The web console (static files)', hide: true, response: responses({}, [Errors.notFound]) };

  const redirect = { tags: ['ops'], summary: 'Redirects to /console/', hide: true, response: responses({}, []) };
  app.get('/console', { schema: redirect }, async (_req, reply) => reply.redirect('/console/', 302));
  app.get('/console/', { schema }, async (_req, reply) => sendFile(reply, root, 'index.html'));
  app.get<{ Params: { '*': string } }>('/console/*', { schema }, async (req, reply) => {
    const rel = req.params['*'];
    return sendFile(reply, root, rel === '' ? 'index.html' : rel);
  });
}

async function sendFile(reply: FastifyReply, root: string, rel: string): Promise<FastifyReply> {
  const indexFile = path.join(root, 'index.html');
  if (!existsSync(indexFile)) {
    throw Errors.notFound('the web console is not built: run `npm run build` (it writes dist/console)');
  }
  let file = resolveInside(root, rel);
  if (file === null) throw Errors.notFound(`no console file at /console/${rel}`);
  if (!(await isFile(file))) {
    // Client routes (/console/orders/ord_1, /console/games/com.example.demo: ids may hold a
    // dot) get the app; a missing asset (under assets/, or a file type the console serves) is
    // a real 404.
    if (rel.startsWith('assets/') || Object.hasOwn(CONTENT_TYPES, path.extname(file).toLowerCase())) throw Errors.notFound(`no console file at /console/${rel}`);
    file = indexFile;
  }
  const body = await readFile(file);
  const ext = path.extname(file).toLowerCase();
  // Vite names assets by content hash: they never change under one name.
  const cache = rel.startsWith('assets/') ? 'public, max-age=31536000, immutable' : 'no-cache';
  return reply
    .headers(SECURITY_HEADERS)
    .header('cache-control', cache)
    .type(CONTENT_TYPES[ext] ?? 'application/octet-stream')
    .send(body);
}

/** The file under root that rel names, or null when rel would leave root. */
export function resolveInside(root: string, rel: string): string | null {
  if (rel.includes('\0') || rel.includes('\\')) return null;
  const segments = rel.split('/');
  if (segments.some((s) => s === '..')) return null;
  const file = path.resolve(root, ...segments.filter((s) => s !== '' && s !== '.'));
  return file === root || file.startsWith(root + path.sep) ? file : null;
}

async function isFile(file: string): Promise<boolean> {
  try {
    return (await stat(file)).isFile();
  } catch {
    return false;
  }
}
