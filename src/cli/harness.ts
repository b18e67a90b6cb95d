import { existsSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import type { RunObservations } from '../whatif/observations.ts';
import type { Snapshot } from '../whatif/snapshot.ts';
import type { Twin } from '../whatif/twin.ts';
import { err } from './command.ts';

/** What `nuo demo` needs of src/sim/demo.ts (test/unit/build.test.ts checks that the module fits). */
export interface DemoHarness {
  runDemo: (options: {
    nodes: number;
    zones: number;
    maxUnavailable: number;
    maxUnavailablePerZone: number;
    rebootMs: number;
    soakMs: number;
    plan: boolean;
    keep: boolean;
    vms: number;
    out: (text: string) => void;
    tty: boolean;
  }) => Promise<number>;
}

/** What `nuo cluster up` needs of src/sim/cluster/cluster.ts (checked as DemoHarness is). */
export interface ClusterHarness {
  startCluster: (options: { nodes: number; zones: number; log: (line: string) => void }) => Promise<{
    dir: string;
    kubeconfigPath: string;
    binaries: { versions: { kubernetes: string }; path: { kubectl: string } };
    stop(): Promise<void>;
  }>;
}

/** What `nuo whatif twin` needs of src/sim/whatif-twin.ts (checked as DemoHarness is). */
export interface WhatifHarness {
  startTwin: (
    snapshot: Snapshot,
    twin: Twin,
    options: { timeoutMs: number; log: (line: string) => void },
  ) => Promise<{
    cluster: {
      dir: string;
      kubeconfigPath: string;
      binaries: { path: { kubectl: string } };
      stop(): Promise<void>;
    };
    result: { differences: string[]; unready: string[]; ms: number };
  }>;
}

/** What `nuo whatif run` needs of src/sim/whatif-run.ts (checked as DemoHarness is). */
export interface WhatifRunHarness {
  runWhatif: (
    snapshot: Snapshot,
    twin: Twin,
    options: {
      rebootMs: number;
      standTimeoutMs: number;
      timeoutMs: number;
      log: (line: string) => void;
      rebootMsByPool?: Record<string, number>;
      calendar?: { originMs?: number; speed: number };
      until?: readonly string[];
    },
  ) => Promise<{ observations: RunObservations; twin: { differences: string[]; unready: string[] } }>;
}

/**
 * Loads a module of the simulation harness, src/sim, or says why it cannot and returns undefined.
 * The harness is loaded by a computed path, never a static import: tsc follows imports (type-only ones
 * too) into the build, and the build must not ship a local control plane and simulated hosts.
 * From dist/ the sources are absent, so `nuo demo` and `nuo cluster` run from a source checkout only.
 */
export async function loadHarness<T>(
  module: string,
  command: string,
  script: string,
): Promise<T | undefined> {
  const url = new URL(`../sim/${module}`, import.meta.url);
  if (!existsSync(fileURLToPath(url))) {
    err(
      `nuo ${command} runs from a source checkout of nuo, not from the build: dist/ leaves out the simulation harness (src/sim).\n` +
        `In a clone of the nuo repository: npm install && npm run ${script}`,
    );
    return undefined;
  }
  return (await import(url.href)) as T;
}
