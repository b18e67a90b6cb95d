/**
 * Patch content types, always set explicitly: @kubernetes/client-node otherwise sends JSON Patch,
 * which silently misreads a merge-patch body.
 */
import { PatchStrategy, setHeaderOptions } from '@kubernetes/client-node';

export const mergePatch = setHeaderOptions('Content-Type', PatchStrategy.MergePatch);
export const strategicMergePatch = setHeaderOptions('Content-Type', PatchStrategy.StrategicMergePatch);
