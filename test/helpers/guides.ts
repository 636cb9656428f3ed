import { spawn } from 'node:child_process';
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { REPO_ROOT } from './spawn.js';

/**
 * The runner of the guides in docs/guides, the README's quick start and docs/architecture.md
 * (GUIDES below): every `sh` block of such a file is run, in order, as one bash script
 * (`set -euo pipefail`), so later blocks use the variables and functions of earlier ones and
 * the first failing command fails the test.
 *
 * A block's info string may name the one database it is for: "```sh sqlite" or
 * "```sh postgres" blocks run only in the suite run on that database (e.g. the backup
 * commands); plain "```sh" blocks run on both.
 */
export interface Fence {
  /** The first word of the info string ("sh", "text", "json", ...); "" when there is none. */
  lang: string;
  /** The rest of the info string ("sqlite", "postgres"). */
  tags: string[];
  body: string;
  /** 1-based line of the opening fence. */
  line: number;
}

/** Every fenced block of a Markdown file (``` fences; ~~~ and indented code are not used in the guides); `file` relative to the repository or absolute. */
export function fences(file: string): Fence[] {
  const lines = readFileSync(path.resolve(REPO_ROOT, file), 'utf8').split('\n');
  const out: Fence[] = [];
  for (let i = 0; i < lines.length; i++) {
    const open = /^(\s*)```(.*)$/.exec(lines[i]!);
    if (!open) continue;
    const indent = open[1]!.length;
    const [lang = '', ...tags] = open[2]!.trim().split(/\s+/).filter(Boolean);
    const body: string[] = [];
    let j = i + 1;
    for (; j < lines.length && !/^\s*```\s*$/.test(lines[j]!); j++) body.push(lines[j]!.slice(indent));
    if (j === lines.length) throw new Error(`${file}:${i + 1}: fence never closed`);
    out.push({ lang, tags, body: `${body.join('\n')}\n`, line: i + 1 });
    i = j;
  }
  return out;
}

