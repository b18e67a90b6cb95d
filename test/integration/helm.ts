/**
 * Helm for tests: the binary tools/helm/build.ts builds from its Go module, run with its cache, config
 * and data directories in a temporary directory (never the user's), removed after the test file.
 */
import { type SpawnSyncReturns, spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after } from 'node:test';
import { fileURLToPath } from 'node:url';
import { ensureHelm } from '../../tools/helm/build.ts';

export const CHART_DIR = fileURLToPath(new URL('../../deploy/chart', import.meta.url));

export type Helm = (...args: string[]) => SpawnSyncReturns<string>;

export async function useHelm(): Promise<Helm> {
  const { path } = await ensureHelm();
  const home = mkdtempSync(join(tmpdir(), 'nuo-helm-test-'));
  after(() => rmSync(home, { recursive: true, force: true }));
  const env = {
    ...process.env,
    HELM_CACHE_HOME: join(home, 'cache'),
    HELM_CONFIG_HOME: join(home, 'config'),
    HELM_DATA_HOME: join(home, 'data'),
  };
  return (...args) => spawnSync(path, args, { encoding: 'utf8', env, timeout: 120_000 });
}
