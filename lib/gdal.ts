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