/** A literal path under /tmp (not `$TMPDIR` or a `mktemp` result held in a variable). */
const FIXED_TMP_PATH = /(^|[\s"'=:<>|])\/tmp\//m;

/** Languages a reader would take for shell commands: a guide may use only `sh` for them, which the runner runs. */
const SHELL_LIKE = new Set(['bash', 'shell', 'shell-session', 'console', 'zsh', 'shellscript', '']);

/**
 * The `sh` blocks of a guide, checked: every fence has a language, no shell example hides
 * under another shell-like tag (it would not be run), `sh` tags name only known databases, and
 * no `sh` block names a fixed path under /tmp: two runs of the suite on one machine (or a
 * reader's two terminals) would overwrite each other's file there; keep a value in a shell
 * variable or a `mktemp` file.
 */
export function shellBlocks(file: string): Fence[] {
  const all = fences(file);
  for (const f of all) {
    if (SHELL_LIKE.has(f.lang)) throw new Error(`${file}:${f.line}: a fence tagged "${f.lang}": tag shell examples "sh" (run by the test) or say what they are ("text", "dockerfile", ...)`);
    if (f.lang === 'sh' && f.tags.some((t) => t !== 'sqlite' && t !== 'postgres')) throw new Error(`${file}:${f.line}: unknown tag in "sh ${f.tags.join(' ')}"`);
    if (f.lang === 'sh' && FIXED_TMP_PATH.test(f.body)) throw new Error(`${file}:${f.line}: an sh block names a fixed path under /tmp; use a shell variable or "$(mktemp)"`);
  }
  return all.filter((f) => f.lang === 'sh');
}

export interface GuideRun {
  status: number | null;
  stdout: string;
  stderr: string;
  /** Standard output of each block that ran, by its index among the guide's `sh` blocks. */
  outputs: Map<number, string>;
  /** Indexes of the blocks that ran. */
  ran: number[];
}

/**
 * Runs the blocks for database `db` in order as one bash script in the repository root, with
 * exactly `env` (plus PATH and HOME). Asynchronous: a service under test in this process
 * keeps answering meanwhile.
 */
export function runShellBlocks(blocks: Fence[], db: 'sqlite' | 'postgres', env: Record<string, string>, timeoutMs: number, opts: { ownGroup?: boolean } = {}): Promise<GuideRun> {
  const ran = blocks.map((b, i) => ({ b, i })).filter(({ b }) => b.tags.length === 0 || b.tags.includes(db));
  // A marker line on stdout before each block splits the output per block; the ERR trap
  // names the block and line that failed.
  const script = [
    `trap 'echo "guide block \${GUIDE_BLOCK:-?} failed: exit $? at script line $LINENO: $BASH_COMMAND" >&2' ERR`,
    ...ran.map(({ b, i }) => `GUIDE_BLOCK='#${i + 1} (line ${b.line})'\nprintf '\\n@@guide-block ${i}\\n'\n${b.body}`),
  ].join('\n');
  return new Promise((resolve) => {
    const child = spawn('bash', ['-Eeuo', 'pipefail', '-c', script], {
      cwd: REPO_ROOT,
      env: { PATH: process.env.PATH!, HOME: process.env.HOME!, ...env },
      stdio: ['ignore', 'pipe', 'pipe'],
      // ownGroup: the script and what it starts in the background (a service, a receiver) form
      // one process group, which is killed when the script exits: a block that failed before
      // stopping them leaves nothing running (and nothing holding the output pipes open).
      detached: opts.ownGroup === true,
    });
    const killGroup = () => {
      if (!opts.ownGroup || child.pid === undefined) return;
      try {
        process.kill(-child.pid, 'SIGKILL');
      } catch {
        // the group is gone
      }
    };
    child.on('exit', killGroup);
    let stdout = '';
    let stderr = '';
    child.stdout.setEncoding('utf8').on('data', (d: string) => (stdout += d));
    child.stderr.setEncoding('utf8').on('data', (d: string) => (stderr += d));
    const timer = setTimeout(() => {
      stderr += `\n(runner: killed after ${timeoutMs} ms)\n`;
      child.kill('SIGKILL');
      killGroup();
    }, timeoutMs);
    child.on('close', (status) => {
      clearTimeout(timer);
      // GUIDE_SHOW_OUTPUT=1 shows what the blocks printed (to write a guide's `# => ` lines).
      if (process.env.GUIDE_SHOW_OUTPUT) process.stderr.write(`${stdout}\n--- stderr ---\n${stderr}\n`);
      const outputs = new Map<number, string>();
      const parts = stdout.split(/\n@@guide-block (\d+)\n/);
      for (let k = 1; k < parts.length; k += 2) outputs.set(Number(parts[k]), parts[k + 1] ?? '');
      resolve({ status, stdout, stderr, outputs, ran: ran.map(({ i }) => i) });
    });
  });
}

/** The failure text of a run: what a reader needs to find the broken example. */
export function describeRun(r: GuideRun): string {
  return `exit ${r.status}\n--- stderr ---\n${r.stderr.slice(-6000)}\n--- stdout ---\n${r.stdout.slice(-6000)}`;
}

/**
 * The guides, the README's quick start and docs/architecture.md, with how many `sh` blocks
 * each has: a file that gains (or loses) a block fails `test/docs-examples.test.ts` until its
 * count here is changed with it, so no example is added without its test being looked at.
 * Each file's blocks are run by the named test file.
 */
export const GUIDES: Record<string, { shBlocks: number; test: string }> = {
  'README.md': { shBlocks: 6, test: 'test/readme-quick-start.test.ts' },
  'docs/architecture.md': { shBlocks: 8, test: 'test/docs-architecture.test.ts' },
  'docs/guides/game-backend.md': { shBlocks: 5, test: 'test/docs-examples.test.ts' },
  'docs/guides/partners.md': { shBlocks: 8, test: 'test/docs-partners.test.ts' },
  'docs/guides/operators.md': { shBlocks: 17, test: 'test/docs-operators.test.ts' },
  'docs/guides/payments.md': { shBlocks: 9, test: 'test/docs-payments.test.ts' },
  'docs/guides/payments-alipay.md': { shBlocks: 2, test: 'test/docs-payments-alipay.test.ts' },
};

/** Escapes a `# => ` line into a regular expression: `...` matches any text, the rest literally. */
function expectedLine(text: string): RegExp {
  return new RegExp(`^${text.split('...').map((p) => p.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')).join('.*')}$`);
}

/**
 * Checks the `# => <line>` comments of the blocks that ran: each must match a whole line the
 * block printed, in order. Returns the problems (empty when all match).
 */
export function unmetExpectations(blocks: Fence[], run: GuideRun): string[] {
  const problems: string[] = [];
  for (const i of run.ran) {
    const lines = (run.outputs.get(i) ?? '').split('\n');
    let from = 0;
    for (const m of blocks[i]!.body.matchAll(/^# => (.*)$/gm)) {
      const re = expectedLine(m[1]!);
      const at = lines.findIndex((l, k) => k >= from && re.test(l));
      if (at < 0) {
        problems.push(`block #${i + 1} (line ${blocks[i]!.line}): no output line after line ${from + 1} matches "${m[1]}"; it printed:\n${lines.join('\n')}`);
        break;
      }
      from = at + 1;
    }
  }
  return problems;
}
