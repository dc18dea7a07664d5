import { resolveCurrentVersion, versionStore } from '../../lib/build-version.ts';
import { loadManifest, type Manifest } from '../../lib/manifest.ts';
import { openStore, type Store } from '../../lib/storage.ts';

/** The build an export reads: its store (folder or object-storage URL) and manifest. */
export interface BuildToExport {
  store: Store;
  manifest: Manifest;
}

/**
 * Open "the build to export" at `location` (the `--out` of `tilebake build`, or an http(s):// base
 * URL). The one place that decides which build that is: the current version (lib/build-version.ts),
 * or the folder itself when it predates versions.
 */
export async function openBuildToExport(location: string): Promise<BuildToExport> {
  const root = openStore(location);
  const store = versionStore(root, await resolveCurrentVersion(root));
  return { store, manifest: await loadManifest(store) };
}
