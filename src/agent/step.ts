/**
 * The agent's decision for one look at its node: pure, so every case of safety rule 6 (no reboot loops)
 * is a table test. Inputs are the node's annotations and the agent's own facts; output is at most one
 * patch of the agent's own keys and whether to reboot now.
 */
import { GrantCheck, type GrantVerdict } from '../api/grant.ts';
import { Annotations } from '../api/keys.ts';
import { Phase } from '../api/phases.ts';
import { type Detection, Need } from './os.ts';

export interface StepInput {
  annotations: Record<string, string>;
  bootId: string;
  /** The node's `nuo.dev/reboot-ok` checked against the operator's key; undefined when there is none. */
  grant: GrantVerdict | undefined;
  detection: Detection;
  /** This agent process already asked its Rebooter to reboot. */
  rebootRequested: boolean;
  /** The node is cordoned (`spec.unschedulable`): a drained node stays so until its attempt ends. */
  unschedulable: boolean;
  /** When the current boot began (RFC 3339), reported with the need; absent: not known, not reported. */
  bootTime?: string;
}

export interface Step {
  /** Annotation changes (null removes); only the agent's keys. */
  patch?: Record<string, string | null>;
  /** Call the Rebooter after the patch succeeded. */
  reboot?: boolean;
  log?: { level: 'info' | 'warn'; message: string };
}

/**
 * The operator's phases in which a reboot is granted or under way, or failed: the agent's marker must
 * stay. A Failed node that comes back is recovered by its changed boot ID, which only the marker records.
 */
const REBOOT_PHASES: ReadonlySet<string> = new Set([Phase.rebootGranted, Phase.rebooting, Phase.failed]);

/** Marks a grant the node outlived without rebooting for it: the operator sees a changed boot ID. */
export const REBOOTED_BEFORE_GRANT = 'rebooted-before-grant';

function needPatch(
  a: Record<string, string>,
  d: Detection,
  boot: { bootId: string; bootTime?: string | undefined },
): Record<string, string | null> {
  const patch: Record<string, string | null> = {};
  const set = (key: string, value: string | null) => {
    if ((a[key] ?? null) !== value) patch[key] = value;
  };
  // The boot time with the boot it belongs to; one this boot cannot read replaces none of an earlier
  // boot's: that is removed, so no refresh is asked for on a time that is not this boot's.
  if (boot.bootTime !== undefined) {
    set(Annotations.bootTime, boot.bootTime);
    set(Annotations.bootTimeBootId, boot.bootId);
  } else if (a[Annotations.bootTime] !== undefined && a[Annotations.bootTimeBootId] !== boot.bootId) {
    set(Annotations.bootTime, null);
    set(Annotations.bootTimeBootId, null);
  }
  // Unknown changes nothing: an error is never a reason to reboot, nor to forget a real need.
  if (d.need === Need.needed) {
    set(Annotations.rebootNeeded, 'true');
    set(Annotations.rebootNeededReason, d.reason);
  } else if (d.need === Need.notNeeded) {
    set(Annotations.rebootNeeded, null);
    set(Annotations.rebootNeededReason, null);
  }
  if (d.update) {
    set(Annotations.status, d.update.status);
    if (d.update.newVersion !== undefined) set(Annotations.newVersion, d.update.newVersion);
    if (d.update.lastCheckedTime) set(Annotations.lastCheckedTime, d.update.lastCheckedTime.toISOString());
  }
  return patch;
}

export function agentStep(input: StepInput): Step {
  const a = input.annotations;
  /** Any value, the operator's or not, until it is withdrawn. */
  const grantShown = a[Annotations.rebootOk] !== undefined;
  const granted = input.grant?.check === GrantCheck.valid;
  const inProgress = a[Annotations.rebootInProgress] === 'true';
  const before = a[Annotations.bootIdBefore];

  if (inProgress && before !== input.bootId) {
    // After the boot. Keep the marker until the operator has moved the node past the reboot (the grant
    // withdrawn, the phase on), so neither a grant nor its absence is ever taken for a reboot still to
    // come: a grant removed by someone else must not read as "not rebooted yet". Then clear it together
    // with a fresh reboot-needed.
    if (grantShown || REBOOT_PHASES.has(a[Annotations.state] ?? '')) return {};
    return {
      patch: {
        [Annotations.rebootInProgress]: null,
        [Annotations.bootIdBefore]: null,
        // A problem reported about the reboot (it did not happen in time) is over: the node rebooted.
        ...(a[Annotations.agentProblem] === undefined ? {} : { [Annotations.agentProblem]: null }),
        ...needPatch(a, input.detection, input),
      },
      log: { level: 'info', message: `back after reboot (boot ${input.bootId}, before ${before})` },
    };
  }
  // Someone uncordoned the node since its drain (pods may be scheduled onto it again): never reboot it
  // so; the operator cordons it again and drains it once more.
  if (granted && !input.unschedulable && !input.rebootRequested) {
    return {
      log: {
        level: 'warn',
        message: 'granted, but the node is schedulable (uncordoned since its drain): not rebooting',
      },
    };
  }
  if (inProgress) {
    // Same boot: the reboot was asked for but has not happened. Ask once per agent process (the agent
    // may have restarted between writing the marker and calling the Rebooter).
    if (granted && !input.rebootRequested) {
      return {
        reboot: true,
        log: { level: 'warn', message: 'reboot-in-progress but still the same boot: rebooting again' },
      };
    }
    return {};
  }
  if (input.grant?.check === GrantCheck.otherBoot && a[Annotations.state] === Phase.rebootGranted) {
    // The node rebooted since the operator gave the grant (not through this agent): that reboot counts.
    // Outside RebootGranted such a grant is an old one copied back (a restored backup): ignored.
    return {
      patch: { [Annotations.rebootInProgress]: 'true', [Annotations.bootIdBefore]: REBOOTED_BEFORE_GRANT },
      log: {
        level: 'warn',
        message: `the grant is for an earlier boot (${input.grant.why}): not rebooting again`,
      },
    };
  }
  if (granted) {
    if (input.rebootRequested) return {};
    return {
      patch: { [Annotations.rebootInProgress]: 'true', [Annotations.bootIdBefore]: input.bootId },
      reboot: true,
    };
  }
  // A grant the operator did not give is no grant: the need is reported as if it were not there.
  const patch = needPatch(a, input.detection, input);
  const forged =
    input.grant?.check === GrantCheck.forged
      ? { log: { level: 'warn' as const, message: `ignoring nuo.dev/reboot-ok: ${input.grant.why}` } }
      : {};
  return Object.keys(patch).length > 0 ? { patch, ...forged } : forged;
}
