/**
 * The CustomResourceDefinitions nuo installs, built from the types that define them (update-policy.ts,
 * plan.ts):
 * `npm run generate:crds` writes them under deploy/, and a unit test fails when the files and the types
 * disagree.
 */
import { PlanSpec, PlanStatus } from './plan.ts';
import { UpdatePolicySpec, UpdatePolicyStatus } from './update-policy.ts';

export const API_GROUP = 'nuo.dev';
export const API_VERSION = 'v1alpha1';
export const UPDATE_POLICY = {
  kind: 'UpdatePolicy',
  plural: 'updatepolicies',
  singular: 'updatepolicy',
} as const;
export const PLAN = { kind: 'Plan', plural: 'plans', singular: 'plan' } as const;

/** A condition's column: its status, or its reason (`field`). */
const conditionColumn = (name: string, type: string, field: 'status' | 'reason') => ({
  name,
  type: 'string',
  jsonPath: `.status.conditions[?(@.type=="${type}")].${field}`,
});

export function updatePolicyCrd() {
  return {
    apiVersion: 'apiextensions.k8s.io/v1',
    kind: 'CustomResourceDefinition',
    metadata: { name: `${UPDATE_POLICY.plural}.${API_GROUP}` },
    spec: {
      group: API_GROUP,
      scope: 'Cluster',
      names: {
        kind: UPDATE_POLICY.kind,
        listKind: `${UPDATE_POLICY.kind}List`,
        plural: UPDATE_POLICY.plural,
        singular: UPDATE_POLICY.singular,
        shortNames: ['nup'],
        categories: ['nuo'],
      },
      versions: [
        {
          name: API_VERSION,
          served: true,
          storage: true,
          subresources: { status: {} },
          additionalPrinterColumns: [
            { name: 'Nodes', type: 'integer', jsonPath: '.status.nodes' },
            { name: 'Disrupted', type: 'integer', jsonPath: '.status.disrupted' },
            { name: 'Budget', type: 'integer', jsonPath: '.status.budget' },
            { name: 'Agents', type: 'string', jsonPath: '.spec.agentProtocol', priority: 1 },
            conditionColumn('Ready', 'Ready', 'status'),
            conditionColumn('Blocked', 'Blocked', 'reason'),
            { name: 'Age', type: 'date', jsonPath: '.metadata.creationTimestamp' },
          ],
          schema: {
            openAPIV3Schema: {
              type: 'object',
              description:
                'An UpdatePolicy selects a pool of nodes and says how many may be disrupted at once, when, and what blocks an update.',
              required: ['spec'],
              properties: {
                apiVersion: { type: 'string' },
                kind: { type: 'string' },
                metadata: { type: 'object' },
                spec: UpdatePolicySpec,
                status: UpdatePolicyStatus,
              },
              'x-kubernetes-validations': [
                {
                  rule: 'self.metadata.name.size() <= 63',
                  message:
                    'the name of an UpdatePolicy must be at most 63 characters (it is written in node labels)',
                },
              ],
            },
          },
        },
      ],
    },
  };
}

export function planCrd() {
  return {
    apiVersion: 'apiextensions.k8s.io/v1',
    kind: 'CustomResourceDefinition',
    metadata: { name: `${PLAN.plural}.${API_GROUP}` },
    spec: {
      group: API_GROUP,
      scope: 'Namespaced',
      names: {
        kind: PLAN.kind,
        listKind: `${PLAN.kind}List`,
        plural: PLAN.plural,
        singular: PLAN.singular,
        shortNames: ['nplan'],
        categories: ['nuo'],
      },
      versions: [
        {
          name: API_VERSION,
          served: true,
          storage: true,
          subresources: { status: {} },
          // SUC's columns, and Applying shown by default.
          additionalPrinterColumns: [
            { name: 'Image', type: 'string', jsonPath: '.spec.upgrade.image' },
            { name: 'Channel', type: 'string', jsonPath: '.spec.channel' },
            { name: 'Version', type: 'string', jsonPath: '.spec.version' },
            conditionColumn('Complete', 'Complete', 'status'),
            { name: 'Applying', type: 'string', jsonPath: '.status.applying' },
            { name: 'Message', type: 'string', jsonPath: ".status.conditions[?(@.message!='')].message" },
            { name: 'Age', type: 'date', jsonPath: '.metadata.creationTimestamp' },
          ],
          schema: {
            openAPIV3Schema: {
              type: 'object',
              description:
                "A Plan runs an upgrade Job on each selected node, a few nodes at a time, under the node's UpdatePolicy budget.",
              required: ['spec'],
              properties: {
                apiVersion: { type: 'string' },
                kind: { type: 'string' },
                metadata: { type: 'object' },
                spec: PlanSpec,
                status: PlanStatus,
              },
            },
          },
        },
      ],
    },
  };
}
