/**
 * Who the API server says the caller of a CLI command is (a SelfSubjectReview), for the records a person
 * leaves on objects (`nuo policy resume`, `nuo release`): the server's view, not a name they typed.
 */
import { AuthenticationV1Api, type KubeConfig } from '@kubernetes/client-node';

/** The authenticated user name; the kubeconfig's user name, marked as such, when the server cannot say. */
export async function whoAmI(kc: KubeConfig): Promise<string> {
  try {
    const review = await kc.makeApiClient(AuthenticationV1Api).createSelfSubjectReview({
      body: { apiVersion: 'authentication.k8s.io/v1', kind: 'SelfSubjectReview' },
    });
    const name = review.status?.userInfo?.username;
    if (name) return name;
  } catch {
    // An API server without SelfSubjectReview (before 1.28): the kubeconfig names the user below.
  }
  return `${kc.getCurrentUser()?.name ?? 'unknown'} (kubeconfig user)`;
}
