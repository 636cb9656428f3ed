import Fastify from 'fastify';
import { CreateOrderBody } from '../src/orders/schemas.js';
import { schemaCompiler } from '../src/http/validation.js';

/**
 * The reference point of the benchmark: a bare Fastify route that accepts the same body (same
 * schema, same validator) and answers {}. No signature, no database.
 *
 * BENCH_BARE_SPIN_US=N makes the route busy-wait N µs before answering: it shows what N µs of
 * pure user-space work per request costs the route as a whole on this machine (the kernel's
 * share of each answer grows with it). A request's
 * `?spin_us=N` overrides it for that request (the `bare-matched` scenario of bench/run.ts).
 * BARE_PORT picks its port (default: any free one; the address is printed as JSON on stdout).
 */
const spinUs = Number(process.env.BENCH_BARE_SPIN_US ?? 0);
const app = Fastify({ logger: false });
app.setValidatorCompiler(schemaCompiler);
app.post('/bare', { schema: { body: CreateOrderBody } }, async (req) => {
  const us = (req.query as { spin_us?: string }).spin_us;
  const spinMs = (us === undefined ? spinUs : Number(us)) / 1000;
  if (spinMs > 0) {
    const end = performance.now() + spinMs;
    while (performance.now() < end);
  }
  return {};
});
const address = await app.listen({ port: Number(process.env.BARE_PORT ?? 0), host: '127.0.0.1' });
process.stdout.write(`${JSON.stringify({ address })}\n`);
process.on('SIGTERM', () => app.close().then(() => process.exit(0)));
