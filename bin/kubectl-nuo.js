#!/usr/bin/env node
// `kubectl nuo …`: kubectl runs this file when it is on PATH as kubectl-nuo (package.json "bin", or
// krew's link). It runs the nuo CLI on kubectl's arguments after "nuo" (src/cli/kubectl-plugin.ts).
import { kubectlNuo } from '../src/cli/kubectl-plugin.ts';

process.exitCode = await kubectlNuo(process.argv.slice(2));
