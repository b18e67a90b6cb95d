/** `nuo whatif run … -o json` as a user runs it, for the benchmarks that compare its prediction. */
import { spawn } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import type { RunOutput } from '../src/cli/whatif-run.ts';

const nuoBin = fileURLToPath(new URL('../bin/nuo.js', import.meta.url));

/**
 * Runs `nuo whatif run` with `flags` and `-o json`; its report (a rollout that did not finish, exit 3,
 * included). Each line it prints on stderr goes to `log`. Rejects on any other exit, with its last lines.
 */
export function whatifRun(flags: string[], log: (line: string) => void): Promise<RunOutput> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [nuoBin, 'whatif', 'run', ...flags, '-o', 'json'], {
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (d) => {
      stdout += d;
    });
    child.stderr.on('data', (d) => {
      stderr += d;
      for (const line of String(d).trimEnd().split('\n')) log(line);
    });
    child.on('error', reject);
    child.on('close', (code) => {
      if (code !== 0 && code !== 3)
        return reject(
          new Error(`nuo whatif run exited ${code}:\n${stderr.split('\n').slice(-20).join('\n')}`),
        );
      resolve(JSON.parse(stdout) as RunOutput);
    });
  });
}
