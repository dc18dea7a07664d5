/** `tilebake vector IN OUT.pmtiles`: one source packed into a PMTiles archive, or an .osm.pbf extract made into tiles (pipeline/vector/stage.ts). */
import type { Argv } from 'yargs';
import { parseBBox } from '../options.ts';

/** Adds the `vector` command to the program. */
export function addVectorCommand(y: Argv): Argv {
  return y.command(
    'vector <input> <output>',
    'Pack vector tiles (MBTiles, PMTiles or a z/x/y folder) into a PMTiles v3 archive, or build OpenMapTiles-schema tiles from an .osm.pbf extract',
    (y) =>
      y
        .positional('input', { type: 'string', demandOption: true, describe: 'MBTiles file, PMTiles file, z/x/y.pbf folder or .osm.pbf extract' })
        .positional('output', { type: 'string', demandOption: true, describe: 'Output .pmtiles file' })
        .option('name', { type: 'string', describe: 'Metadata name' })
        .option('attribution', { type: 'string', describe: 'Metadata attribution' })
        .option('bbox', { type: 'string', describe: 'Clip an .osm.pbf input to west,south,east,north first' }),
    async (a) => {
      const { packVectorTiles } = await import('../../pipeline/vector/stage.ts');
      await packVectorTiles(a.input, a.output, { name: a.name, attribution: a.attribution, bbox: parseBBox(a.bbox), bboxField: '--bbox' });
    },
  );
}
