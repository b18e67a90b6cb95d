/**
 * Helm as the project's tests, benchmarks and demo run it: the binary build.ts builds from its Go module,
 * with its cache, config and data directories under a home of the caller's (never the user's).
 */
import { type SpawnSyncReturns, spawnSync } from 'node:child_process';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { ensureHelm } from './build.ts';

/** The chart in this checkout. */
export const CHART_DIR = fileURLToPath(new URL('../../deploy/chart', import.meta.url));

export type Helm = (...args: string[]) => SpawnSyncReturns<string>;

/** Helm (built first if missing) keeping its state under `home`; each call times out after 2 minutes. */
export async function helmIn(home: string): Promise<Helm> {
  const { path } = await ensureHelm();
  const env = {
    ...process.env,
    HELM_CACHE_HOME: join(home, 'cache'),
    HELM_CONFIG_HOME: join(home, 'config'),
    HELM_DATA_HOME: join(home, 'data'),
  };
  return (...args) => spawnSync(path, args, { encoding: 'utf8', env, timeout: 120_000 });
}
