import type { Logger } from 'pino';
import type { SessionService } from './service.js';

/** Background job: closes sessions with no leave for the timeout (PROTOCOL 4). */
export class SessionSweeper {
  private timer: NodeJS.Timeout | null = null;
  private running: Promise<void> | null = null;

  constructor(
    private readonly sessions: SessionService,
    private readonly intervalMs: number,
    private readonly logger: Logger,
  ) {}

  start(): void {
    if (this.timer) return;
    this.timer = setInterval(() => {
      if (this.running) return;
      this.running = this.sweep().finally(() => {
        this.running = null;
      });
    }, this.intervalMs);
    this.timer.unref();
  }

  async sweep(): Promise<void> {
    try {
      // Keep going while full pages come back, so a backlog drains in one tick.
      let closed = await this.sessions.closeTimedOut(500);
      while (closed === 500 && this.timer) closed = await this.sessions.closeTimedOut(500);
    } catch (err) {
      this.logger.error({ err }, 'session timeout sweep failed');
    }
  }

  async stop(): Promise<void> {
    if (this.timer) clearInterval(this.timer);
    this.timer = null;
    await this.running;
  }
}
