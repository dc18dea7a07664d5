/** `tilebake pack --out BUILD --to FOLDER (--bbox | --geojson)`: a region of a build as archives for apps (export/pack.ts). */
import type { Argv } from 'yargs';
import { S3_ENDPOINT_OPTION } from '../options.ts';

/** Comma-separated list option (`a,b` or repeated). */
function list(v: unknown): string[] | undefined {
  if (v === undefined) return undefined;
  return ([] as unknown[]).concat(v).flatMap((x) => String(x).split(',')).map((s) => s.trim()).filter((s) => s !== '');
}

/** Adds the `pack` command to the program. */
export function addPackCommand(y: Argv): Argv {
  return y.command(
    'pack',
    'Cut a region of a published build into one PMTiles or MBTiles archive per tileset and style (with pack.json), or a delta since an older build',
    (y) =>
      y
        .option('out', { alias: 'o', type: 'string', demandOption: true, describe: 'Build folder, http(s):// base URL or s3://bucket/prefix' })
        .option('to', { type: 'string', demandOption: true, describe: 'Pack folder (archives and pack.json are written into it)' })
        .option('bbox', { type: 'string', describe: 'Area: west,south,east,north in degrees' })
        .option('geojson', { type: 'string', describe: 'Area: a GeoJSON file of polygons (Polygon, MultiPolygon, Feature or FeatureCollection)' })
        .option('minzoom', { type: 'number', describe: 'Lowest zoom packed (default: each archive\'s lowest)' })
        .option('maxzoom', { type: 'number', describe: 'Highest zoom packed (default: each archive\'s highest)' })
        .option('tilesets', { type: 'string', describe: 'Tilesets to pack, a,b (default: all; with --styles only: none)' })
        .option('styles', { type: 'string', describe: 'Raster styles to pack, x,y (default: all; with --tilesets only: none)' })
        .option('scales', { type: 'string', describe: 'Raster scales, 1,2 (default: every one built)' })
        .option('formats', { type: 'string', describe: 'Raster formats, png,jpg,webp (default: every one built)' })
        .option('format', { choices: ['pmtiles', 'mbtiles'] as const, default: 'pmtiles' as const, describe: 'Archive format' })
        .option('since', { type: 'string', describe: 'Write a delta from this older build id (it must still be kept)' })
        .option('build', { type: 'string', describe: 'Pack this build id instead of the current one' })
        .option('search', { type: 'boolean', default: false, describe: 'Also each packed tileset\'s search index, cut to the area\'s box (<tileset>.search.sqlite, SQLite with FTS5; its delta with --since)' })
        .option('search-cache', { type: 'string', describe: 'Folder of local copies of search indexes read from object storage (default: <tmp>/tilebake-search-cache)' })
        .option('dry-run', { type: 'boolean', default: false, describe: 'Print tiles and bytes per archive; write nothing' })
        .option('s3-endpoint', S3_ENDPOINT_OPTION),
    async (a) => {
      const { pack, estimateTable, packSummary } = await import('../../export/pack.ts');
      const { progressQuiet } = await import('../../lib/progress.ts');
      const scales = list(a.scales)?.map(Number);
      const r = await pack({
        out: a.out,
        to: a.to,
        bbox: a.bbox,
        geojson: a.geojson,
        minzoom: a.minzoom,
        maxzoom: a.maxzoom,
        tilesets: list(a.tilesets),
        styles: list(a.styles),
        scales,
        formats: list(a.formats),
        format: a.format,
        since: a.since,
        build: a.build,
        dryRun: a['dry-run'],
        search: a.search,
        searchCache: a['search-cache'],
        store: { s3Endpoint: a['s3-endpoint'] },
      });
      if (a['dry-run']) process.stdout.write(estimateTable(r));
      else if (!progressQuiet()) process.stderr.write(`tilebake: ${packSummary(r, a.to)}`);
    },
  );
}
