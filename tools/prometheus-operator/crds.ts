/**
 * prometheus-operator's ServiceMonitor and PrometheusRule CRDs, from its Go module at the version the
 * go.mod beside this file pins (downloaded through the Go module proxy into Go's module cache, checked
 * against go.sum). Returns the CRD files' paths.
 */
import { execFile } from 'node:child_process';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';

const MODULE = 'github.com/prometheus-operator/prometheus-operator';
const here = fileURLToPath(new URL('.', import.meta.url));

export async function prometheusOperatorCrds(): Promise<string[]> {
  const { stdout } = await promisify(execFile)('go', ['mod', 'download', '-json', MODULE], {
    cwd: here,
    env: { ...process.env, GOFLAGS: '-mod=readonly' },
  }).catch((err: Error & { stdout?: string; stderr?: string }) => {
    throw new Error(`go mod download ${MODULE} (in ${here}): ${err.message}\n${err.stdout ?? ''}`);
  });
  const { Dir, Error: error } = JSON.parse(stdout) as { Dir?: string; Error?: string };
  if (!Dir) throw new Error(`go mod download ${MODULE}: ${error ?? 'no directory'}`);
  return ['servicemonitors', 'prometheusrules'].map((plural) =>
    join(Dir, 'example', 'prometheus-operator-crd', `monitoring.coreos.com_${plural}.yaml`),
  );
}
