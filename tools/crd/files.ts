/**
 * The CRD manifests as files under deploy/: path and exact text (tools/crd/generate.ts writes them).
 * Each CRD is written twice, byte for byte: into the kustomize base and into the Helm chart's crds/,
 * which Helm installs before the chart's templates (a chart cannot read files outside its directory).
 */
import { fileURLToPath } from 'node:url';
import { stringify } from 'yaml';
import { updatePolicyCrd } from '../../src/api/crd.ts';

const HEADER =
  '# Generated from src/api/update-policy.ts by `npm run generate:crds`: edit the types, not this file.\n';

export function crdFiles(): { path: string; text: string }[] {
  const text = HEADER + stringify(updatePolicyCrd(), { lineWidth: 0 });
  return ['base', 'chart/crds'].map((dir) => ({
    path: fileURLToPath(new URL(`../../deploy/${dir}/updatepolicy-crd.yaml`, import.meta.url)),
    text,
  }));
}
