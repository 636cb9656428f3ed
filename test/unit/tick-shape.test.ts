import { spawnSync } from 'node:child_process';
import { closeSync, mkdtempSync, openSync, readFileSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { REPO_ROOT } from '../helpers/spawn.js';

/** Runs the probe; returns the inline-cache states of nextTick's literal and the map check. */
function probe(mode: 'pin' | 'none'): { states: string[]; sameMap: string; keys: number } {
  // V8 prints with C stdio: to a pipe that Node has made non-blocking, part of it can be lost.
  const dir = mkdtempSync(path.join(os.tmpdir(), 'combo-tick-'));
  const file = path.join(dir, 'out.txt');
  const fd = openSync(file, 'w');
  let stdout: string;
  try {
    // No background compiles: a compile job holds the maps it uses, and on a busy machine one still
    // running across the collections kept the maps alive (the control then failed 4 times in 8).
    const args = ['--allow-natives-syntax', '--expose-gc', '--no-concurrent-recompilation', '--import', 'tsx', 'test/helpers/tick-shape-probe.ts', mode];
    const r = spawnSync(process.execPath, args, { cwd: REPO_ROOT, encoding: 'utf8', stdio: ['ignore', fd, 'pipe'] });
    expect(r.status, r.stderr).toBe(0);
  } finally {
    closeSync(fd);
    stdout = readFileSync(file, 'utf8');
    rmSync(dir, { recursive: true, force: true });
  }
  const states = [...stdout.matchAll(/slot #\d+ DefineKeyedOwnPropertyInLiteral (\w+)/g)].map((m) => m[1]!);
  return { states, sameMap: /SAME_MAP=(\S+)/.exec(stdout)?.[1] ?? '', keys: Number(/KEYS=(\d+)/.exec(stdout)?.[1]) };
}

describe("process.nextTick's object shape survives garbage collection (src/lib/tick-shape.ts)", () => {
  it('without the pin, full collections with no tick queued make the literal megamorphic (the effect exists)', () => {
    const { states, keys } = probe('none');
    // One keyed definition per property: four on Node 20 (two symbols, callback, args), five
    // from Node 22 on (and the async context frame).
    expect(keys).toBe(Number(process.versions.node.split('.')[0]) >= 22 ? 5 : 4);
    expect(states).toHaveLength(keys);
    expect(states).toContain('MEGAMORPHIC');
  });

  it('with the pin, every definition in the literal stays monomorphic', () => {
    const { states, sameMap, keys } = probe('pin');
    expect(states).toEqual(Array(keys).fill('MONOMORPHIC'));
    // The pinned tick object has the very map of the tick objects Node builds later.
    expect(sameMap).toBe('true');
  });
});
