/**
 * The rule for versioned URLs, shared by `tilebake serve` (static-server/versioned.ts) and
 * `tilebake export` (export/): `/v/{build}/…` is the unversioned path `…` of build version
 * `{build}`. Answers under it never change, so they are cached for a year (`immutable`).
 */

/** First path segment of versioned URLs. */
export const VERSION_SEGMENT = 'v';
/** A build id as it may appear in a versioned URL (lib/build-version.ts makes ids of this shape). */
const BUILD_ID = '[A-Za-z0-9_][\\w.-]{0,99}';
/** `/v/{build}/rest`: the build id and the rest of the path (with its query). */
const VERSIONED_PATH = new RegExp(`^/${VERSION_SEGMENT}/(${BUILD_ID})(/.*)$`);
/** The same prefix as a PCRE for web-server configurations (nginx), without anchors. */
export const VERSIONED_PREFIX_PCRE = `/${VERSION_SEGMENT}/${BUILD_ID}`;

/** The base URL of version `id` of whatever `base` serves: `base/v/id`. */
export function versionedBase(base: string, id: string): string {
  return `${base}/${VERSION_SEGMENT}/${encodeURIComponent(id)}`;
}

/** The relative path (no leading `/`) of `path` in version `id`: `v/id/path`. */
export function versionedFilePath(id: string, path: string): string {
  return `${VERSION_SEGMENT}/${id}/${path}`;
}

/** The build id and unversioned rest (`/…`) of a versioned URL path, or undefined for other paths. */
export function splitVersionedUrl(url: string): { id: string; rest: string } | undefined {
  const m = VERSIONED_PATH.exec(url);
  return m ? { id: m[1], rest: m[2] } : undefined;
}

/** The build id of a relative path `v/{id}/…` (an export's file), or undefined for other paths. */
export function versionOfPath(path: string): string | undefined {
  return splitVersionedUrl(`/${path}`)?.id;
}
