import { packageRequire } from '../../lib/package-root.ts';

/** tilebake's version (package.json), recorded in run.json. */
export const TILEBAKE_VERSION = (packageRequire('./package.json') as { version: string }).version;
