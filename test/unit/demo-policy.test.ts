import assert from 'node:assert/strict';
import { test } from 'node:test';
import { resolvePolicy } from '../../src/policy/resolve.ts';
import { windowState } from '../../src/policy/windows.ts';
import { type DemoOptions, demoPolicy } from '../../src/sim/demo.ts';

const options = { maxUnavailable: 3, maxUnavailablePerZone: 1, soakMs: 2000 } as DemoOptions;

test("the demo's policy resolves, and its window is open from now for at least two hours, midnight too", () => {
  for (const at of ['2026-11-25T08:30:00Z', '2026-11-29T23:10:00Z', '2028-02-29T21:59:00Z']) {
    const now = new Date(at);
    const resolved = resolvePolicy({ metadata: { name: 'demo' }, spec: demoPolicy(options, now) });
    assert.ok(resolved.ok, `${at}: ${JSON.stringify(!resolved.ok && resolved.errors)}`);
    const { policy } = resolved;
    assert.deepEqual(policy.maxUnavailablePerZone, { kind: 'count', value: 1 });
    assert.equal(policy.reboot.soakMs, 2000);
    for (const later of [0, 60, 119]) {
      const t = new Date(now.getTime() + later * 60_000);
      assert.equal(windowState(policy.windows, t).open, true, `${at} + ${later} min`);
    }
    const shut = new Date(now.getTime() + 4 * 3_600_000);
    assert.equal(windowState(policy.windows, shut).open, false, `${at} + 4 h: closed`);
  }
});
