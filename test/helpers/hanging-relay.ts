import net from 'node:net';

/**
 * A TCP relay that can stop forwarding (a hung Redis or PostgreSQL: connected, never answering).
 * What it is sent while hung is held, and forwarded on resume, so that every command still
 * gets its answer in order.
 */
export class HangingRelay {
  private readonly server = net.createServer((client) => this.relay(client));
  private readonly held: { upstream: net.Socket; data: Buffer }[] = [];
  private hung = false;
  heldBytes = 0;
  port = 0;

  constructor(private readonly target: URL) {}

  async start(): Promise<this> {
    await new Promise<void>((resolve) => this.server.listen(0, '127.0.0.1', resolve));
    this.port = (this.server.address() as net.AddressInfo).port;
    return this;
  }

  hang(): void {
    this.hung = true;
  }

  resume(): void {
    this.hung = false;
    for (const h of this.held.splice(0)) h.upstream.write(h.data);
  }

  private relay(client: net.Socket): void {
    const upstream = net.connect(Number(this.target.port || (this.target.protocol === 'redis:' ? 6379 : 5432)), this.target.hostname);
    upstream.on('data', (d) => client.write(d));
    client.on('data', (data) => {
      if (!this.hung) return void upstream.write(data);
      this.held.push({ upstream, data });
      this.heldBytes += data.length;
    });
    const end = () => {
      client.destroy();
      upstream.destroy();
    };
    client.on('close', end).on('error', end);
    upstream.on('close', end).on('error', end);
  }

  close(): Promise<void> {
    return new Promise((resolve) => {
      this.server.close(() => resolve());
      for (const h of this.held) h.upstream.destroy();
    });
  }
}
