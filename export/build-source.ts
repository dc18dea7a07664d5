import { openVersion, resolveCurrentVersion, versionStore } from '../lib/build-version.ts';
import { loadManifest, type Manifest } from '../lib/manifest.ts';
import { openStore, type Store, type StoreOptions } from '../lib/storage.ts';

/** The build an export reads: its store (folder or object-storage URL), manifest and version id. */
export interface BuildToExport {
  store: Store;
  manifest: Manifest;
  /** The build version (undefined for a legacy folder without versions: no versioned URLs). */
  id: string | undefined;
}

/**
 * Open "the build to export" at `location` (the `--out` of `tilebake build`, or an http(s):// base
 * URL). The one place that decides which build that is: the current version (lib/build-version.ts),
 * or the folder itself when it predates versions.
 */
export async function openBuildToExport(location: string, opts: StoreOptions = {}): Promise<BuildToExport> {
  return openBuildVersion(openStore(location, opts));
}

/**
 * A build version of the build folder `root`: version `id` (a UserError naming the kept versions when
 * it is not kept; `what` names the flag that asked for it), else the current one.
 */
export async function openBuildVersion(root: Store, id?: string, what = '--build'): Promise<BuildToExport> {
  if (id !== undefined) return { ...(await openVersion(root, id, `${what} ${id}`)), id };
  const version = await resolveCurrentVersion(root);
  const store = versionStore(root, version);
  return { store, manifest: await loadManifest(store), id: version.id };
}
