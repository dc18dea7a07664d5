/** gdal-async, loaded once for every part that reads through GDAL (DEM rasters, OSM shapes, Natural Earth). */
import { UserError } from './errors.ts';

/** The gdal-async module. */
export type Gdal = typeof import('gdal-async');

let gdalModule: Promise<Gdal> | undefined;

/** Load gdal-async once; refuse a build that carries its own bundled GDAL (it must link Debian's). */
export function loadGdal(): Promise<Gdal> {
  gdalModule ??= import('gdal-async').then((m) => {
    const gdal = ((m as { default?: Gdal }).default ?? m) as Gdal;
    if (gdal.bundled) {
      throw new UserError('gdal-async was built with its bundled GDAL instead of the system one: remove node_modules/gdal-async and run `make setup` (it sets npm_config_shared_gdal=true)');
    }
    // Reading a .gz through /vsigzip/ must not write a `.gz.properties` index beside the user's file.
    gdal.config.set('CPL_VSIL_GZIP_WRITE_PROPERTIES', 'NO');
    return gdal;
  });
  return gdalModule;
}

type Dataset = import('gdal-async').Dataset;
type Layer = import('gdal-async').Layer;

/**
 * The result layers of the SQL run on each dataset, referenced as long as the dataset is. gdal-async
 * releases an unreferenced result set from V8's garbage collector, under its dataset's lock; when that
 * collection runs inside another call on the same dataset (reading a feature allocates), the lock is
 * the caller's own and the process blocks forever ("Sleeping on semaphore in garbage collector while
 * destroying an SQL results layers"). Closing the dataset releases its result sets without the collector.
 */
const resultSets = new WeakMap<Dataset, Layer[]>();

function kept(ds: Dataset, layer: Layer): Layer {
  const held = resultSets.get(ds);
  if (held) held.push(layer);
  else resultSets.set(ds, [layer]);
  return layer;
}

/** `ds.executeSQL(sql)`, its result layer kept until `ds` is closed (resultSets above): the only way to run SQL through GDAL. */
export function executeSql(ds: Dataset, sql: string): Layer {
  return kept(ds, ds.executeSQL(sql));
}

/** `ds.executeSQLAsync(sql)`, likewise. */
export async function executeSqlAsync(ds: Dataset, sql: string): Promise<Layer> {
  return kept(ds, await ds.executeSQLAsync(sql));
}
