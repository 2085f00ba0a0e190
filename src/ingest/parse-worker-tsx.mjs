// A parse thread started from the TypeScript sources (npm start, tests): tsx loads the worker module.
import { register } from 'tsx/esm/api';

register();
const worker = await import('./parse-worker.ts');
export default worker.default;
