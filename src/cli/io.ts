import { parseArgs, type ParseArgsConfig } from 'node:util';

/** Where a command writes and what it reads; the entry passes the process's, tests can too. */
export interface Io {
  out(text: string): void;
  err(text: string): void;
  env: Record<string, string | undefined>;
  readStdin(): Promise<string>;
  /** Resolves when the user asks to stop (Ctrl-C); only long-running commands listen. */
  interrupted(): Promise<void>;
}

/** A mistake in how the command was called: usage is printed, exit status 2. */
export class UsageError extends Error {
  readonly exitCode = 2;
}

/** The command ran and failed (API error, unreachable service): exit status 1. */
export class CommandError extends Error {
  constructor(
    message: string,
    readonly exitCode = 1,
  ) {
    super(message);
  }
}

export type Options = NonNullable<ParseArgsConfig['options']>;
export type Values = Record<string, string | boolean | undefined>;

/** Strict parse: unknown options and missing values are usage errors, never ignored. */
export function parse(args: string[], options: Options): { values: Values; positionals: string[] } {
  try {
    const r = parseArgs({ args, options: { help: { type: 'boolean', short: 'h' }, ...options }, allowPositionals: true, strict: true });
    return { values: r.values as Values, positionals: r.positionals };
  } catch (e) {
    throw new UsageError((e as Error).message);
  }
}

export function str(values: Values, name: string): string | undefined {
  const v = values[name];
  return typeof v === 'string' ? v : undefined;
}

export function required(values: Values, name: string, fallback?: string): string {
  const v = str(values, name) ?? fallback;
  if (v === undefined || v === '') throw new UsageError(`--${name} is required`);
  return v;
}

export function int(values: Values, name: string): number | undefined {
  const v = str(values, name);
  if (v === undefined) return undefined;
  if (!/^-?\d+$/.test(v)) throw new UsageError(`--${name} must be an integer (got "${v}")`);
  return Number(v);
}

const TRUE = new Set(['true', 'on', 'yes', '1']);
const FALSE = new Set(['false', 'off', 'no', '0']);

export function bool(values: Values, name: string): boolean | undefined {
  const v = str(values, name);
  if (v === undefined) return undefined;
  if (TRUE.has(v.toLowerCase())) return true;
  if (FALSE.has(v.toLowerCase())) return false;
  throw new UsageError(`--${name} must be true or false (or on/off, yes/no, 1/0; got "${v}")`);
}

/** Exactly `n` positional arguments, named for the error message. */
export function positionals(list: string[], names: string[]): string[] {
  if (list.length !== names.length) {
    throw new UsageError(`expected ${names.map((n) => `<${n}>`).join(' ') || 'no arguments'}, got ${list.length ? list.join(' ') : 'none'}`);
  }
  return list;
}

/** JSON given inline, as @file, or - for standard input. */
export async function readData(spec: string, io: Io): Promise<string> {
  if (spec === '-') return io.readStdin();
  if (spec.startsWith('@')) {
    const { readFile } = await import('node:fs/promises');
    return readFile(spec.slice(1), 'utf8');
  }
  return spec;
}

export function parseJson(text: string, what: string): unknown {
  try {
    return JSON.parse(text);
  } catch (e) {
    throw new UsageError(`${what} is not valid JSON: ${(e as Error).message}`);
  }
}

/** A JSON object given with --data, merged under the command's own flags. */
export async function dataObject(values: Values, io: Io): Promise<Record<string, unknown>> {
  const spec = str(values, 'data');
  if (spec === undefined) return {};
  const v = parseJson(await readData(spec, io), '--data');
  if (v === null || typeof v !== 'object' || Array.isArray(v)) throw new UsageError('--data must be a JSON object');
  return v as Record<string, unknown>;
}

/** Drops undefined fields, so only the flags given are sent. */
export function defined(obj: Record<string, unknown>): Record<string, unknown> {
  return Object.fromEntries(Object.entries(obj).filter(([, v]) => v !== undefined));
}

/** A top-level command (or group of sub-commands): `combo-platform <name> ...`. */
export interface Command {
  name: string;
  /** One line for the command list. */
  summary: string;
  /** The full usage text (`<name> --help`). */
  help: string;
  run(args: string[], io: Io): Promise<number>;
}

type SubHandler = (args: string[], io: Io) => Promise<number>;

/** Dispatches `<group> <sub> ...` to its handler; a missing or unknown sub is a usage error. */
export function group(subs: Record<string, SubHandler>): (args: string[], io: Io) => Promise<number> {
  return async ([sub, ...rest], io) => {
    const handler = sub === undefined ? undefined : subs[sub];
    if (!handler) throw new UsageError(sub === undefined ? `a sub-command is needed: ${Object.keys(subs).join(', ')}` : `unknown sub-command "${sub}"`);
    return handler(rest, io);
  };
}
