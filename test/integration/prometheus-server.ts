/**
 * A real Prometheus for integration tests (Debian's package `prometheus`), scraping every second: either
 * a target the test controls, whose gauge `nuo_test_blocker` fires the alerting rule NuoTestBlock
 * (severity page) while 1, or any targets with any rules (an operator's /metrics and nuo's alerts):
 * src/sim/prometheus.ts runs it.
 */
import assert from 'node:assert/strict';
import { createServer, type Server } from 'node:http';
import { type RunningPrometheus, startPrometheusFor } from '../../src/sim/prometheus.ts';

export {
  DEADLINE_MS,
  PROMETHEUS,
  type RunningPrometheus,
  startPrometheusFor,
} from '../../src/sim/prometheus.ts';

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
