/**
 * CLUO's deploy manifests as it ships them (examples/deploy of its Go module at the version the go.mod
 * beside this file pins, downloaded through the Go module proxy into Go's module cache, checked against
 * go.sum), brought to the API versions a current API server serves, as `kubectl convert` would and as a
 * user installing them today must: extensions/v1beta1 DaemonSet and Deployment to apps/v1 (whose
 * required selector is the template's labels), rbac.authorization.k8s.io/v1beta1 to v1. Nothing else
 * changes: the ServiceAccount (the namespace's default), the names, the RBAC.
 */
import { execFile } from 'node:child_process';
import { readdir, readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { parseAllDocuments } from 'yaml';

const MODULE = 'github.com/coreos/container-linux-update-operator';
const here = fileURLToPath(new URL('.', import.meta.url));

type Manifest = Record<string, unknown> & {
  apiVersion?: string;
  kind?: string;
  spec?: { selector?: unknown; template?: { metadata?: { labels?: Record<string, string> } } };
};

/** One shipped object at the API version served today (pure). */
export function served(m: Manifest): Manifest {
  if (m.apiVersion === 'rbac.authorization.k8s.io/v1beta1')
    return { ...m, apiVersion: 'rbac.authorization.k8s.io/v1' };
  if (m.apiVersion === 'extensions/v1beta1' && (m.kind === 'DaemonSet' || m.kind === 'Deployment')) {
    const labels = m.spec?.template?.metadata?.labels;
    if (!labels) throw new Error(`CLUO's ${m.kind} has no template labels to select its pods by`);
    return { ...m, apiVersion: 'apps/v1', spec: { ...m.spec, selector: { matchLabels: labels } } };
  }
  return m;
}

/** CLUO's examples/deploy, every object of its *.yaml files (not the templates), at served API versions. */
export async function cluoManifests(): Promise<Manifest[]> {
  const { stdout } = await promisify(execFile)('go', ['mod', 'download', '-json', MODULE], {
    cwd: here,
    env: { ...process.env, GOFLAGS: '-mod=readonly' },
  }).catch((err: Error & { stdout?: string }) => {
    throw new Error(`go mod download ${MODULE} (in ${here}): ${err.message}\n${err.stdout ?? ''}`);
  });
  const { Dir, Error: error } = JSON.parse(stdout) as { Dir?: string; Error?: string };
  if (!Dir) throw new Error(`go mod download ${MODULE}: ${error ?? 'no directory'}`);
  const deploy = join(Dir, 'examples', 'deploy');
  const files = (await readdir(deploy, { recursive: true })).filter((f) => f.endsWith('.yaml')).sort();
  const out: Manifest[] = [];
  for (const file of files)
    for (const doc of parseAllDocuments(await readFile(join(deploy, file), 'utf8'))) {
      const m = doc.toJS() as Manifest | null;
      if (m) out.push(served(m));
    }
  return out;
}
