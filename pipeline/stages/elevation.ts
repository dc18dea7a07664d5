/** The elevation stage as a record: the elevation index, terrain-RGB and contour tiles from DEMs. */
import type { Stage } from '../stage.ts';
import { tilesetArchives } from '../stage.ts';

export const elevationStage: Stage = {
  name: 'elevation',
  hasWork: (config) => config.elevation !== undefined && config.elevation.sources.length > 0,
  reads: () => [],
  writes: (m) => [...(m.elevation ? [m.elevation.index] : []), ...tilesetArchives(m, 'terrain')],
  async run(config, sc) {
    const { runElevationStage } = await import('../elevation/stage.ts');
    await runElevationStage(config, sc.outDir, { previous: sc.previous });
  },
  // Terrain and contour tiles.
  tiles: (_config, m) => (m.elevation?.tilesets ?? []).reduce((n, id) => n + (m.tilesets[id]?.tiles ?? 0), 0),
};
