/**
 * The runtime configuration (config.json) of a container of the image, made from the one `umoci unpack`
 * writes: pure, for the image's tests and bench/image.ts, which run it under runc.
 */

export interface Mount {
  destination: string;
  type?: string;
  source?: string;
  options?: string[];
}

/** The parts of an OCI runtime spec this file changes; the rest is kept as umoci wrote it. */
export interface RuntimeSpec {
  process: {
    terminal?: boolean;
    user: { uid: number; gid: number };
    args: string[];
    env?: string[];
    capabilities?: Record<string, string[]>;
    noNewPrivileges?: boolean;
    [key: string]: unknown;
  };
  root: { path: string; readonly?: boolean };
  mounts?: Mount[];
  linux?: { namespaces?: { type: string; path?: string }[]; [key: string]: unknown };
  [key: string]: unknown;
}

export interface ContainerOptions {
  /** The command, image entrypoint included (the spec's args replace entrypoint and cmd alike). */
  args: string[];
  /** The unpacked root filesystem, shared read-only by every container of the test. */
  rootfs: string;
  /** Share the host's network namespace (to reach an API server on 127.0.0.1). */
  hostNetwork?: boolean;
  /** Host paths bound read-only into the container. */
  binds?: { source: string; destination: string }[];
  env?: string[];
}

/**
 * The image as deploy/ runs it: its own user, no capabilities, no privilege escalation, a read-only root
 * (securityContext in deploy/base); no terminal, so the runtime passes stdout and stderr through.
 */
export function containerSpec(base: RuntimeSpec, o: ContainerOptions): RuntimeSpec {
  const none = { bounding: [], effective: [], inheritable: [], permitted: [], ambient: [] };
  const namespaces = (base.linux?.namespaces ?? []).filter((ns) => !(o.hostNetwork && ns.type === 'network'));
  const binds: Mount[] = (o.binds ?? []).map((b) => ({
    destination: b.destination,
    type: 'bind',
    source: b.source,
    options: ['rbind', 'ro', 'nosuid', 'nodev', 'noexec'],
  }));
  return {
    ...base,
    process: {
      ...base.process,
      terminal: false,
      args: o.args,
      env: [...(base.process.env ?? []), ...(o.env ?? [])],
      capabilities: none,
      noNewPrivileges: true,
    },
    root: { path: o.rootfs, readonly: true },
    mounts: [...(base.mounts ?? []), ...binds],
    linux: { ...base.linux, namespaces },
  };
}

/**
 * runc's own refusal to start a container (as opposed to the container's process failing): the line
 * that says why, or undefined.
 */
export function runcRefusal(stderr: string): string | undefined {
  return stderr
    .split('\n')
    .find((line) =>
      /runc (run|create|start) failed|container_linux\.go|unable to start container process/.test(line),
    )
    ?.trim();
}
