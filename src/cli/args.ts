/** Flag value parsing shared by the commands (kept free of heavy imports: `nuo agent` uses it). */
import { parseDuration } from '../util/duration.ts';
import { UsageError } from './command.ts';

export function positiveInt(flag: string, value: string | undefined, fallback: number, min = 0): number {
  if (value === undefined) return fallback;
  const n = Number(value);
  if (!/^\d+$/.test(value) || !Number.isSafeInteger(n) || n < min) {
    throw new UsageError(`--${flag} must be an integer ≥ ${min}, got "${value}"`);
  }
  return n;
}

export function durationFlag(flag: string, value: string | undefined, fallback: string): number {
  try {
    return parseDuration(value ?? fallback);
  } catch (err) {
    throw new UsageError(`--${flag}: ${(err as Error).message}`);
  }
}

export function intList(flag: string, value: string | undefined, fallback: number[]): number[] {
  if (value === undefined) return fallback;
  const parts = value.split(',').map((s) => s.trim());
  if (parts.some((p) => !/^\d+$/.test(p)))
    throw new UsageError(`--${flag} must be comma-separated exit codes, got "${value}"`);
  return parts.map(Number);
}

/** Splits a command line on spaces (no shell quoting: pass arguments without spaces). */
export function argv(flag: string, value: string | undefined, fallback: readonly string[]): string[] {
  if (value === undefined) return [...fallback];
  const words = value.split(/\s+/).filter(Boolean);
  if (words.length === 0) throw new UsageError(`--${flag} must not be empty`);
  return words;
}
