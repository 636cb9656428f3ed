import pino from 'pino';
import { loadConfig } from '../src/config/index.js';
import { createService } from '../src/service.js';
const config = loadConfig({ DATABASE_URL: 'sqlite:/tmp/audit-c/routes.db', ADMIN_TOKEN: 'x'.repeat(20), DATA_DIR: '/tmp/audit-c/d1' });
const s = await createService({ config, logger: pino({ level: 'silent' }), secretsKey: Buffer.alloc(32) });
await s.app.ready();
console.log(s.app.printRoutes({ commonPrefix: false }));
await s.stop();
