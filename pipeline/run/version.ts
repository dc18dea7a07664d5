import { createRequire } from 'node:module';

/** tilebake's version (package.json), recorded in run.json. */
export const TILEBAKE_VERSION = (createRequire(import.meta.url)('../../package.json') as { version: string }).version;
