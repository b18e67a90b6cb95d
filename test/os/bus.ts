/**
 * A private dbus-daemon per OS-integration test file (usePrivateBus), stopped and its temp dir removed
 * after the file's tests, whatever their outcome; and what those tests share around it.
 */
import { after, type TestContext } from 'node:test';
import { PrivateBus } from '../../src/sim/os/private-bus.ts';

export { PrivateBus };

/** A private bus for this test file, disposed of after its tests even when they fail. */
export async function usePrivateBus(options: { start?: boolean } = {}): Promise<PrivateBus> {
  const bus = await PrivateBus.create(options);
  after(() => bus.dispose());
  return bus;
}

/**
 * Counts calls of `notify` (pass it as a watch's onChange) and lets a test await the next one. Arm with
 * next() before acting, then await it: the watch must fire within the timeout or the test fails.
 */
export class Notifications {
  count = 0;
  readonly #waiters: Array<{ target: number; resolve: () => void }> = [];

  readonly notify = (): void => {
    this.count++;
    for (const w of this.#waiters.filter((w) => w.target <= this.count)) {
      this.#waiters.splice(this.#waiters.indexOf(w), 1);
      w.resolve();
    }
  };

  next(what = 'a change notification', timeoutMs = 10_000): Promise<void> {
    const target = this.count + 1;
    return new Promise((resolve, reject) => {
      const timer = setTimeout(
        () => reject(new Error(`timed out after ${timeoutMs} ms waiting for ${what}`)),
        timeoutMs,
      );
      this.#waiters.push({
        target,
        resolve: () => {
          clearTimeout(timer);
          resolve();
        },
      });
    });
  }
}

/**
 * Cleanups for one test, run last-registered-first (like defer) after it, all of them even if one fails.
 * Node runs t.after hooks in registration order, which would stop a bus before the services on it.
 */
export function deferrals(t: TestContext): (cleanup: () => unknown) => void {
  const stack: Array<() => unknown> = [];
  t.after(async () => {
    const errors: unknown[] = [];
    for (const cleanup of stack.reverse()) {
      try {
        await cleanup();
      } catch (err) {
        errors.push(err);
      }
    }
    if (errors.length > 0) throw errors[0];
  });
  return (cleanup) => {
    stack.push(cleanup);
  };
}
