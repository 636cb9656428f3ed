/**
 * Renders the OpenAPI document as one self-contained HTML page (no scripts, no CDN, inline
 * CSS): endpoints grouped by tag with method, path, summary, authentication, parameters,
 * request and response schemas and error codes. Every value from the document is escaped.
 */

type Schema = {
  $ref?: string;
  type?: string | string[];
  properties?: Record<string, Schema>;
  required?: string[];
  items?: Schema;
  anyOf?: Schema[];
  oneOf?: Schema[];
  allOf?: Schema[];
  enum?: unknown[];
  const?: unknown;
  description?: string;
  [k: string]: unknown;
};
type Parameter = { name: string; in: string; required?: boolean; schema?: Schema; description?: string };
type Media = Record<string, { schema?: Schema }>;
type Response = { description?: string; content?: Media; 'x-error-codes'?: string[] };
type Operation = {
  summary?: string;
  description?: string;
  tags?: string[];
  parameters?: Parameter[];
  requestBody?: { required?: boolean; content?: Media };
  responses?: Record<string, Response>;
  security?: Array<Record<string, string[]>>;
};
export type OpenApiDocument = {
  info?: { title?: string; version?: string; description?: string };
  servers?: Array<{ url: string }>;
  paths?: Record<string, Record<string, Operation>>;
  components?: { schemas?: Record<string, Schema>; securitySchemes?: Record<string, { description?: string; type?: string }> };
};

const METHODS = ['get', 'post', 'put', 'patch', 'delete', 'head', 'options'];
const CONSTRAINTS = ['format', 'minLength', 'maxLength', 'minimum', 'maximum', 'exclusiveMinimum', 'exclusiveMaximum', 'pattern', 'minItems', 'maxItems', 'default'];
const MAX_DEPTH = 8;
/** Integrators' APIs first, the operator's next, plumbing last; other tags alphabetically after. */
const TAG_ORDER = ['server', 'partner', 'client', 'admin', 'ops'];

