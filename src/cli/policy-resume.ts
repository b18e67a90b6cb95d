/**
 * `nuo policy resume NAME`: lets a pool halted by its failure budget go on. It records on the
 * UpdatePolicy when, and who as the API server authenticated them (a SelfSubjectReview); the operator
 * counts no failed attempt seen before that time.
 */
import { CustomObjectsApi, type KubeConfig } from '@kubernetes/client-node';
import { API_GROUP, API_VERSION, UPDATE_POLICY } from '../api/crd.ts';
import { PolicyAnnotations } from '../api/keys.ts';
import { statusCode } from '../kube/errors.ts';
import { mergePatch } from '../kube/patch.ts';
import { whoAmI } from './who-am-i.ts';

/** Writes the resume annotations; returns what was recorded, or throws (404: no such policy). */
export async function resumePolicy(
  kc: KubeConfig,
  name: string,
  now: Date,
): Promise<{ by: string; at: string }> {
  const by = await whoAmI(kc);
  const at = now.toISOString();
  await kc.makeApiClient(CustomObjectsApi).patchClusterCustomObject(
    {
      group: API_GROUP,
      version: API_VERSION,
      plural: UPDATE_POLICY.plural,
      name,
      body: {
        metadata: { annotations: { [PolicyAnnotations.resumedAt]: at, [PolicyAnnotations.resumedBy]: by } },
      },
    },
    mergePatch,
  );
  return { by, at };
}

export const isNotFound = (e: unknown) => statusCode(e) === 404;
