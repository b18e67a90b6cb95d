/**
 * CEL expressions of an UpdatePolicy (its health checks), on @bufbuild/cel: the CEL of cel-go and the
 * Kubernetes API server (RE2 regular expressions, the conformance suite's semantics), with the strings
 * extension Kubernetes enables. Compiling finds syntax errors; an expression that names an unknown
 * function or variable fails when it runs, and a check fails closed on that error.
 */
import { type CelInput, celEnv, isCelError, parse, plan } from '@bufbuild/cel';
import { strings } from '@bufbuild/cel/ext';

/** What an expression gave: its value, or the error it stopped on. */
export type CelOutcome = { ok: true; value: unknown } | { ok: false; error: string };

/** Runs the expression on its variables' values (celValue turns JSON into them). */
export type CelProgram = (bindings: Record<string, CelInput>) => CelOutcome;

const ENV = celEnv({ funcs: strings });

/** The expression compiled; throws an Error saying where it does not parse. */
export function compileCel(expression: string): CelProgram {
  const run = plan(ENV, parse(expression));
  return (bindings) => {
    try {
      const value = run(bindings);
      return isCelError(value) ? { ok: false, error: value.message } : { ok: true, value };
    } catch (err) {
      return { ok: false, error: err instanceof Error ? err.message : String(err) };
    }
  };
}

/**
 * JSON as CEL reads it: a whole number is an int, as an integer field of a Kubernetes schema is (so
 * `object.status.readyReplicas + 1` works); other numbers are doubles. CEL compares ints and doubles by
 * value, so `== 3` and `== 3.0` agree either way.
 */
export function celValue(json: unknown): CelInput {
  if (typeof json === 'number') return Number.isSafeInteger(json) ? BigInt(json) : json;
  if (Array.isArray(json)) return json.map(celValue);
  if (json !== null && typeof json === 'object') {
    return new Map(Object.entries(json).map(([k, v]) => [k, celValue(v)]));
  }
  return json as CelInput;
}
