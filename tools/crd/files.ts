/** The CRD manifests as files under deploy/: path and exact text (tools/crd/generate.ts writes them). */
import { fileURLToPath } from 'node:url';
import { stringify } from 'yaml';
import { updatePolicyCrd } from '../../src/api/crd.ts';

const HEADER =
  '# Generated from src/api/update-policy.ts by `npm run generate:crds`: edit the types, not this file.\n';

export function crdFiles(): { path: string; text: string }[] {
  const path = fileURLToPath(new URL('../../deploy/base/updatepolicy-crd.yaml', import.meta.url));
  return [{ path, text: HEADER + stringify(updatePolicyCrd(), { lineWidth: 0 }) }];
}
