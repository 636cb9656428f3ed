import { existsSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import type { FastifyInstance } from 'fastify';
import { Type } from 'typebox';
import { responses } from '../http/errors-schema.js';

/** The checkout client library's files (client/ of the package), by the name they are served under. */
const FILES = {
  'checkout.js': { file: 'checkout.js', type: 'text/javascript; charset=utf-8' },
  'checkout.d.ts': { file: 'checkout.d.ts', type: 'text/plain; charset=utf-8' },
} as const;

/** client/ of this package: found from this module's place (src/checkout or dist/src/checkout). */
export function clientLibraryDir(): string {
  let dir = path.dirname(fileURLToPath(import.meta.url));
  for (let i = 0; i < 6; i++) {
    if (existsSync(path.join(dir, 'package.json'))) return path.join(dir, 'client');
    dir = path.dirname(dir);
  }
  return path.resolve('client');
}

/**
 * The checkout client library for web and H5 games (client/checkout.js, an ES module, and its
 * types) at a stable URL, /sdk/v1/…: games import it from the service they pay through. Any
 * origin may load it (module scripts are fetched with CORS); it changes with the service, so
 * caches keep it for minutes only.
 */
export function registerSdkRoutes(app: FastifyInstance, dir = clientLibraryDir()): void {
  const bodies = new Map(Object.entries(FILES).map(([name, f]) => [name, { body: readFileSync(path.join(dir, f.file), 'utf8'), type: f.type }]));
  for (const [name, { body, type }] of bodies) {
    app.get(`/sdk/v1/${name}`, {
      config: { cors: true },
      schema: {
        tags: ['client'],
        summary: name.endsWith('.js') ? 'Checkout client library for web and H5 games (ES module)' : 'Types of the checkout client library (TypeScript declarations)',
        response: { ...responses({}, []), 200: { description: name, content: { [type.split(';')[0] as string]: { schema: Type.String() } } } },
      },
      handler: async (_req, reply) => {
        reply.headers({ 'content-type': type, 'cache-control': 'public, max-age=300', 'x-content-type-options': 'nosniff' });
        return body;
      },
    });
  }
}
