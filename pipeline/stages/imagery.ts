/** The imagery stage as a record: raster tilesets warped from images (or packed from raster tile archives). */
import type { Stage } from '../stage.ts';
import { tilesetSourceKinds } from '../stage.ts';

export const imageryStage: Stage = {
  name: 'imagery',
  hasWork: async (config) => (await tilesetSourceKinds(config)).some((k) => k !== 'vector'),
  reads: () => [],
  writes: (m) => {
    const elevation = new Set(m.elevation?.tilesets ?? []);
    return Object.entries(m.tilesets).filter(([id, t]) => t.kind === 'raster' && !elevation.has(id)).flatMap(([, t]) => [t.archive, ...(t.hidpi ? [t.hidpi.archive] : [])]);
  },
  async run(config, sc) {
    const { runImageryStage } = await import('../imagery/stage.ts');
    await runImageryStage(config, sc.outDir, { previous: sc.previous, workDir: sc.workDir, ...sc.imagery });
  },
  tiles: (config, m) => Object.keys(config.tilesets).reduce((n, id) => (m.tilesets[id]?.kind === 'raster' ? n + m.tilesets[id].tiles + (m.tilesets[id].hidpi?.tiles ?? 0) : n), 0),
};
