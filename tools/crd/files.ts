/**
 * The CRD manifests as files under deploy/: path and exact text (tools/crd/generate.ts writes them).
 * Each CRD is written twice, byte for byte: into the kustomize base and into the Helm chart's crds/,
 * which Helm installs before the chart's templates (a chart cannot read files outside its directory).
 */
import { fileURLToPath } from 'node:url';
import { stringify } from 'yaml';
import { planCrd, updatePolicyCrd } from '../../src/api/crd.ts';

/** The comment, then a document start: concatenated (`helm show crds`), the files stay separate documents. */
const header = (source: string) =>
  `# Generated from ${source} by \`npm run generate:crds\`: edit the types, not this file.\n---\n`;

const CRDS = [
  { file: 'updatepolicy-crd.yaml', source: 'src/api/update-policy.ts', crd: updatePolicyCrd },
  { file: 'plan-crd.yaml', source: 'src/api/plan.ts', crd: planCrd },
];

export function crdFiles(): { path: string; text: string }[] {
  return CRDS.flatMap(({ file, source, crd }) => {
    const text = header(source) + stringify(crd(), { lineWidth: 0 });
    return ['base', 'chart/crds'].map((dir) => ({
      path: fileURLToPath(new URL(`../../deploy/${dir}/${file}`, import.meta.url)),
      text,
    }));
  });
}
