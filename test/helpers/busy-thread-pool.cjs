// Test aid, preloaded with --require (test/process.test.ts): from SIGTERM on, keeps libuv's
// thread pool busy for a moment (~70 ms here). Run with UV_THREADPOOL_SIZE=1, the log write of a
// shutdown's last line then waits in the pool's queue while the process is about to exit.
const { pbkdf2 } = require('node:crypto');
process.prependListener('SIGTERM', () => pbkdf2('busy', 'pool', 150_000, 32, 'sha256', () => {}));
