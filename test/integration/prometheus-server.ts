/**
 * A real Prometheus for integration tests (Debian's package `prometheus`), scraping every second: either
 * a target the test controls, whose gauge `nuo_test_blocker` fires the alerting rule NuoTestBlock
 * (severity page) while 1, or any targets with any rules (an operator's /metrics and nuo's alerts).
 */
import assert from 'node:assert/strict';
import { existsSync } from 'node:fs';
import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { createServer, type Server } from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { freePort, get } from '../../src/sim/cluster/net.ts';
import { Component } from '../../src/sim/cluster/process.ts';
import { reapAbandonedClusters } from '../../src/sim/cluster/reaper.ts';
import { pollUntil } from '../../src/util/poll.ts';

export const PROMETHEUS = '/usr/bin/prometheus';
const DIR_PREFIX = 'nuo-prometheus-test-';
/**
 * Scrape and evaluation each take a second, but Prometheus 2.42 first scrapes ~6 s after it starts (its
 * target discovery and scrape manager update on 5 s tickers, no flag shortens them); the deadline leaves
 * room for a loaded CI machine.
 */
export const DEADLINE_MS = 30_000;

/** The scrape target: `/metrics` with the gauge, and `/api/v1/alerts` answering what a test sets. */
export class Target {
  gauge = 0;
  /** Time of the last /metrics request answered. */
  lastScrapeMs = 0;
  fakeAlerts: { status: number; body: string } = { status: 200, body: '' };
  readonly server: Server = createServer((req, res) => {
    if (req.url === '/metrics') {
      this.lastScrapeMs = Date.now();
      res.writeHead(200, { 'content-type': 'text/plain; version=0.0.4' });
      res.end(
        `# HELP nuo_test_blocker 1 blocks reboots.\n# TYPE nuo_test_blocker gauge\nnuo_test_blocker ${this.gauge}\n`,
      );
    } else if (req.url === '/fake/api/v1/alerts') {
      res.writeHead(this.fakeAlerts.status, { 'content-type': 'application/json' });
      res.end(this.fakeAlerts.body);
    } else if (req.url === '/stall/api/v1/alerts') {
      res.writeHead(200, { 'content-type': 'application/json' });
      res.write('{"status":'); // and never the rest
    } else {
      res.writeHead(404).end();
    }
  });

  async listen(): Promise<number> {
    await new Promise<void>((resolve) => this.server.listen(0, '127.0.0.1', resolve));
    const address = this.server.address();
    assert.ok(address && typeof address === 'object');
    return address.port;
  }
}

const TEST_RULES = `groups:
  - name: nuo-test
    rules:
      - alert: NuoTestBlock
        expr: nuo_test_blocker == 1
        for: 0s
        labels:
          severity: page
`;

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
async function untilReady(component: Component, url: string, signal: AbortSignal): Promise<void> {
  const exited = component.exited.then((code) => {
    throw new Error(`prometheus exited (code ${code}) before it was ready:\n${component.tail(30)}`);
  });
  const ready = pollUntil(
    'prometheus ready',
    async () => ((await get(`${url}/-/ready`)).status === 200 ? true : undefined),
    {
      timeoutMs: DEADLINE_MS,
      signal,
    },
  );
  await Promise.race([ready, exited]);
}

export interface RunningPrometheus {
  url: string;
  component: Component;
  stop(): Promise<void>;
}

/** Starts Prometheus scraping `target` every second; fails loudly when Debian's package is missing. */
export async function startPrometheus(target: Target, signal: AbortSignal): Promise<RunningPrometheus> {
  const targetPort = await target.listen();
  const running = await startPrometheusFor([`127.0.0.1:${targetPort}`], TEST_RULES, signal);
  return {
    ...running,
    stop: async () => {
      await running.stop();
      target.server.closeAllConnections();
      await new Promise((resolve) => target.server.close(resolve));
    },
  };
}

/** Starts Prometheus scraping `targets` (host:port, /metrics) every second and evaluating `rules` (YAML). */
export async function startPrometheusFor(
  targets: readonly string[],
  rules: string,
  signal: AbortSignal,
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
