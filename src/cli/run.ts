/** The process entry: `node src/cli/run.ts` (Node 24 strips the types) or, compiled, `node dist/src/cli/run.js`. */
import { main } from './main.ts';

process.exitCode = await main(process.argv.slice(2));
