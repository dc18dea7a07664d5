/** The folder for this Node version's cached data (TILEBAKE_CODE_CACHE, else the XDG cache folder), or undefined when off. */
export function codeCacheDir(env?: Record<string, string | undefined>): string | undefined;

/** The file of `dir` holding the cached data of a module whose source is `content`. */
export function codeCacheFile(dir: string, content: string): string;

/** What the cache did in this thread. */
export const codeCacheStats: { hits: number; misses: number; rejected: number; written: number; skipped: number };

/** Install the cache in this thread (once); returns the folder used, or undefined when off. `writeAfterMs`: also write new data this long after the first miss (else at exit only). */
export function enableCodeCache(dir?: string | undefined, opts?: { writeAfterMs?: number }): string | undefined;

/** The lines of `content` that call `import(` outside comments, trimmed. */
export function importCalls(content: string): string[];
