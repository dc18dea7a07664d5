/** The render stage as a record: every style × scale × format pre-rendered into raster archives. */
import type { Stage } from '../stage.ts';
import { tilesetArchives } from '../stage.ts';

export const renderStage: Stage = {
  name: 'render',
  hasWork: (config) => Object.keys(config.styles).length > 0,
  // The tileset archives the styles draw (vector, terrain, contours, raster).
  reads: (m) => [...tilesetArchives(m, 'vector'), ...tilesetArchives(m, 'terrain'), ...tilesetArchives(m, 'raster')],
  writes: () => ['styles', 'fonts'],
  async run(config, sc) {
    const { runRenderStage } = await import('../render/stage.ts');
    await runRenderStage(config, sc.outDir, { ...sc.render, workers: sc.workers, previous: sc.previous, workDir: sc.workDir });
  },
  tiles: (config, m) =>
    Object.keys(config.styles).reduce((n, id) => n + Object.values(m.styles[id]?.archives ?? {}).reduce((k, a) => k + a.tiles, 0), 0),
};
