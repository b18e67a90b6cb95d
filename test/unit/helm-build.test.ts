import assert from 'node:assert/strict';
import { test } from 'node:test';
import { helmLdflags } from '../../tools/helm/build.ts';

test("Helm's ldflags name its version and the Kubernetes minor its client-go stands for", () => {
  const flags = helmLdflags('v3.19.2', 'v0.34.1').split(' -X ');
  assert.ok(flags.includes('helm.sh/helm/v3/internal/version.version=v3.19.2'), flags.join('\n'));
  for (const pkg of ['helm.sh/helm/v3/pkg/lint/rules', 'helm.sh/helm/v3/pkg/chartutil']) {
    assert.ok(flags.includes(`${pkg}.k8sVersionMajor=1`), `${pkg} major`);
    assert.ok(flags.includes(`${pkg}.k8sVersionMinor=34`), `${pkg} minor`);
  }
});

test('a client-go version without a minor is an error naming it', () => {
  assert.throws(() => helmLdflags('v3.19.2', 'v0'), /k8s\.io\/client-go v0/);
});
