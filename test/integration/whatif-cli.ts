/** Runs `nuo` as a user would, for the whatif integration tests: exit code and both outputs. */
import { execFile } from 'node:child_process';
import { fileURLToPath } from 'node:url';

const nuoBin = fileURLToPath(new URL('../../bin/nuo.js', import.meta.url));

export function nuo(
  args: readonly string[],
  timeoutMs = 120_000,
): Promise<{ code: number; stdout: string; stderr: string }> {
  return new Promise((resolve) => {
    execFile(
      process.execPath,
      [nuoBin, ...args],
      { timeout: timeoutMs, maxBuffer: 64 * 2 ** 20 },
      (err, stdout, stderr) => {
        resolve({ code: err ? (typeof err.code === 'number' ? err.code : -1) : 0, stdout, stderr });
      },
    );
  });
}
