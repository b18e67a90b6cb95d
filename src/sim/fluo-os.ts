/**
 * The Flatcar host a simulated node plays for FLUO's update-agent (fluo-agent.ts): its version, the update
 * update_engine staged, and the files and status the agent reads. Pure, so the rules are tested apart.
 */
import type { FlatcarStatus } from './os/services.ts';

/** The version a simulated Flatcar host boots first (the one nuo's own image test reports). */
export const FIRST_FLATCAR_VERSION = '4152.2.0';

export interface FlatcarOs {
  /** The version running now: /etc/os-release's VERSION. */
  version: string;
  /** The version update_engine downloaded and installed, booted by the next reboot. */
  staged?: string;
}

/** The release after `version`: its last number plus one (4152.2.0 → 4152.2.1). */
export function nextVersion(version: string): string {
  const parts = version.split('.');
  const last = Number(parts.at(-1));
  if (!Number.isInteger(last)) throw new Error(`cannot tell the release after "${version}"`);
  return [...parts.slice(0, -1), String(last + 1)].join('.');
}

/** The host needing a reboot means an update is staged: the next release, unless one already is. */
export function staged(os: FlatcarOs, needsReboot: boolean): FlatcarOs {
  if (!needsReboot || os.staged) return os;
  return { ...os, staged: nextVersion(os.version) };
}

/**
 * A new boot runs the staged version, unless the host still needs a reboot (the update did not take:
 * RebootBehaviour.needSurvives), when it stays staged.
 */
export function booted(os: FlatcarOs, needsReboot: boolean): FlatcarOs {
  if (needsReboot || !os.staged) return os;
  return { version: os.staged };
}

/** What update_engine reports: the update staged and waiting for a reboot, or idle. */
export function updateEngineStatus(os: FlatcarOs, needsReboot: boolean, now: Date): FlatcarStatus {
  const lastCheckedTime = BigInt(Math.floor(now.getTime() / 1000));
  if (needsReboot && os.staged) {
    return {
      lastCheckedTime,
      progress: 0,
      currentOperation: 'UPDATE_STATUS_UPDATED_NEED_REBOOT',
      newVersion: os.staged,
      newSize: 1n << 28n,
    };
  }
  return {
    lastCheckedTime,
    progress: 0,
    currentOperation: 'UPDATE_STATUS_IDLE',
    newVersion: '',
    newSize: 0n,
  };
}

/** /etc/os-release as Flatcar writes it; the agent labels the node with its ID and VERSION. */
export function osRelease(version: string): string {
  return [
    'NAME="Flatcar Container Linux by Kinvolk"',
    'ID=flatcar',
    'ID_LIKE=coreos',
    `VERSION=${version}`,
    `VERSION_ID=${version}`,
    `PRETTY_NAME="Flatcar Container Linux by Kinvolk ${version}"`,
    '',
  ].join('\n');
}

/** An update.conf naming the update group (/usr/share/flatcar's default, /etc/flatcar's override). */
export function updateConf(group: string): string {
  if (!/^[A-Za-z0-9._-]+$/.test(group)) throw new Error(`update group "${group}" is not a plain name`);
  return `GROUP=${group}\n`;
}
