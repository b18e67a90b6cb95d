/**
 * Several detectors as one: a reboot is needed if any of them says so. "unknown" only matters when none
 * says "needed" — then the combined answer is unknown, with every unknown detector's reason — and "not
 * needed" requires every detector to say so. The first update-engine status found is passed through so the
 * agent can mirror it on the node.
 */
import { type Detection, type Detector, Need } from '../os.ts';

export class AnyDetector implements Detector {
  readonly name: string;
  readonly detectors: readonly Detector[];

  constructor(detectors: readonly Detector[], name = 'any') {
    if (!Array.isArray(detectors) || detectors.length === 0) {
      throw new Error('any detector: at least one detector is required');
    }
    for (const [i, d] of detectors.entries()) {
      if (!d || typeof d.check !== 'function' || typeof d.name !== 'string') {
        throw new Error(`any detector: item ${i} is not a detector`);
      }
    }
    this.detectors = [...detectors];
    this.name = name;
  }

  async check(): Promise<Detection> {
    const results = await Promise.all(
      this.detectors.map(async (d): Promise<[Detector, Detection]> => {
        try {
          return [d, await d.check()];
        } catch (err) {
          // Detectors must not reject; if one does anyway, that is an unknown, not a crash.
          return [
            d,
            {
              need: Need.unknown,
              reason: `check failed: ${err instanceof Error ? err.message : String(err)}`,
            },
          ];
        }
      }),
    );
    const reasons = (need: Need) =>
      results.filter(([, r]) => r.need === need).map(([d, r]) => `${d.name}: ${r.reason}`);
    const update = results.find(([, r]) => r.update !== undefined)?.[1].update;
    const withUpdate = (detection: Detection): Detection => (update ? { ...detection, update } : detection);
    const needed = reasons(Need.needed);
    if (needed.length > 0) return withUpdate({ need: Need.needed, reason: needed.join('; ') });
    const unknown = reasons(Need.unknown);
    if (unknown.length > 0) return withUpdate({ need: Need.unknown, reason: unknown.join('; ') });
    return withUpdate({ need: Need.notNeeded, reason: reasons(Need.notNeeded).join('; ') });
  }

  watch(onChange: () => void): () => void {
    const stops: Array<() => void> = [];
    for (const d of this.detectors) {
      if (typeof d.watch === 'function') stops.push(d.watch(onChange));
    }
    return () => {
      for (const stop of stops.splice(0)) stop();
    };
  }

  /** Closes the detectors that hold resources (D-Bus connections). */
  close(): void {
    for (const d of this.detectors) (d as { close?: () => void }).close?.();
  }
}
