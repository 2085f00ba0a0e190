// Entry: writes the prebuilt workflow bundle a production worker loads (WORKFLOW_BUNDLE_PATH)
// instead of running webpack in its own process at start-up (slower, and its memory stays).
// Usage: npm run build:workflows [-- <output path>]   (default dist/workflow-bundle.js)
import { mkdirSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { bundleWorkflowCode } from '@temporalio/worker';
import { projectRoot } from '../config.js';
import { workflowsPath } from './incident-worker.js';
import { workflowInterceptorModules } from '../tracing/temporal.js';

const output = path.resolve(process.argv[2] ?? path.join(projectRoot, 'dist', 'workflow-bundle.js'));
const silent = () => undefined;
const { code } = await bundleWorkflowCode({
  workflowsPath,
  // Tracing's workflow side: inert in a workflow started without a trace context (ADR 0278).
  workflowInterceptorModules,
  logger: { trace: silent, debug: silent, info: silent, warn: silent, error: silent, log: silent },
});
mkdirSync(path.dirname(output), { recursive: true });
writeFileSync(output, code);
process.stdout.write(`workflow bundle written to ${output} (${(code.length / 1024).toFixed(0)} KiB)\n`);
