/**
 * The image FLUO's update-agent DaemonSet runs, made here from the agent built from FLUO's pinned source
 * (tools/fluo/build.ts), laid out as FLUO's Dockerfile lays out its image: the agent at /bin/update-agent,
 * the entrypoint, user 65534:65534 (its DaemonSet runs it as root). Its Alpine base is left out: the
 * static binary needs none of it (in-cluster, the ServiceAccount brings the API server's CA). Cached
 * outside the repository by the commit it was built from.
 *
 *   node tools/fluo/image.ts          build the layout if it is missing
 *   node tools/fluo/image.ts --print  print the layout's directory and exit (no build)
 */
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { buildCommand, cacheRoot } from '../go-build.ts';
import { cachedLayout } from '../image/cached-layout.ts';
import { binaryLayout } from '../image/umoci.ts';
import { ensureFluoAgent, FLUO } from './build.ts';

export interface FluoAgentImage {
  /** The OCI layout directory, for `skopeo copy oci:<layout>:<tag>`. */
  layout: string;
  tag: string;
}

/** The tag: FLUO's commit, which is everything the image holds. */
const TAG = FLUO.commit.slice(0, 12);
const layoutDir = () => join(cacheRoot(), 'fluo', FLUO.commit, 'update-agent-oci');

/** The agent's image layout, built (with the agent, if missing) the first time. */
export async function ensureFluoAgentImage(
  log: (line: string) => void = (line) => process.stderr.write(`${line}\n`),
): Promise<FluoAgentImage> {
  const layout = layoutDir();
  const image = { layout, tag: TAG };
  if (existsSync(join(layout, 'index.json'))) return image;
  const agent = await ensureFluoAgent(log);
  // The agent's build is done by now: its cache directory's lock is free to take.
  await cachedLayout(
    {
      layout,
      lockDir: join(cacheRoot(), 'fluo', FLUO.commit),
      what: "FLUO's update-agent",
      write: (tmp) =>
        binaryLayout({
          binary: agent.path,
          path: '/bin/update-agent',
          layout: tmp,
          tag: TAG,
          user: '65534:65534',
          created: '2020-01-01T00:00:00Z',
        }),
    },
    log,
  );
  return image;
}

if (import.meta.url === `file://${process.argv[1]}`) {
  await buildCommand({
    print: () => layoutDir(),
    build: async () => {
      const image = await ensureFluoAgentImage();
      return `FLUO's update-agent image ${image.tag} in ${image.layout}`;
    },
  });
}
