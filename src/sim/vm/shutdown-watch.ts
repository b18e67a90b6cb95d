/**
 * Sees a VM's boot end as it ends: the kernel's last line on the serial console, printed once per boot
 * as it resets or powers off the machine, after systemd-shutdown has stopped every service and synced
 * the disks. What a simulated host's reboot hook tells the safety checker, told of a real machine at the
 * same moment: before the next boot, while the node still carries its grant and its old boot ID.
 */
import { open } from 'node:fs/promises';

/**
 * The kernel's last line of a boot (kernel/reboot.c): once per reboot, poweroff or halt. Not
 * systemd-shutdown's "Syncing filesystems and block devices", which it prints twice on the way down.
 */
export const SHUTDOWN_LINE = /\breboot: (Restarting system|Power down|System halted)\s*$/;

/** Polls the serial log's new bytes every `intervalMs`; calls `onShutdown` once per line seen. Returns a stop. */
export function watchShutdowns(serialLog: string, onShutdown: () => void, intervalMs = 250): () => void {
  let offset = 0;
  let partial = '';
  let busy = false;
  const poll = async () => {
    if (busy) return;
    busy = true;
    const file = await open(serialLog, 'r').catch(() => undefined);
    try {
      if (!file) return;
      const { size } = await file.stat();
      if (size <= offset) return;
      const buffer = Buffer.alloc(size - offset);
      await file.read(buffer, 0, buffer.length, offset);
      offset = size;
      const lines = (partial + buffer.toString('latin1')).split('\n');
      partial = lines.pop() ?? '';
      for (const line of lines) if (SHUTDOWN_LINE.test(line)) onShutdown();
    } finally {
      await file?.close();
      busy = false;
    }
  };
  const timer = setInterval(() => void poll(), intervalMs);
  timer.unref();
  return () => clearInterval(timer);
}
