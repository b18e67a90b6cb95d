/**
 * A real Prometheus (Debian's package `prometheus`) for tests and the chaos runner, scraping its targets
 * every second and evaluating the rules it is given; and a scrape target of the harness's own whose
 * gauges a test or a run sets (MetricTarget), as an exporter reports what it measures.
 */
import { existsSync } from 'node:fs';
import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pollUntil } from '../util/poll.ts';
import { freePort, get } from './cluster/net.ts';
import { Component } from './cluster/process.ts';
import { reapAbandonedClusters } from './cluster/reaper.ts';

export const PROMETHEUS = '/usr/bin/prometheus';
const DIR_PREFIX = 'nuo-prometheus-test-';
/**
 * Scrape and evaluation each take a second, but Prometheus 2.42 first scrapes ~6 s after it starts (its
 * target discovery and scrape manager update on 5 s tickers, no flag shortens them); the deadline leaves
 * room for a loaded CI machine.
 */
export const DEADLINE_MS = 30_000;

async function writeConfig(at: string, targets: readonly string[], rules: string): Promise<void> {
  await mkdir(join(at, 'data'));
  await writeFile(join(at, 'rules.yml'), rules);
  await writeFile(
    join(at, 'prometheus.yml'),
    `global:
  scrape_interval: 1s
  scrape_timeout: 1s
  evaluation_interval: 1s
rule_files:
  - ${join(at, 'rules.yml')}
scrape_configs:
  - job_name: nuo-test
    static_configs:
      - targets: [${targets.map((t) => `'${t}'`).join(', ')}]
`,
  );
}

/** Ready to serve queries, or the process's exit and log as the failure. */
async function untilReady(component: Component, url: string, signal?: AbortSignal): Promise<void> {
  const exited = component.exited.then((code) => {
    throw new Error(`prometheus exited (code ${code}) before it was ready:\n${component.tail(30)}`);
  });
  const ready = pollUntil(
    'prometheus ready',
    async () => ((await get(`${url}/-/ready`)).status === 200 ? true : undefined),
    { timeoutMs: DEADLINE_MS, ...(signal ? { signal } : {}) },
  );
  await Promise.race([ready, exited]);
}

export interface RunningPrometheus {
  url: string;
  component: Component;
  stop(): Promise<void>;
}

/** Starts Prometheus scraping `targets` (host:port, /metrics) every second and evaluating `rules` (YAML). */
export async function startPrometheusFor(
  targets: readonly string[],
  rules: string,
  signal?: AbortSignal,
): Promise<RunningPrometheus> {
  if (!existsSync(PROMETHEUS)) {
    throw new Error(
      `${PROMETHEUS} is missing: install Debian's package (apt-get install -y prometheus; .ci/run does) to run the Prometheus blocker's integration tests`,
    );
  }
  await reapAbandonedClusters(tmpdir(), DIR_PREFIX);
  const dir = await mkdtemp(join(tmpdir(), DIR_PREFIX));
  await writeFile(join(dir, 'owner'), `${process.pid}\n`);
  const port = await freePort();
  const url = `http://127.0.0.1:${port}`;
  await writeConfig(dir, targets, rules);
  const component = new Component({
    name: 'prometheus',
    binary: PROMETHEUS,
    args: [
      `--config.file=${join(dir, 'prometheus.yml')}`,
      `--storage.tsdb.path=${join(dir, 'data')}`,
      `--web.listen-address=127.0.0.1:${port}`,
    ],
    logFile: join(dir, 'prometheus.log'),
    pidFile: join(dir, 'pids'),
  });
  await untilReady(component, url, signal);
  return {
    url,
    component,
    stop: async () => {
      await component.stop();
      await rm(dir, { recursive: true, force: true });
    },
  };
}

/** A scrape target serving gauges (name → value) at /metrics; a run sets them as what it measures turns. */
export class MetricTarget {
  readonly gauges = new Map<string, number>();
  readonly #server: Server = createServer((req, res) => {
    if (req.url !== '/metrics') return void res.writeHead(404).end();
    res.writeHead(200, { 'content-type': 'text/plain; version=0.0.4' });
    res.end([...this.gauges].map(([name, v]) => `# TYPE ${name} gauge\n${name} ${v}\n`).join(''));
  });

  /** Listens on loopback; returns host:port for Prometheus's static config. */
  async listen(): Promise<string> {
    await new Promise<void>((resolve) => this.#server.listen(0, '127.0.0.1', resolve));
    return `127.0.0.1:${(this.#server.address() as AddressInfo).port}`;
  }

  async close(): Promise<void> {
    this.#server.closeAllConnections();
    await new Promise((resolve) => this.#server.close(resolve));
  }
}