export function escapeHtml(value: unknown): string {
  return String(value).replace(/[&<>"']/g, (c) => `&#${c.charCodeAt(0)};`);
}

/** Escaped text where `code` spans become <code> (the only markup descriptions use). */
function prose(text: string | undefined): string {
  return text ? escapeHtml(text).replace(/`([^`]+)`/g, '<code>$1</code>') : '';
}

function anchor(method: string, path: string): string {
  return `op-${method}-${path}`.replace(/[^A-Za-z0-9_-]+/g, '-');
}

function resolve(schema: Schema, doc: OpenApiDocument): { schema: Schema; name?: string } {
  const m = schema.$ref ? /^#\/components\/schemas\/(.+)$/.exec(schema.$ref) : null;
  const target = m ? doc.components?.schemas?.[m[1] as string] : undefined;
  return target ? { schema: target, name: m?.[1] } : { schema };
}

function typeLabel(raw: Schema, doc: OpenApiDocument): string {
  const { schema, name } = resolve(raw, doc);
  if (name) return name;
  if (schema.enum) return `one of ${schema.enum.map((v) => JSON.stringify(v)).join(', ')}`;
  if (schema.const !== undefined) return JSON.stringify(schema.const);
  const variants = schema.anyOf ?? schema.oneOf;
  if (variants) return variants.map((v) => typeLabel(v, doc)).join(' | ');
  if (schema.allOf) return 'object';
  if (schema.type === 'array') return `array of ${schema.items ? typeLabel(schema.items, doc) : 'any'}`;
  if (Array.isArray(schema.type)) return schema.type.join(' | ');
  return schema.type ?? 'any';
}

function constraints(schema: Schema): string {
  const parts = CONSTRAINTS.filter((k) => schema[k] !== undefined).map((k) => `${k}: ${JSON.stringify(schema[k])}`);
  return parts.length ? ` <span class="c">${escapeHtml(parts.join(', '))}</span>` : '';
}

/** The object properties a schema documents, following $ref, allOf and object variants. */
function propertiesOf(raw: Schema, doc: OpenApiDocument, depth: number): Array<[string, Schema, boolean]> {
  if (depth > MAX_DEPTH) return [];
  const { schema } = resolve(raw, doc);
  const own: Array<[string, Schema, boolean]> = Object.entries(schema.properties ?? {}).map(([k, v]) => [k, v, (schema.required ?? []).includes(k)]);
  const merged = (schema.allOf ?? []).flatMap((s) => propertiesOf(s, doc, depth + 1));
  return [...own, ...merged];
}

function nestedOf(raw: Schema, doc: OpenApiDocument): Schema | undefined {
  const { schema } = resolve(raw, doc);
  if (schema.type === 'array' && schema.items) return schema.items;
  const variants = schema.anyOf ?? schema.oneOf;
  return variants?.find((v) => propertiesOf(v, doc, 0).length > 0) ?? schema;
}

function schemaHtml(raw: Schema, doc: OpenApiDocument, depth = 0): string {
  const props = propertiesOf(raw, doc, depth);
  if (props.length === 0 || depth > MAX_DEPTH) {
    const { schema } = resolve(raw, doc);
    return `<p class="t">${escapeHtml(typeLabel(raw, doc))}${constraints(schema)} ${prose(schema.description)}</p>`;
  }
  const items = props.map(([name, prop, required]) => {
    const { schema } = resolve(prop, doc);
    const inner = nestedOf(prop, doc);
    const sub = inner && propertiesOf(inner, doc, depth + 1).length ? schemaHtml(inner, doc, depth + 1) : '';
    return (
      `<li><code class="n">${escapeHtml(name)}</code> <span class="t">${escapeHtml(typeLabel(prop, doc))}</span>` +
      `${required ? ' <span class="req">required</span>' : ''}${constraints(schema)}` +
      `${schema.description ? ` — ${prose(schema.description)}` : ''}${sub}</li>`
    );
  });
  return `<ul class="s">${items.join('')}</ul>`;
}

function parametersHtml(params: Parameter[] | undefined, doc: OpenApiDocument): string {
  if (!params?.length) return '';
  const rows = params.map(
    (p) =>
      `<tr><td><code>${escapeHtml(p.name)}</code></td><td>${escapeHtml(p.in)}</td><td>${p.required ? 'yes' : 'no'}</td>` +
      `<td>${escapeHtml(p.schema ? typeLabel(p.schema, doc) : 'string')}${p.schema ? constraints(p.schema) : ''} ${prose(p.description)}</td></tr>`,
  );
  return `<h4>Parameters</h4><table><tr><th>name</th><th>in</th><th>required</th><th>type</th></tr>${rows.join('')}</table>`;
}

function contentHtml(content: Media | undefined, doc: OpenApiDocument): string {
  return Object.entries(content ?? {})
    .map(([type, media]) => `<div class="mt">${escapeHtml(type)}</div>${media.schema ? schemaHtml(media.schema, doc) : ''}`)
    .join('');
}

function responsesHtml(responses: Record<string, Response> | undefined, doc: OpenApiDocument): string {
  const entries = Object.entries(responses ?? {});
  const ok = entries.filter(([s]) => !/^[45]/.test(s));
  const errors = entries.filter(([s]) => /^[45]/.test(s));
  const okHtml = ok.map(([s, r]) => `<h4>${escapeHtml(s)} ${prose(r.description)}</h4>${contentHtml(r.content, doc)}`).join('');
  const errHtml = errors.length
    ? `<h4>Errors (ErrorResponse)</h4><table><tr><th>status</th><th>error</th><th>when</th></tr>${errors
        .map(([s, r]) => `<tr><td>${escapeHtml(s)}</td><td>${(r['x-error-codes'] ?? []).map((c) => `<code>${escapeHtml(c)}</code>`).join(' ')}</td><td>${prose(r.description?.split('. ErrorResponse')[0])}</td></tr>`)
        .join('')}</table>`
    : '';
  return okHtml + errHtml;
}

function operationHtml(method: string, path: string, op: Operation, doc: OpenApiDocument): string {
  const auth = Object.keys(op.security?.[0] ?? {});
  return (
    `<section class="op" id="${escapeHtml(anchor(method, path))}">` +
    `<h3><span class="m ${escapeHtml(method)}">${escapeHtml(method.toUpperCase())}</span> <code>${escapeHtml(path)}</code></h3>` +
    (op.summary ? `<p>${prose(op.summary)}</p>` : '') +
    (op.description ? `<p>${prose(op.description)}</p>` : '') +
    `<p class="auth">Authentication: ${auth.length ? auth.map((a) => `<a href="#auth-${escapeHtml(a)}">${escapeHtml(a)}</a>`).join(', ') : 'none'}</p>` +
    parametersHtml(op.parameters, doc) +
    (op.requestBody ? `<h4>Request body${op.requestBody.required ? '' : ' (optional)'}</h4>${contentHtml(op.requestBody.content, doc)}` : '') +
    responsesHtml(op.responses, doc) +
    `</section>`
  );
}

function groupByTag(doc: OpenApiDocument): Map<string, Array<[string, string, Operation]>> {
  const groups = new Map<string, Array<[string, string, Operation]>>();
  for (const [path, item] of Object.entries(doc.paths ?? {})) {
    for (const method of METHODS) {
      const op = item[method];
      if (!op) continue;
      const tag = op.tags?.[0] ?? 'other';
      groups.set(tag, [...(groups.get(tag) ?? []), [method, path, op]]);
    }
  }
  const rank = (tag: string) => {
    const i = TAG_ORDER.indexOf(tag);
    return i < 0 ? TAG_ORDER.length : i;
  };
  return new Map([...groups].sort(([a], [b]) => rank(a) - rank(b) || a.localeCompare(b)));
}

const STYLE = `body{font:15px/1.5 system-ui,sans-serif;margin:0;display:flex;color:#222}
nav{width:300px;flex:none;height:100vh;overflow:auto;position:sticky;top:0;background:#f6f6f8;padding:12px;box-sizing:border-box;font-size:13px}
nav a{color:#224;text-decoration:none;display:block;white-space:nowrap;overflow:hidden;text-overflow:ellipsis}
main{flex:1;padding:0 28px 60px;max-width:1000px}
.op{border-top:1px solid #ddd;padding:8px 0}
.m{display:inline-block;min-width:56px;text-align:center;border-radius:4px;color:#fff;font-size:12px;padding:1px 4px;background:#666}
.get{background:#2b7bb9}.post{background:#2f9e44}.put{background:#c77700}.patch{background:#8a5cc2}.delete{background:#c92a2a}
code{background:#f1f1f4;padding:0 3px;border-radius:3px}.c{color:#777;font-size:13px}.req{color:#c92a2a;font-size:12px}
.t{color:#555}.mt{color:#777;font-size:12px}table{border-collapse:collapse}td,th{border:1px solid #ddd;padding:3px 8px;text-align:left;vertical-align:top}
ul.s{margin:2px 0;padding-left:20px}h4{margin:10px 0 4px}`;

export function renderDocsPage(doc: OpenApiDocument): string {
  const groups = groupByTag(doc);
  const title = doc.info?.title ?? 'API';
  const nav = [...groups]
    .map(([tag, ops]) => `<h4>${escapeHtml(tag)}</h4>${ops.map(([m, p]) => `<a href="#${escapeHtml(anchor(m, p))}">${escapeHtml(m.toUpperCase())} ${escapeHtml(p)}</a>`).join('')}`)
    .join('');
  const schemes = Object.entries(doc.components?.securitySchemes ?? {})
    .map(([name, s]) => `<li id="auth-${escapeHtml(name)}"><code>${escapeHtml(name)}</code>: ${prose(s.description)}</li>`)
    .join('');
  const body = [...groups]
    .map(([tag, ops]) => `<h2>${escapeHtml(tag)}</h2>${ops.map(([m, p, op]) => operationHtml(m, p, op, doc)).join('')}`)
    .join('');
  return (
    `<!doctype html><html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width,initial-scale=1">` +
    `<title>${escapeHtml(title)}</title><style>${STYLE}</style></head><body><nav><strong>${escapeHtml(title)}</strong>${nav}</nav><main>` +
    `<h1>${escapeHtml(title)} <small>${escapeHtml(doc.info?.version ?? '')}</small></h1><p>${prose(doc.info?.description)}</p>` +
    `<p>Servers: ${(doc.servers ?? []).map((s) => `<code>${escapeHtml(s.url)}</code>`).join(', ')} · machine-readable: <a href="openapi.json">openapi.json</a></p>` +
    `<h2>Authentication</h2><ul>${schemes}</ul>${body}</main></body></html>`
  );
}
