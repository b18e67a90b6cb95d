/** Shared by the maintenance-window tests: parse a spec and check windowState at instants. */
import assert from 'node:assert/strict';
import type { Windows } from '../../src/api/update-policy.ts';
import { windowState } from '../../src/policy/windows.ts';
import { type ParsedWindows, parseWindows } from '../../src/policy/windows-parse.ts';

export function parsed(spec: Windows): ParsedWindows {
  const result = parseWindows(spec);
  if (!result.ok) assert.fail(`spec did not parse: ${JSON.stringify(result.errors)}`);
  return result.windows;
}

/** One instant's expected answer; an absent changesAt/nextOpen must be absent in the answer too. */
export interface Case {
  at: string;
  open: boolean;
  changesAt?: string;
  nextOpen?: string;
  reason?: string;
}

export function checkCases(name: string, spec: Windows, cases: Case[]): void {
  const windows = parsed(spec);
  for (const c of cases) {
    const state = windowState(windows, new Date(c.at));
    const label = `${name} at ${c.at}`;
    assert.equal(state.open, c.open, `${label}: open`);
    assert.equal(state.changesAt?.toISOString(), c.changesAt, `${label}: changesAt`);
    assert.equal(state.nextOpen?.toISOString(), c.nextOpen, `${label}: nextOpen`);
    if (c.reason !== undefined) assert.equal(state.reason, c.reason, `${label}: reason`);
  }
}

export const closedUntil = (at: string, next: string): Case => ({
  at,
  open: false,
  changesAt: next,
  nextOpen: next,
});
export const openUntil = (at: string, end: string): Case => ({ at, open: true, changesAt: end });

export const berlin = 'Europe/Berlin';
export const newYork = 'America/New_York';
