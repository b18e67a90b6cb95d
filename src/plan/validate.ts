/**
 * What the API server cannot check in a Plan, as field errors (the operator reports them in the Plan's
 * Validated condition and starts nothing): the schema and its CEL rules again (a Plan stored under an
 * older CRD, or a SUC Plan, whose CRD checks almost nothing), selector semantics, the window's days, times and zone, and that the drain timeout parses.
 */
import { Errors } from 'typebox/value';
import { type PlanSpec, PlanSpec as PlanSpecSchema } from '../api/plan.ts';
import { type LabelSelectorSpec, labelSelector } from '../kube/selector.ts';
import type { FieldError } from '../policy/field-error.ts';
import { parseDuration } from '../util/duration.ts';
import { celErrors } from './cel-rules.ts';
import { planWindow } from './window.ts';

export function validatePlan(spec: PlanSpec): FieldError[] {
  const schema = [...Errors(PlanSpecSchema, spec)].map((e) => ({
    field: e.instancePath.replace(/^\//, '').replaceAll('/', '.') || 'spec',
    message: e.message,
  }));
  if (schema.length > 0) return schema;
  const rules = celErrors(PlanSpecSchema, spec);
  if (rules.length > 0) return rules;
  const errors = [
    ...selectorErrors('nodeSelector', spec.nodeSelector),
    ...selectorErrors('drain.podSelector', spec.drain?.podSelector),
  ];
  if (spec.window) {
    const window = planWindow(spec.window);
    if (!window.ok) errors.push(...window.errors);
  }
  const timeout = spec.drain?.timeout;
  if (typeof timeout === 'string') {
    try {
      parseDuration(timeout);
    } catch (err) {
      errors.push({ field: 'drain.timeout', message: (err as Error).message });
    }
  }
  if (spec.postCompleteDelay !== undefined) {
    try {
      parseDuration(spec.postCompleteDelay);
    } catch (err) {
      errors.push({ field: 'postCompleteDelay', message: (err as Error).message });
    }
  }
  return errors;
}

function selectorErrors(field: string, selector: LabelSelectorSpec | undefined): FieldError[] {
  if (!selector) return [];
  try {
    labelSelector(selector);
    return [];
  } catch (err) {
    return [{ field, message: (err as Error).message }];
  }
}
