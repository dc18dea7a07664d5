/**
 * Files of the package found from its root, one rule whether the code runs from its TypeScript sources
 * (tsx, vitest) or compiled into dist/ (scripts/build-js.mjs), where `import.meta.url` is a chunk's:
 * assets (the OSM profile, data/, the render page, the preview page), packages' files and worker modules.
 */
import { existsSync } from 'node:fs';
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';

const here = fileURLToPath(import.meta.url);

/** True when this code runs compiled (dist/…/*.js), false from the .ts sources. */
export const COMPILED = !here.endsWith('.ts');

/** The folder of the first package.json above `from`. */
function packageRootOf(from: string): string {
  for (let dir = from; ; dir = dirname(dir)) {
    if (existsSync(join(dir, 'package.json'))) return dir;
    if (dirname(dir) === dir) throw new Error(`tilebake: no package.json above ${from}`);
  }
}

/** The package's root folder (where package.json is). */
export const PACKAGE_ROOT = packageRootOf(dirname(here));

/** A path in the package, from its root: `packagePath('data', 'naturalearth')`. */
export function packagePath(...parts: string[]): string {
  return join(PACKAGE_ROOT, ...parts);
}

/** require() from the package root: package.json, and files of the packages it depends on. */
export const packageRequire = createRequire(packagePath('package.json'));

/**
 * The URL of a module to load in a worker thread, by its source path from the root
 * ('workers/elevation-tiles.ts'): the source file, or for a TypeScript one its compiled copy in dist/
 * when this code runs compiled (plain JavaScript modules are loaded from the sources either way).
 */
export function moduleUrl(source: string): string {
  const compiled = COMPILED && source.endsWith('.ts');
  return pathToFileURL(compiled ? packagePath('dist', source.replace(/\.ts$/, '.js')) : packagePath(source)).href;
}
