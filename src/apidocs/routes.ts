import { Type } from 'typebox';
import { responses } from '../http/errors-schema.js';
import { renderDocsPage } from './render.js';
import type { ApiApp } from '../http/route-info.js';

/** GET /openapi.json (the document) and GET /docs (a readable, self-contained page of it). */
export function registerApiDocsRoutes(app: ApiApp): void {
  // Built once, on first request: every route is registered by then.
  let json: string | null = null;
  let html: string | null = null;
  const documentJson = () => (json ??= JSON.stringify(app.swagger()));

  app.get('/openapi.json', {
    schema: {
      tags: ['ops'],
      summary: 'This OpenAPI 3.1 document',
      response: responses({ 200: Type.Object({}, { additionalProperties: true, description: 'OpenAPI 3.1 document' }) }, []),
    },
    // A pre-serialised string is sent as is (the response schema only documents it).
    handler: async (_req, reply) => reply.type('application/json; charset=utf-8').send(documentJson()),
  });

  app.get('/docs', {
    schema: {
      tags: ['ops'],
      summary: 'API reference page (HTML)',
      response: { ...responses({}, []), 200: { description: 'HTML page', content: { 'text/html': { schema: Type.String() } } } },
    },
    handler: async (_req, reply) => {
      html ??= renderDocsPage(JSON.parse(documentJson()));
      return reply
        .type('text/html; charset=utf-8')
        .header('content-security-policy', "default-src 'none'; style-src 'unsafe-inline'; frame-ancestors 'none'")
        .header('x-content-type-options', 'nosniff')
        .send(html);
    },
  });
}
