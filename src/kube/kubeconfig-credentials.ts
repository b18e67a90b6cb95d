/**
 * Lean-client credentials from a kubeconfig file: kept apart from lean-client.ts because parsing YAML
 * costs the agent ~9 MiB, and a real agent runs in-cluster without a kubeconfig.
 */
import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import type { LeanCredentials } from './lean-client.ts';

/** Loaded on first use only (synchronously, through require): most kubeconfigs here are JSON. */
const parseYaml = (text: string): unknown =>
  (createRequire(import.meta.url)('yaml') as typeof import('yaml')).parse(text);

/** The current context of a kubeconfig with embedded or file credentials (no exec plugins). */
export function kubeconfigCredentials(path: string): LeanCredentials {
  const text = readFileSync(path, 'utf8');
  // JSON is valid YAML and needs no parser: the YAML library costs the agent ~9 MiB, so load it only when needed.
  const doc = (text.trimStart().startsWith('{') ? JSON.parse(text) : parseYaml(text)) as {
    'current-context'?: string;
    contexts?: Array<{ name: string; context: { cluster: string; user: string } }>;
    clusters?: Array<{ name: string; cluster: Record<string, string> }>;
    users?: Array<{ name: string; user: Record<string, string> }>;
  };
  const context = doc.contexts?.find((c) => c.name === doc['current-context'])?.context;
  const cluster = doc.clusters?.find((c) => c.name === context?.cluster)?.cluster;
  const user = doc.users?.find((u) => u.name === context?.user)?.user ?? {};
  if (!cluster?.server) throw new Error(`${path}: no cluster for the current context`);
  const data = (inline: string | undefined, file: string | undefined) =>
    inline ? Buffer.from(inline, 'base64') : file ? readFileSync(file) : undefined;
  const token = user.token;
  return {
    server: cluster.server,
    ca: data(cluster['certificate-authority-data'], cluster['certificate-authority']),
    cert: data(user['client-certificate-data'], user['client-certificate']),
    key: data(user['client-key-data'], user['client-key']),
    token: token ? () => token : undefined,
  };
}
