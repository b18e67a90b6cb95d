/** Helm for tests (tools/helm/run.ts), its home a temporary directory removed after the test file. */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after } from 'node:test';
import { type Helm, helmIn } from '../../tools/helm/run.ts';

export async function useHelm(): Promise<Helm> {
  const home = mkdtempSync(join(tmpdir(), 'nuo-helm-test-'));
  after(() => rmSync(home, { recursive: true, force: true }));
  return helmIn(home);
}
