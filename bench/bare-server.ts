import Fastify from 'fastify';
import { CreateOrderBody } from '../src/orders/schemas.js';
import { schemaCompiler } from '../src/http/validation.js';

/**
 * The reference point of the benchmark: a bare Fastify route that accepts the same body (same
 * schema, same validator) and answers {}. No signature, no database.
 */
const app = Fastify({ logger: false });
app.setValidatorCompiler(schemaCompiler);
app.post('/bare', { schema: { body: CreateOrderBody } }, async () => ({}));
const address = await app.listen({ port: 0, host: '127.0.0.1' });
process.stdout.write(`${JSON.stringify({ address })}\n`);
process.on('SIGTERM', () => app.close().then(() => process.exit(0)));
