import { Validator } from '@seriousme/openapi-schema-validator';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { escapeHtml, renderDocsPage, type OpenApiDocument } from '../src/apidocs/render.js';
import { listRoutes, type RouteEntry } from '../src/http/route-table.js';
import { startService, type TestService } from './helpers/service.js';

// The OpenAPI document and the /docs page, checked against the routes the service really
// registered: endpoints added later (other domains) are covered without touching this file.
let t: TestService;
let doc: any;
let routes: RouteEntry[];
const BASE = 'https://pay.example.com/combo';

const openApiPath = (url: string) => url.replace(/:([A-Za-z0-9_]+)/g, '{$1}').replace(/\*/g, '{*}');
const isHidden = (r: RouteEntry) => (r.schema as { hide?: boolean } | undefined)?.hide === true;
const SECURITY: Record<string, unknown[]> = {
  game: [{ gameSignature: [] }],
  partner: [{ partnerSignature: [] }],
  admin: [{ adminBearer: [] }],
  client: [],
  // Payment providers' callbacks: each checks its provider's own signature (payments.md 4).
  provider: [],
  none: [],
};

beforeAll(async () => {
  t = await startService({ env: { PUBLIC_BASE_URL: BASE } });
  const res = await fetch(`${t.url}/openapi.json`);
  expect(res.status).toBe(200);
  expect(res.headers.get('content-type')).toMatch(/^application\/json/);
  doc = await res.json();
  routes = [...listRoutes(t.service.app)];
});
afterAll(() => t?.stop());

describe('GET /openapi.json', () => {
  it('is a valid OpenAPI 3.1 document', async () => {
    const validator = new Validator();
    const result = await validator.validate(structuredClone(doc));
    expect(result.errors ?? []).toEqual([]);
    expect(result.valid).toBe(true);
    expect(validator.version).toBe('3.1');
    expect(doc.openapi).toBe('3.1.0');
  });

  it('names the server from PUBLIC_BASE_URL and declares the three security schemes', () => {
    expect(doc.servers).toEqual([{ url: BASE }]);
    expect(doc.components.securitySchemes).toMatchObject({
      gameSignature: { type: 'apiKey', in: 'header', name: 'Authorization' },
      partnerSignature: { type: 'apiKey', in: 'header', name: 'Authorization' },
      adminBearer: { type: 'http', scheme: 'bearer' },
    });
    expect(doc.components.securitySchemes.gameSignature.description).toContain('SEAYOO-HMAC-SHA256');
    expect(doc.components.securitySchemes.gameSignature.description).toContain('PROTOCOL 1');
  });

  it('has every registered route that is not hidden, with its security and every declared response', () => {
    const visible = routes.filter((r) => !isHidden(r));
    expect(visible.length).toBeGreaterThan(10);
    for (const r of visible) {
      const op = doc.paths[openApiPath(r.url)]?.[r.method.toLowerCase()];
      expect(op, `${r.method} ${r.url} is missing`).toBeDefined();
      expect(op.security, `${r.method} ${r.url} security`).toEqual(SECURITY[r.auth]);
      const declared = Object.keys((r.schema?.response as Record<string, unknown>) ?? {});
      expect(Object.keys(op.responses).sort(), `${r.method} ${r.url} responses`).toEqual(declared.sort());
      for (const status of declared.filter((s) => Number(s) >= 400)) {
        const response = op.responses[status];
        // The checkout page is for people: its error is an HTML page, documented as such.
        if (response.content['text/html'] && r.url.startsWith('/checkout/')) continue;
        expect(response.content['application/json'].schema, `${r.method} ${r.url} ${status}`).toEqual({ $ref: '#/components/schemas/ErrorResponse' });
        expect(response['x-error-codes'].length, `${r.method} ${r.url} ${status} codes`).toBeGreaterThan(0);
      }
    }
  });

  it('leaves out hidden routes (the /v3 SDK aliases) and nothing else', () => {
    const hidden = routes.filter(isHidden);
    expect(hidden.some((r) => r.url.startsWith('/v3/server/'))).toBe(true);
    for (const r of hidden) {
      const sameOperationVisible = routes.some((o) => !isHidden(o) && o.url === r.url && o.method === r.method);
      if (!sameOperationVisible) expect(doc.paths[openApiPath(r.url)]?.[r.method.toLowerCase()], `${r.method} ${r.url}`).toBeUndefined();
    }
    const operations = Object.values(doc.paths as Record<string, object>).reduce<number>((n, item) => n + Object.keys(item).length, 0);
    expect(operations).toBe(new Set(routes.filter((r) => !isHidden(r)).map((r) => `${r.method} ${r.url}`)).size);
  });

  it('every route declares tags and response schemas (the source of the document)', () => {
    for (const r of routes) {
      expect((r.schema?.tags as string[] | undefined)?.length, `${r.method} ${r.url} tags`).toBeGreaterThan(0);
      expect(r.schema?.response, `${r.method} ${r.url} response`).toBeDefined();
    }
  });

  it('every operation lists what any route can answer: a body refused (400, 408, 413, 415), another method (405), an Expect refused (417), 500 and 503', () => {
    for (const [path, ops] of Object.entries(doc.paths as Record<string, Record<string, any>>)) {
      for (const [method, op] of Object.entries(ops)) {
        expect(Object.keys(op.responses), `${method} ${path}`).toEqual(expect.arrayContaining(['400', '405', '408', '413', '415', '417', '500', '503']));
        expect(op.responses['408']['x-error-codes'], `${method} ${path}`).toEqual(['invalid_request']);
        expect(op.responses['417']['x-error-codes'], `${method} ${path}`).toEqual(['invalid_request']);
      }
    }
  });

  it('marks a request body optional exactly where the service takes none as {} (no required field)', () => {
    const required = (path: string, method: string) => doc.paths[path][method].requestBody?.required;
    expect(required('/admin/v1/games/{game_id}/keys', 'post')).toBe(false);
    expect(required('/admin/v1/games/{game_id}', 'patch')).toBe(false);
    expect(required('/admin/v1/orders/{order_id}/refund', 'post')).toBe(false);
    expect(required('/v1/server/create-order', 'post')).toBe(true);
    expect(required('/admin/v1/games', 'post')).toBe(true);
    expect(required('/v1/server/enter-game', 'post')).toBe(true);
  });

  it('documents /metrics as the Prometheus text format it is served in', async () => {
    const documented = Object.keys(doc.paths['/metrics'].get.responses['200'].content);
    const res = await fetch(`${t.url}/metrics`);
    expect(res.status).toBe(200);
    expect(documented).toEqual([res.headers.get('content-type')]);
  });

  it('carries the validation rules of the TypeBox schemas and the per-caller 401 code', () => {
    const create = doc.paths['/admin/v1/games'].post;
    const body = create.requestBody.content['application/json'].schema;
    expect(body.required).toEqual(expect.arrayContaining(['game_id', 'name']));
    expect(body.properties.order_ttl_seconds).toMatchObject({ type: 'integer', minimum: 60, maximum: 2_592_000 });
    expect(create.responses['401']['x-error-codes']).toEqual(['unauthorized']);
    const order = doc.paths['/v1/server/create-order'].post;
    expect(order.responses['401']['x-error-codes']).toEqual(['invalid_signature']);
    expect(order.responses['403']['x-error-codes']).toContain('game_iap_disabled');
    expect(order.responses['403']['x-error-codes']).not.toContain('partner_disabled');
    const params = doc.paths['/admin/v1/games/{game_id}/products/{product_id}'].put.parameters;
    expect(params.map((p: { name: string; in: string }) => `${p.in}:${p.name}`).sort()).toEqual(['path:game_id', 'path:product_id']);
  });
});

