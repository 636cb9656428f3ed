// A preload for the service under `npm run bench` (BENCH_NODE_ARGS="--require ./bench/trace-stalls.cjs"):
// what holds its event loop. It times every synchronous better-sqlite3 call of the main thread
// (by its SQL), every GC pause, every timer and immediate callback, and the gaps of a 1 ms timer
// (the loop's stalls), and writes the calls that took over 2 ms at least once, worst first, to
// $TRACE_STALLS_OUT (default /tmp/trace-stalls-<pid>.txt) every 2 s and at exit, with (Linux)
// how long the event loop waited for a CPU in its busiest 2 s and what the process's other
// threads ran meanwhile, the size of the group commit's batches and the write locks it was
// refused (SQLITE_BUSY), and what the timer's gaps over 8 ms were made of: SQLite calls,
// collections, the loop's time on a CPU and its wait for one. Worker threads are not traced.
'use strict';
const { isMainThread } = require('node:worker_threads');
if (isMainThread) {
  const { performance, PerformanceObserver, monitorEventLoopDelay } = require('node:perf_hooks');
  const fs = require('node:fs');
  const path = require('node:path');
  const out = process.env.TRACE_STALLS_OUT ?? `/tmp/trace-stalls-${process.pid}.txt`;
  const stats = new Map();
  const note = (key, ms) => {
    let e = stats.get(key);
    if (!e) stats.set(key, (e = { n: 0, total: 0, over2: 0, over5: 0, over10: 0, max: 0 }));
    e.n++;
    e.total += ms;
    if (ms > 2) e.over2++;
    if (ms > 5) e.over5++;
    if (ms > 10) e.over10++;
    if (ms > e.max) e.max = ms;
  };
  // What the current gap of the 1 ms timer (one event-loop turn or more) spent its time on.
  const gapParts = { sqlite: 0, gc: 0, statements: 0 };
  const longGaps = { n: 0, ms: 0, sqlite: 0, gc: 0, statements: 0, cpu: 0, wait: 0 };
  const mainSched = () => {
    try {
      const [cpu, wait] = fs.readFileSync(`/proc/self/task/${process.pid}/schedstat`, 'utf8').split(' ').map(Number);
      return { cpu, wait };
    } catch {
      return { cpu: 0, wait: 0 };
    }
  };
  let lastTick = mainSched();
  const timed = (key, f, self, args) => {
    const t = performance.now();
    try {
      return f.apply(self, args);
    } finally {
      const ms = performance.now() - t;
      gapParts.sqlite += ms;
      gapParts.statements++;
      note(key, ms);
    }
  };
  // The group commit's batches (src/db/group-commit.ts): statements run between each `begin
  // immediate` and its `commit`, and the time from one commit to the next (an event-loop turn
  // under load). Batches much smaller than the connections in flight leave requests waiting for
  // a turn of their own.
  const batch = { open: false, statements: 0, lastCommit: 0, sizes: [], gaps: [] };
  const batchControl = (sql) => {
    if (sql === 'begin immediate') Object.assign(batch, { open: true, statements: 0 });
    else {
      const now = performance.now();
      batch.sizes.push(batch.statements);
      if (batch.lastCommit) batch.gaps.push(now - batch.lastCommit);
      Object.assign(batch, { open: false, lastCommit: now });
    }
  };
  const percentiles = (values, ps) => {
    const sorted = [...values].sort((a, b) => a - b);
    return ps.map((p) => sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))] ?? 0);
  };
  const batchLine = () => {
    if (!batch.sizes.length) return '';
    const [s10, s50, s90] = percentiles(batch.sizes, [10, 50, 90]);
    const [g50, g90, g99] = percentiles(batch.gaps, [50, 90, 99]).map((g) => g.toFixed(1));
    return `group commits ${batch.sizes.length}: statements per batch p10 ${s10}, p50 ${s50}, p90 ${s90}; ms from one commit to the next p50 ${g50}, p90 ${g90}, p99 ${g99}\n`;
  };
  // Timer and immediate callbacks that ran over 2 ms, by their function's name or first line
  // (the trace's own timers are not wrapped).
  const ownInterval = setInterval;
  for (const name of ['setTimeout', 'setInterval', 'setImmediate']) {
    const original = global[name];
    global[name] = function (fn, ...rest) {
      if (typeof fn !== 'function') return original.call(this, fn, ...rest);
      const wrapped = function (...a) {
        const t = performance.now();
        try {
          return fn.apply(this, a);
        } finally {
          const ms = performance.now() - t;
          if (ms > 2) note(`${name} callback: ${fn.name || String(fn).replace(/\s+/g, ' ').slice(0, 80)}`, ms);
        }
      };
      return original.call(this, wrapped, ...rest);
    };
  }
  const Database = require(path.join(process.cwd(), 'node_modules/better-sqlite3'));
  const prepare = Database.prototype.prepare;
  Database.prototype.prepare = function (sql, ...rest) {
    const stmt = prepare.call(this, sql, ...rest);
    const text = String(sql).replace(/\s+/g, ' ').slice(0, 100);
    for (const m of ['run', 'get', 'all']) {
      const f = stmt[m];
      const control = m === 'run' && (text === 'begin immediate' || text === 'commit') ? text : null;
      stmt[m] = function (...args) {
        try {
          const result = timed(`${m} ${text}`, f, this, args);
          if (control) batchControl(control);
          else if (batch.open) batch.statements++;
          return result;
        } catch (e) {
          if (e && e.code === 'SQLITE_BUSY') note(`busy: ${text}`, 0);
          throw e;
        }
      };
    }
    return stmt;
  };
  for (const m of ['pragma', 'exec']) {
    const f = Database.prototype[m];
    Database.prototype[m] = function (...args) {
      return timed(`${m} ${String(args[0]).slice(0, 60)}`, f, this, args);
    };
  }
  new PerformanceObserver((list) => {
    for (const e of list.getEntries()) {
      gapParts.gc += e.duration;
      note(`gc (kind ${e.detail?.kind})`, e.duration);
    }
  }).observe({ entryTypes: ['gc'] });
  const delay = monitorEventLoopDelay({ resolution: 2 });
  delay.enable();
  let last = performance.now();
  ownInterval(() => {
    const now = performance.now();
    const gap = now - last - 1;
    note('event-loop stall (gap of a 1 ms timer, less 1 ms)', gap);
    const tick = mainSched();
    if (gap > 8 && gap < 200) {
      longGaps.cpu += (tick.cpu - lastTick.cpu) / 1e6;
      longGaps.wait += (tick.wait - lastTick.wait) / 1e6;
      longGaps.n++;
      longGaps.ms += gap;
      longGaps.sqlite += gapParts.sqlite;
      longGaps.gc += gapParts.gc;
      longGaps.statements += gapParts.statements;
    }
    Object.assign(gapParts, { sqlite: 0, gc: 0, statements: 0 });
    lastTick = tick;
    last = now;
  }, 1).unref();
  // Linux: the scheduler's figures of each thread of this process (/proc/self/task/*/schedstat:
  // ns on a CPU, ns runnable but waiting for one, slices). Kept for the busiest 2 s (the most
  // CPU on the main thread): how long the event loop waited for a CPU while under load, and what
  // the other threads (V8's helpers, the SQLite workers) ran meanwhile.
  const schedstat = () => {
    const threads = new Map();
    try {
      for (const tid of fs.readdirSync('/proc/self/task')) {
        const [cpu, wait, slices] = fs.readFileSync(`/proc/self/task/${tid}/schedstat`, 'utf8').trim().split(' ').map(Number);
        threads.set(tid, { cpu, wait, slices });
      }
    } catch {
      // not Linux
    }
    return threads;
  };
  let lastSched = schedstat();
  let busiest = null;
  const sample = () => {
    const now = schedstat();
    const main = String(process.pid);
    const d = { cpu: 0, wait: 0, slices: 0, otherCpu: 0, otherSlices: 0 };
    for (const [tid, t] of now) {
      const before = lastSched.get(tid) ?? { cpu: 0, wait: 0, slices: 0 };
      if (tid === main) Object.assign(d, { cpu: t.cpu - before.cpu, wait: t.wait - before.wait, slices: t.slices - before.slices });
      else {
        d.otherCpu += t.cpu - before.cpu;
        d.otherSlices += t.slices - before.slices;
      }
    }
    lastSched = now;
    if (!busiest || d.cpu > busiest.cpu) busiest = d;
  };
  const schedLine = () =>
    busiest
      ? `busiest 2 s: event loop on a CPU ${(busiest.cpu / 1e6).toFixed(0)} ms, waiting for one ${(busiest.wait / 1e6).toFixed(0)} ms over ${busiest.slices} slices; other threads on a CPU ${(busiest.otherCpu / 1e6).toFixed(0)} ms over ${busiest.otherSlices} slices\n`
      : '';
  const gapLine = () => {
    const g = longGaps;
    if (!g.n) return '';
    const per = (v) => (v / g.n).toFixed(1);
    return `gaps over 8 ms ${g.n}: mean ${per(g.ms)} ms, of which SQLite calls ${per(g.sqlite)} ms (${per(g.statements)} calls), GC ${per(g.gc)} ms; the loop on a CPU ${per(g.cpu)} ms, waiting for one ${per(g.wait)} ms\n`;
  };
  const write = () => {
    const rows = [...stats].filter(([k, e]) => e.over2 > 0 || k.startsWith("busy")).sort(([, a], [, b]) => b.over5 * 1e6 + b.over2 - (a.over5 * 1e6 + a.over2));
    const head = `event-loop delay p50 ${(delay.percentile(50) / 1e6).toFixed(1)} ms, p99 ${(delay.percentile(99) / 1e6).toFixed(1)} ms, max ${(delay.max / 1e6).toFixed(1)} ms\n${schedLine()}${batchLine()}${gapLine()}`;
    const lines = rows.map(([k, e]) => `${e.n} calls, mean ${(e.total / e.n).toFixed(3)} ms, >2 ms ${e.over2}, >5 ms ${e.over5}, >10 ms ${e.over10}, max ${e.max.toFixed(1)} ms: ${k}`);
    fs.writeFileSync(out, head + lines.join('\n') + '\n');
  };
  ownInterval(() => {
    sample();
    write();
  }, 2000).unref();
  process.on('exit', write);
}
