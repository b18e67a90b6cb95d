/**
 * CEL expressions of an UpdatePolicy (its health checks), on @bufbuild/cel: the CEL of cel-go and the
 * Kubernetes API server (RE2 regular expressions, the conformance suite's semantics), with the strings
 * extension Kubernetes enables. Compiling finds syntax errors and names no variable but the declared
 * ones (`self` where `object` is meant is refused, not found on every run); an unknown function fails
 * when it runs, and a check fails closed on that error.
 */
import { type CelInput, celEnv, isCelError, parse, plan } from '@bufbuild/cel';
import { strings } from '@bufbuild/cel/ext';

/** What an expression gave: its value, or the error it stopped on. */
export type CelOutcome = { ok: true; value: unknown } | { ok: false; error: string };

/** Runs the expression on its variables' values (celValue turns JSON into them). */
export type CelProgram = (bindings: Record<string, CelInput>) => CelOutcome;

const ENV = celEnv({ funcs: strings });

type Expr = ReturnType<typeof parse>['expr'];

/** Type names, which CEL writes as identifiers (`type(x) == string`). */
const TYPE_NAMES = new Set([
  'bool',
  'bytes',
  'double',
  'dyn',
  'int',
  'list',
  'map',
  'null_type',
  'string',
  'type',
  'uint',
]);

/**
 * The expression compiled, over these variables; throws an Error saying where it does not parse, or
 * which name it uses that is not one of them.
 */
export function compileCel(expression: string, variables: readonly string[]): CelProgram {
  const parsed = parse(expression);
  const unknown = freeNames(parsed.expr, new Set([...variables, ...TYPE_NAMES]));
  if (unknown.length > 0) {
    throw new Error(
      `unknown name ${unknown.map((n) => JSON.stringify(n)).join(', ')}; it may use ${variables.join(', ')}`,
    );
  }
  const run = plan(ENV, parsed);
  return (bindings) => {
    try {
      const value = run(bindings);
      return isCelError(value) ? { ok: false, error: value.message } : { ok: true, value };
    } catch (err) {
      return { ok: false, error: err instanceof Error ? err.message : String(err) };
    }
  };
}

/** The identifiers an expression uses that are not in scope: neither `known` nor a macro's own variables. */
function freeNames(e: Expr | undefined, known: ReadonlySet<string>): string[] {
  const k = e?.exprKind;
  switch (k?.case) {
    case 'identExpr':
      return known.has(k.value.name) ? [] : [k.value.name];
    case 'selectExpr':
      return freeNames(k.value.operand, known);
    case 'callExpr':
      return [k.value.target, ...k.value.args].flatMap((a) => freeNames(a, known));
    case 'listExpr':
      return k.value.elements.flatMap((a) => freeNames(a, known));
    case 'structExpr':
      return k.value.entries.flatMap((entry) => [
        ...(entry.keyKind.case === 'mapKey' ? freeNames(entry.keyKind.value, known) : []),
        ...freeNames(entry.value, known),
      ]);
    case 'comprehensionExpr': {
      const c = k.value;
      const inner = new Set([...known, c.iterVar, c.iterVar2, c.accuVar]);
      return [
        ...freeNames(c.iterRange, known),
        ...freeNames(c.accuInit, known),
        ...[c.loopCondition, c.loopStep, c.result].flatMap((a) => freeNames(a, inner)),
      ];
    }
    default:
      return [];
  }
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
