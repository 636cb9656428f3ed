import type { Logger } from 'pino';

export interface ShutdownSettings {
  /** SHUTDOWN_DELAY_MS: how long /readyz alone answers 503 before draining starts. */
  delayMs: number;
  /** SHUTDOWN_TIMEOUT_MS: how long in-flight requests get before their connections are closed. */
  timeoutMs: number;
  /** How long stopping the jobs and releasing the database may take before the stop fails. */
  releaseGraceMs: number;
  logger: Logger;
}

/** What a stop closes, in this order. */
export interface ShutdownSteps {
  /** The HTTP server: refuses new connections and settles once in-flight requests are answered. */
  server: { close(): PromiseLike<unknown>; server: unknown };
  /** Stops the background jobs and closes pools, clients and the database. */
  release(): Promise<void>;
}

/**
 * The shutdown state machine: `leaving` for SHUTDOWN_DELAY_MS (only /readyz says so, so that
 * a load balancer stops sending requests here), then `draining` (new requests refused,
 * in-flight ones finished), then the jobs and the database are released.
 */
export class Shutdown {
  private isLeaving = false;
  private isDraining = false;
  private leaveNow: (() => void) | null = null;
  private stopped: Promise<void> | null = null;

  constructor(private readonly s: ShutdownSettings) {}

  get leaving(): boolean {
    return this.isLeaving;
  }

  get draining(): boolean {
    return this.isDraining;
  }

  /** Runs once; a later call with `now` cuts the leaving delay short. */
  stop(steps: ShutdownSteps, opts: { now?: boolean } = {}): Promise<void> {
    if (opts.now) this.leaveNow?.();
    this.stopped ??= this.run(steps, opts.now === true);
    return this.stopped;
  }

  private async run(steps: ShutdownSteps, now: boolean): Promise<void> {
    if (this.s.delayMs > 0 && !now) {
      this.isLeaving = true;
      await new Promise<void>((resolve) => {
        const timer = setTimeout(resolve, this.s.delayMs);
        this.leaveNow = () => {
          clearTimeout(timer);
          resolve();
        };
      });
      this.s.logger.info('draining');
    }
    this.isDraining = true;
    const force = setTimeout(() => {
      const server = steps.server.server as { closeAllConnections?: () => void };
      server.closeAllConnections?.();
    }, this.s.timeoutMs);
    force.unref();
    await steps.server.close();
    clearTimeout(force);
    // A database that stopped answering would hold a job's last query, or the pool's close,
    // for ever: what follows gets one more grace period, then the stop fails (exit 1).
    await withinGrace(this.s.releaseGraceMs, steps.release);
  }
}

/** Runs `work`; rejects if it has not finished within `ms`. */
async function withinGrace(ms: number, work: () => Promise<void>): Promise<void> {
  let timer: NodeJS.Timeout | undefined;
  const late = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`background jobs or the database did not stop within ${ms} ms (SHUTDOWN_TIMEOUT_MS, at least NOTIFY_TIMEOUT_MS + 2 s)`)), ms);
    timer.unref();
  });
  try {
    await Promise.race([work(), late]);
  } finally {
    clearTimeout(timer);
  }
}
