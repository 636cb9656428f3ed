import { describe, expect, it } from 'vitest';
import { createLogger, redactSecrets } from '../../src/logger.js';

/** The lines a logger writes, parsed. */
function capture() {
  const lines: Record<string, any>[] = [];
  const logger = createLogger('info', { write: (s: string) => void lines.push(JSON.parse(s)) });
  return { logger, lines };
}

describe('log redaction', () => {
  it('censors secret keys at every depth, in any case, in arrays', () => {
    const { logger, lines } = capture();
    logger.info({
      secret_key: 'sk_top',
      game: { secret: 's1', keys: [{ key_id: 'k1', secret_key: 'sk_in_array' }] },
      outbound: { request: { options: { headers: { Authorization: 'SEAYOO-HMAC-SHA256 Game=g,Signature=x', Cookie: 'c=1' } } } },
      a: { b: { c: { d: { e: { order_token: 'ot_1_deep', password: 'pw' } } } } },
      kept: { route: '/v1/server/create-order', status: 200 },
    }, 'm');
    const text = JSON.stringify(lines[0]);
    for (const s of ['sk_top', 's1', 'sk_in_array', 'SEAYOO', 'c=1', 'ot_1_deep', 'pw"']) expect(text, s).not.toContain(s);
    expect(lines[0]!.game.keys[0]).toEqual({ key_id: 'k1', secret_key: '[redacted]' });
    expect(lines[0]!.outbound.request.options.headers).toEqual({ Authorization: '[redacted]', Cookie: '[redacted]' });
    expect(lines[0]!.kept).toEqual({ route: '/v1/server/create-order', status: 200 });
  });

  it('censors inside errors and their causes, and keeps message, type and stack', () => {
    const { logger, lines } = capture();
    const cause = Object.assign(new Error('connect refused'), { headers: { authorization: 'Bearer admin-token-xyz' } });
    const err = Object.assign(new TypeError('send failed', { cause }), { request: { token: 'tok-123' } });
    logger.error({ err }, 'attempt failed');
    const text = JSON.stringify(lines[0]);
    expect(text).not.toContain('admin-token-xyz');
    expect(text).not.toContain('tok-123');
    expect(lines[0]!.err).toMatchObject({ type: 'TypeError', message: expect.stringContaining('send failed'), request: { token: '[redacted]' } });
    expect(lines[0]!.err.stack).toContain('send failed');
    // The logged error itself is left as it was: the service may still use it.
    expect(err.request.token).toBe('tok-123');
    expect((err.cause as typeof cause).headers.authorization).toBe('Bearer admin-token-xyz');
  });

  it("keeps a stack that is an own getter reading its own error (V8's errors from Node 22 on)", () => {
    const { logger, lines } = capture();
    const err = Object.assign(new Error('gm unreachable'), { headers: { authorization: 'Bearer t-xyz' } });
    Object.defineProperty(err, 'stack', {
      get(this: object) {
        return this === err ? 'Error: gm unreachable\n    at probe (gm.ts:1:1)' : undefined;
      },
      set() {},
      enumerable: false,
      configurable: true,
    });
    logger.error({ err }, 'attempt failed');
    expect(JSON.stringify(lines[0])).not.toContain('t-xyz');
    expect(lines[0]!.err.stack).toBe('Error: gm unreachable\n    at probe (gm.ts:1:1)');
  });

  it('censors what a child logger logs', () => {
    const { logger, lines } = capture();
    logger.child({ job: 'notifications' }).warn({ caller: { id: 'g1', secret: 'child-secret' } }, 'x');
    expect(JSON.stringify(lines[0])).not.toContain('child-secret');
    expect(lines[0]).toMatchObject({ job: 'notifications', caller: { id: 'g1', secret: '[redacted]' } });
  });

  it('returns an object with nothing to censor as it is, and never mutates its input', () => {
    const line = { method: 'POST', route: '/v1/server/create-order', status: 200, latencyMs: 1.2, traceId: 't' };
    expect(redactSecrets(line)).toBe(line);
    const nested = { a: { token: 't1' }, b: { c: 1 } };
    const out = redactSecrets(nested);
    expect(out).toEqual({ a: { token: '[redacted]' }, b: { c: 1 } });
    expect(out.b).toBe(nested.b);
    expect(nested.a.token).toBe('t1');
  });

  it('survives a cycle and leaves buffers alone', () => {
    const cyclic: Record<string, unknown> = { name: 'loop' };
    cyclic.self = cyclic;
    expect(() => redactSecrets(cyclic)).not.toThrow();
    const buf = Buffer.from('token');
    expect(redactSecrets({ buf }).buf).toBe(buf);
  });

  it('censors at any depth: a token nested 9 and 40 levels deep; past 64 levels the rest is replaced, never written as it is', () => {
    const nest = (levels: number, inner: unknown) => {
      let o: unknown = inner;
      for (let d = 1; d <= levels; d++) o = { [`l${d}`]: o };
      return o;
    };
    for (const levels of [8, 39, 63]) {
      const { logger, lines } = capture();
      logger.info({ obj: nest(levels, { token: 'deep-secret', kept: 1 }) }, `nesting ${levels + 1}`);
      const text = JSON.stringify(lines[0]);
      expect(text, String(levels)).not.toContain('deep-secret');
      expect(text, String(levels)).toContain('"token":"[redacted]","kept":1');
    }
    const { logger, lines } = capture();
    logger.info({ obj: nest(80, { token: 'deepest-secret' }) }, 'nesting 81');
    const text = JSON.stringify(lines[0]);
    expect(text).not.toContain('deepest-secret');
    expect(text).toContain('[redacted: nested too deep]');
  });

  it('censors an object everywhere it is referenced, and one that refers back to itself', () => {
    const shared = { token: 'shared-secret' };
    const cyclic: Record<string, unknown> = { password: 'cyclic-secret' };
    cyclic.self = cyclic;
    const { logger, lines } = capture();
    logger.info({ a: shared, b: [shared], c: { d: shared }, cyclic }, 'm');
    const text = JSON.stringify(lines[0]);
    expect(text).not.toContain('shared-secret');
    expect(text).not.toContain('cyclic-secret');
    expect(lines[0]).toMatchObject({ a: { token: '[redacted]' }, b: [{ token: '[redacted]' }], c: { d: { token: '[redacted]' } }, cyclic: { password: '[redacted]', self: '[Circular]' } });
  });

  it.each([['adminToken'], ['ADMINTOKEN'], ['set-cookie'], ['Proxy-Authorization'], ['secrets_key'], ['order_token']])('censors the documented key %s', (key) => {
    const { logger, lines } = capture();
    logger.info({ headers: { [key]: 'value-that-must-not-show' } }, 'm');
    expect(JSON.stringify(lines[0])).not.toContain('value-that-must-not-show');
  });

  it('writes a line with no secret exactly as given: a class with toJSON in a cycle, prototype getters', () => {
    class Node {
      kids: Node[] = [];
      parent: Node | null = null;
      constructor(readonly id: string) {}
      toJSON() {
        return { id: this.id, kids: this.kids.length };
      }
    }
    const p = new Node('p');
    const k = new Node('k');
    k.parent = p;
    p.kids.push(k);
    class Res {
      me: Res = this;
      private readonly _s = 200;
      get statusCode() {
        return this._s;
      }
      toJSON() {
        return { statusCode: this.statusCode };
      }
    }
    const line = { node: p, res: new Res() };
    expect(redactSecrets(line)).toBe(line);
    const { logger, lines } = capture();
    logger.info(line, 'm');
    expect(lines[0]).toMatchObject({ node: { id: 'p', kids: 1 }, res: { statusCode: 200 } });
  });

  it("censors inside an AggregateError's errors, which pino writes", () => {
    const { logger, lines } = capture();
    logger.error({ err: new AggregateError([Object.assign(new Error('in'), { token: 'agg-secret' })], 'all failed') }, 'm');
    expect(JSON.stringify(lines[0])).not.toContain('agg-secret');
    expect(JSON.stringify(lines[0])).toContain('all failed');
  });

  it('an object that cannot be copied for censoring is left out; the log call does not throw', () => {
    const { logger, lines } = capture();
    const getterOnly = Object.defineProperty(new Error('x'), 'info', { get: () => ({ token: 'getter-secret' }), enumerable: true });
    const withSlots = new DOMException('aborted', 'AbortError');
    Object.defineProperty(withSlots, 'cause', { value: { token: 'dom-secret' }, enumerable: false });
    expect(() => logger.error({ err: getterOnly }, 'a')).not.toThrow();
    expect(() => logger.error({ err: withSlots }, 'b')).not.toThrow();
    const text = JSON.stringify(lines);
    expect(text).not.toContain('getter-secret');
    expect(text).not.toContain('dom-secret');
    expect(lines.map((l) => l.msg)).toEqual(['a', 'b']);
  });

  it('never mutates an array it censors', () => {
    const list = [{ token: 't1' }, { ok: 1 }];
    const out = redactSecrets({ list });
    expect(out.list).toEqual([{ token: '[redacted]' }, { ok: 1 }]);
    expect(out.list).not.toBe(list);
    expect(list[0]).toEqual({ token: 't1' });
  });
});
