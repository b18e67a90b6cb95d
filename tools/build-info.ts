/**
 * Records the build's revision in the compiled output (`npm run build` runs it after tsc):
 *
 *   node tools/build-info.ts [OUT_DIR]     writes OUT_DIR/build-info.json (default dist)
 *
 * The revision is $NUO_REVISION when set (a container build without .git passes it in), else the
 * checkout's git HEAD ("-dirty" with uncommitted changes), else "unknown".
 */
import { writeFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { BUILD_INFO_FILE, describeGit, packageRoot, readGit } from '../src/util/build-info.ts';

const root = fileURLToPath(new URL('..', import.meta.url));

/** The revision a build from this checkout records. */
export function checkoutRevision(): string {
  return process.env.NUO_REVISION?.trim() || describeGit(readGit(root));
}

export function writeBuildInfo(outDir: string): { version: string; revision: string } {
  const version = packageRoot(root)?.version;
  if (!version) throw new Error(`${root}: no package.json named nuo with a version`);
  const info = { version, revision: checkoutRevision() };
  writeFileSync(join(outDir, BUILD_INFO_FILE), `${JSON.stringify(info, null, 2)}\n`);
  return info;
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  const out = resolve(process.argv[2] ?? join(root, 'dist'));
  const info = writeBuildInfo(out);
  process.stdout.write(`${join(out, BUILD_INFO_FILE)}: nuo ${info.version}, revision ${info.revision}\n`);
}
