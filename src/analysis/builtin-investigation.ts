/**
 * The built-in investigation analyzer now lives in ./builtin-investigation/ (split by kind of
 * reasoning); this path stays so existing importers keep working unchanged.
 */
export * from './builtin-investigation/index.js';
