import { readFileSync } from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { REPO_ROOT } from '../helpers/spawn.js';

const read = (file: string) => readFileSync(path.join(REPO_ROOT, file), 'utf8');

const engines: string = JSON.parse(read('package.json')).engines.node;
/** The major version each range of `engines` starts at: `^20.19.0 || ^22.12.0 || >=24` is 20, 22, 24. */
const majors = engines.split('||').map((range) => Number(/\d+/.exec(range)?.[0]));
/** The README's bullet that names the supported versions. */
const readmeVersions = /^- Node\.js versions: [\s\S]*?(?=^- |^$)/m.exec(read('README.md'))?.[0] ?? '';
const imageMajors = [...read('Dockerfile').matchAll(/^FROM node:(\d+)-slim\b/gm)].map((m) => Number(m[1]));
const imageMajor = imageMajors[0];

describe('the supported Node.js versions agree (package.json, README, Dockerfile, CI)', () => {
  it('engines names the 20, 22 and 24 lines, and the lockfile says the same', () => {
    expect(majors).toEqual([20, 22, 24]);
    expect(JSON.parse(read('package-lock.json')).packages[''].engines.node).toBe(engines);
  });

  it("the README's Node.js versions bullet quotes engines and names every line", () => {
    expect(readmeVersions).toContain(`\`engines\`: \`${engines}\``);
    for (const major of majors) expect(readmeVersions).toMatch(new RegExp(`\\b${major}\\b`));
  });

  it('every stage of the Dockerfile uses one supported LTS image, the one the README and docs name', () => {
    expect(imageMajors.length).toBeGreaterThanOrEqual(1);
    expect(new Set(imageMajors).size).toBe(1);
    // A maintained LTS line: even, in engines, and not the oldest (20 is past its end of life).
    expect(imageMajor! % 2).toBe(0);
    expect(majors.slice(1)).toContain(imageMajor);
    expect(readmeVersions).toContain(`node:${imageMajor}-slim`);
    expect(read('README.md')).toContain(`multi-stage, \`node:${imageMajor}-slim\``);
    expect(read('docs/deployment.md')).toContain(`Multi-stage on \`node:${imageMajor}-slim\``);
  });

  it('the compose files build that image and name no other Node.js image', () => {
    for (const file of ['deploy/compose.yaml', 'deploy/compose.edge.yaml']) {
      const images = [...read(file).matchAll(/image:\s*node:(\d+)/g)].map((m) => Number(m[1]));
      expect(images.every((m) => m === imageMajor), file).toBe(true);
    }
    expect(read('deploy/compose.yaml')).toContain('dockerfile: Dockerfile');
  });

  it("CI's second run uses the image's Node.js line", () => {
    expect(/^CI_NODE_MAJOR=(\d+)$/m.exec(read('.ci/run'))?.[1]).toBe(String(imageMajor));
  });
});
