import { Writable } from 'node:stream';

/** A service's JSON log lines, in memory: give `stream` as its logDestination. */
export function logSink<T = any>(): { lines: T[]; stream: Writable } {
  const lines: T[] = [];
  const stream = new Writable({
    write(chunk, _enc, done) {
      for (const l of String(chunk).split('\n').filter(Boolean)) lines.push(JSON.parse(l) as T);
      done();
    },
  });
  return { lines, stream };
}
