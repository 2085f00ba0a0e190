// The workflow bundle's entry: every workflow the worker runs.
export { incidentWorkflow } from './incident/workflow.js';
export { skillTestWorkflow } from './skill-test.js';
export { auditExportWorkflow } from './export.js';
export { housekeepingWorkflow } from './housekeeping.js';
export { widgetSessionWorkflow } from './widget-session.js';
