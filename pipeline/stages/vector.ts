/** The vector stage as a record: tilesets packed (or built from OSM) into PMTiles archives, with their search indexes. */
import type { Stage } from '../stage.ts';
import { tilesetArchives, tilesetSourceKinds } from '../stage.ts';

export const vectorStage: Stage = {
  name: 'vector',
  hasWork: async (config) => (await tilesetSourceKinds(config)).some((k) => k === 'vector'),
  reads: () => [],
  writes: (m) => [...tilesetArchives(m, 'vector'), ...Object.values(m.tilesets).flatMap((t) => (t.kind === 'vector' ? [...(t.mlt ? [t.mlt.archive] : []), ...(t.search ? [t.search.index] : [])] : []))],
  async run(config, sc) {
    const { runVectorStage } = await import('../vector/stage.ts');
    await runVectorStage(config, sc.outDir, { previous: sc.previous, workDir: sc.workDir, patches: sc.vectorPatches });
  },
  tiles: (config, m) => Object.keys(config.tilesets).reduce((n, id) => n + (m.tilesets[id]?.tiles ?? 0), 0),
};
