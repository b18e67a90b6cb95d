/**
 * Shared set-up for integration tests: one real local cluster per test file, stopped after the file's
 * tests, with every component's log printed if any test in the file failed.
 */
import { after, afterEach } from 'node:test';
import { ApiException } from '@kubernetes/client-node';
import { type ClusterOptions, type LocalCluster, startCluster } from '../../src/sim/cluster/cluster.ts';

export async function useCluster(options: ClusterOptions = {}): Promise<LocalCluster> {
  const cluster = await startCluster(options);
  let failed = false;
  afterEach((t) => {
    // TestContext.passed exists since Node 21.7 but is missing from @types/node.
    if ((t as { passed?: boolean }).passed === false) failed = true;
  });
  after(async () => {
    if (failed) {
      process.stderr.write(`\n=== local cluster logs (a test failed) ===\n${cluster.logTails(60)}\n`);
    }
    await cluster.stop();
  });
  return cluster;
}

/** The HTTP status of a failed API call; fails the test if the call succeeded. */
export async function statusOf(call: Promise<unknown>): Promise<number> {
  try {
    await call;
  } catch (err) {
    if (err instanceof ApiException) return err.code;
    throw err;
  }
  throw new Error('expected the API call to fail, but it succeeded');
}
