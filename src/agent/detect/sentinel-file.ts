/**
 * kured's sentinel file: a reboot is needed while a file exists (Debian/Ubuntu's /var/run/reboot-required,
 * written by unattended-upgrades). The agent sees the host's file system under a host-root prefix (the
 * DaemonSet mounts the host's / at /host), so paths are resolved inside that root: an absolute symbolic link
 * such as /var/run -> /run points to /host/run, not to the container's /run.
 *
 * Present → needed; absent (its directory exists) → not needed; anything else — permission denied, the
 * directory missing (host root not mounted?), a symlink loop — → unknown with the reason.
 */
import type { Stats } from 'node:fs';
import { lstat, readlink, stat } from 'node:fs/promises';
import { join, posix, resolve } from 'node:path';
import { type Detection, type Detector, Need } from '../os.ts';

export const DEFAULT_HOST_ROOT = '/host';
export const DEFAULT_SENTINEL_FILE = '/var/run/reboot-required';
const MAX_SYMLINKS = 40;

function errorCode(err: unknown): string | undefined {
  return err && typeof err === 'object' && 'code' in err && typeof err.code === 'string'
    ? err.code
    : undefined;
}

function errorText(err: unknown): string {
  return err instanceof Error ? err.message : String(err);
}

/**
 * Resolves `path` (absolute, as seen on the host) to a path under `hostRoot`, following symbolic links as
 * if `hostRoot` were "/": absolute targets restart at the root and ".." never climbs above it. A component
 * that does not exist ends the walk (the rest is appended unresolved, so a later stat reports ENOENT).
 * Throws the lstat/readlink error (e.g. EACCES) or an ELOOP error.
 */
export async function resolveInHostRoot(hostRoot: string, path: string): Promise<string> {
  const root = resolve(hostRoot);
  let pending = path.split('/').filter((c) => c !== '');
  let resolved: string[] = [];
  let links = 0;
  while (pending.length > 0) {
    const component = pending.shift() as string;
    if (component === '.') continue;
    if (component === '..') {
      resolved.pop();
      continue;
    }
    const candidate = join(root, ...resolved, component);
    let info: Stats;
    try {
      info = await lstat(candidate);
    } catch (err) {
      const code = errorCode(err);
      if (code === 'ENOENT' || code === 'ENOTDIR') return join(candidate, ...pending);
      throw err;
    }
    if (info.isSymbolicLink()) {
      if (++links > MAX_SYMLINKS) {
        throw Object.assign(new Error(`too many levels of symbolic links resolving ${path} under ${root}`), {
          code: 'ELOOP',
        });
      }
      const target = await readlink(candidate);
      if (target.startsWith('/')) resolved = [];
      pending = [...target.split('/').filter((c) => c !== ''), ...pending];
      continue;
    }
    resolved.push(component);
  }
  return join(root, ...resolved);
}

export interface SentinelFileDetectorOptions {
  /** Where the host's / is mounted in the agent's container. Default /host; "/" when running on the host. */
  hostRoot?: string;
  /** The file, as a path on the host. Default /var/run/reboot-required. */
  path?: string;
}

export class SentinelFileDetector implements Detector {
  readonly name = 'sentinel-file';
  readonly hostRoot: string;
  readonly path: string;

  constructor(options: SentinelFileDetectorOptions = {}) {
    const hostRoot = options.hostRoot ?? DEFAULT_HOST_ROOT;
    const path = options.path ?? DEFAULT_SENTINEL_FILE;
    if (typeof hostRoot !== 'string' || !hostRoot.startsWith('/')) {
      throw new Error(`sentinel file: hostRoot must be an absolute path, got ${JSON.stringify(hostRoot)}`);
    }
    if (typeof path !== 'string' || !path.startsWith('/') || posix.normalize(path) === '/') {
      throw new Error(`sentinel file: path must be an absolute path to a file, got ${JSON.stringify(path)}`);
    }
    this.hostRoot = hostRoot;
    this.path = path;
  }

  async check(): Promise<Detection> {
    const where = this.hostRoot === '/' ? this.path : `${this.path} (under ${this.hostRoot})`;
    try {
      const file = await resolveInHostRoot(this.hostRoot, this.path);
      try {
        await stat(file);
        return { need: Need.needed, reason: `${where} exists` };
      } catch (err) {
        const code = errorCode(err);
        if (code !== 'ENOENT' && code !== 'ENOTDIR') throw err;
      }
      // Absent. That means "not needed" only if its directory is there: a missing directory more likely
      // means the host's root is not mounted where we look.
      const dirPath = posix.dirname(this.path);
      const dir = await resolveInHostRoot(this.hostRoot, dirPath);
      let dirInfo: Stats;
      try {
        dirInfo = await stat(dir);
      } catch (err) {
        const code = errorCode(err);
        if (code === 'ENOENT' || code === 'ENOTDIR') {
          return {
            need: Need.unknown,
            reason: `cannot tell whether ${where} exists: directory ${dirPath} does not exist (is the host's root mounted at ${this.hostRoot}?)`,
          };
        }
        throw err;
      }
      if (!dirInfo.isDirectory()) {
        return {
          need: Need.unknown,
          reason: `cannot tell whether ${where} exists: ${dirPath} is not a directory`,
        };
      }
      return { need: Need.notNeeded, reason: `${where} does not exist` };
    } catch (err) {
      return { need: Need.unknown, reason: `cannot tell whether ${where} exists: ${errorText(err)}` };
    }
  }
}