describe('GET /docs', () => {
  it('is one self-contained HTML page listing every documented operation', async () => {
    const res = await fetch(`${t.url}/docs`);
    expect(res.status).toBe(200);
    expect(res.headers.get('content-type')).toBe('text/html; charset=utf-8');
    expect(res.headers.get('content-security-policy')).toContain("default-src 'none'");
    const html = await res.text();
    expect(html).not.toMatch(/<script|<link|src=|https?:\/\/(?!pay\.example\.com)/i);
    for (const [path, item] of Object.entries(doc.paths as Record<string, object>)) {
      for (const method of Object.keys(item)) {
        expect(html, `${method} ${path}`).toContain(`<span class="m ${method}">${method.toUpperCase()}</span> <code>${escapeHtml(path)}</code>`);
      }
    }
    expect(html).toContain('<code>invalid_signature</code>');
    expect(html).toContain('<code class="n">order_ttl_seconds</code>');
  });

  it('escapes everything taken from the document', () => {
    const evil = '<script>alert(1)</script>"\'&';
    const page = renderDocsPage({
      info: { title: evil, version: evil, description: `\`${evil}\`` },
      servers: [{ url: evil }],
      components: { securitySchemes: { [evil]: { description: evil } }, schemas: {} },
      paths: {
        [`/x/${evil}`]: {
          get: {
            tags: [evil],
            summary: evil,
            parameters: [{ name: evil, in: 'query', schema: { type: 'string', pattern: evil } }],
            requestBody: { content: { 'application/json': { schema: { type: 'object', properties: { [evil]: { type: 'string', description: evil, enum: [evil] } } } } } },
            responses: { '400': { description: evil, 'x-error-codes': [evil] } as never },
            security: [{ [evil]: [] }],
          },
        },
      },
    } as OpenApiDocument);
    expect(page).not.toContain('<script>');
    expect(page).not.toContain(`"'&`);
    expect(page).toContain('&#60;script&#62;alert(1)&#60;/script&#62;');
  });
});
