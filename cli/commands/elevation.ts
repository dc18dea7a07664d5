/** `tilebake elevation --out DIR DEM...`: the elevation index (and terrain, contour tiles) from DEMs alone (pipeline/elevation/stage.ts). */
import type { Argv } from 'yargs';

/** Adds the `elevation` command to the program. */
export function addElevationCommand(y: Argv): Argv {
  return y.command(
    'elevation [dems..]',
    'Build the elevation index (and terrain tiles) from DEM files alone and record it in <out>/manifest.json',
    (y) =>
      y
        .option('out', { alias: 'o', type: 'string', demandOption: true, describe: 'Output folder' })
        .option('precision', { type: 'number', default: 0.1, describe: 'Quantisation step in metres' })
        .option('terrain', { type: 'boolean', default: true, describe: 'Also write terrain-RGB tiles' })
        .option('encoding', { choices: ['terrarium', 'mapbox'] as const, default: 'terrarium' as const, describe: 'Terrain-RGB encoding' })
        .option('format', { choices: ['png', 'webp'] as const, default: 'png' as const, describe: 'Terrain tile format' })
        .option('maxzoom', { type: 'number', describe: 'Terrain tiles max zoom (default: from the DEMs\' resolution)' })
        .option('contours', { type: 'boolean', default: false, describe: 'Also write contour lines (tileset "contours", z11-14)' })
        .positional('dems', { type: 'string', array: true, describe: 'DEM files or globs (.hgt, .hgt.gz, .zip, GeoTIFF)' })
        .usage('$0 elevation --out DIR DEM...'),
    async (a) => {
      const { elevationCommand } = await import('../../pipeline/elevation/stage.ts');
      const { contoursSchema } = await import('../../pipeline/config/elevation.ts');
      const dems = (a.dems ?? []).map(String);
      if (a.maxzoom !== undefined && !(Number.isInteger(a.maxzoom) && a.maxzoom >= 0 && a.maxzoom <= 20)) {
        const { UserError } = await import('../../lib/errors.ts');
        throw new UserError(`--maxzoom: expected an integer 0..20 (got ${a.maxzoom})`, { exitCode: 2 });
      }
      await elevationCommand(a.out, dems, {
        precision: a.precision,
        terrain: a.terrain ? { id: 'terrain', encoding: a.encoding, format: a.format, minzoom: 0, maxzoom: a.maxzoom } : false,
        contours: a.contours ? contoursSchema.parse({}) : false,
      });
    },
  );
}
