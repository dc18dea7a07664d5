import { loadManifest, type Manifest } from '../../lib/manifest.ts';
import { openStore, type Store } from '../../lib/storage.ts';

/** The build an export reads: its store (folder or object-storage URL) and manifest. */
export interface BuildToExport {
  store: Store;
  manifest: Manifest;
}

/**
 * Open "the build to export" at `location` (the `--out` of `tilebake build`, or an http(s):// base
 * URL). The one place that decides which build that is: once builds are versioned, this resolves
 * the current version.
 */
export async function openBuildToExport(location: string): Promise<BuildToExport> {
  const store = openStore(location);
  return { store, manifest: await loadManifest(store) };
}
