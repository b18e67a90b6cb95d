#!/usr/bin/env node
// The `nuo` command. Node 24 runs the TypeScript sources directly (type stripping); a container image
// runs the compiled entry, dist/src/cli/run.js (`npm run build`).
import '../src/cli/run.ts';
