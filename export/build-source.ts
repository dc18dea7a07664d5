import { resolveCurrentVersion, versionStore } from '../lib/build-version.ts';
import { loadManifest, type Manifest } from '../lib/manifest.ts';
import { openStore, type Store } from '../lib/storage.ts';

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
export async function openBuildToExport(location: string): Promise<BuildToExport> {
  const root = openStore(location);
  const version = await resolveCurrentVersion(root);
  const store = versionStore(root, version);
  return { store, manifest: await loadManifest(store), id: version.id };
}
