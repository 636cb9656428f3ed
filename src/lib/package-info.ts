import { existsSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

let cached: string | null = null;

/**
 * The service's version from its package.json, found by walking up from this file (the file
 * sits at a different depth in src/ and in dist/src/). Read on first use, not at import.
 */
export function packageVersion(): string {
  if (cached !== null) return cached;
  let dir = path.dirname(fileURLToPath(import.meta.url));
  for (;;) {
    const file = path.join(dir, 'package.json');
    if (existsSync(file)) {
      const pkg = JSON.parse(readFileSync(file, 'utf8')) as { name?: string; version?: string };
      if (pkg.name === 'combo-game-platform') return (cached = pkg.version ?? '0.0.0');
    }
    const parent = path.dirname(dir);
    if (parent === dir) return (cached = '0.0.0');
    dir = parent;
  }
}
