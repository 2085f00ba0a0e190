export * from './tenants.js';
export * from './incidents.js';
export * from './events.js';
export * from './audit.js';
export * from './limits.js';
export * from './ingestion.js';
export * from './topology.js';
export * from './skills.js';
