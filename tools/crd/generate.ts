/**
 * Writes the CustomResourceDefinitions under deploy/ from the types that define them (src/api/crd.ts).
 * `--check` writes nothing and fails when a file differs from what would be written.
 */
import { readFileSync, writeFileSync } from 'node:fs';
import { crdFiles } from './files.ts';

const check = process.argv.includes('--check');
let stale = 0;
for (const { path, text } of crdFiles()) {
  const current = (() => {
    try {
      return readFileSync(path, 'utf8');
    } catch {
      return undefined;
    }
  })();
  if (current === text) continue;
  if (check) {
    console.error(`${path} is out of date: run npm run generate:crds`);
    stale++;
  } else {
    writeFileSync(path, text);
    console.log(`wrote ${path}`);
  }
}
process.exitCode = stale > 0 ? 1 : 0;
