/**
 * Builds the VM node image (tools/vm/image.ts) and the programs in it (tools/vm/binaries.ts) into a cache
 * outside the repository, so a second run returns at once.
 *
 *   node tools/vm/build.ts          build whatever is missing, with progress
 *   node tools/vm/build.ts --print  print the image's cache directory and exit (no build of the image)
 */
import { buildCommand } from '../go-build.ts';
import { ensureVmImage, vmImageDir } from './image.ts';

await buildCommand({
  print: vmImageDir,
  build: async () => `VM node image in ${(await ensureVmImage()).dir}`,
});
