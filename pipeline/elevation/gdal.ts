import { access } from 'node:fs/promises';
import { UserError } from '../../lib/errors.ts';
import { loadGdal, type Gdal } from '../../lib/gdal.ts';
import { gdalPath, readChecked, unreadable } from './archives.ts';
import { snapStep, snapToStep, type DemGrid, type DemInfo } from './grid.ts';

type Dataset = import('gdal-async').Dataset;
type SpatialReference = import('gdal-async').SpatialReference;

/** Nodata value written into warp targets. */
const WARP_NODATA = -3.4028234663852886e38;
/** Mean Earth radius (IUGG), to turn a pixel size in metres into degrees of arc. */
const MEAN_EARTH_RADIUS_M = 6371008.8;
/** Points sampled along each edge to find a warped footprint. */
const EDGE_SAMPLES = 21;

/** Options a config can give one source. */
export interface GdalReadOptions {
  /** Overrides the file's nodata value. */
  nodata?: number;
}

function wgs84(gdal: Gdal): SpatialReference {
  // Traditional GIS order (lon, lat) regardless of GDAL 3's authority axis order.
  return gdal.SpatialReference.fromProj4('+proj=longlat +datum=WGS84 +no_defs');
}

/** Read the file's single band as Float32 with nodata (and NaN) mapped to NaN. */
async function readBand(gdal: Gdal, ds: Dataset, file: string, nodata: number | null): Promise<{ data: Float32Array; integer: boolean }> {
  const band = ds.bands.get(1);
  const { x: w, y: h } = ds.rasterSize;
  const data = new Float32Array(w * h);
  try {
    await readChecked(gdal, ds, () => band.pixels.read(0, 0, w, h, data), () => band.pixels.readAsync(0, 0, w, h, data));
  } catch (e) {
    throw new UserError(`${file}: cannot read its heights (${(e as Error).message})`);
  }
  let integer = true;
  const nd = nodata === null ? NaN : Math.fround(nodata);
  for (let i = 0; i < data.length; i++) {
    const v = data[i];
    if (v === nd || Number.isNaN(v) || v <= -1e38 || v >= 1e38) data[i] = NaN;
    else if (integer && v !== Math.trunc(v)) integer = false;
  }
  if (!data.some((v) => v === v)) throw new UserError(`${file}: has no valid heights (every value is nodata)`);
  return { data, integer };
}

/** Open `file` with GDAL (a .gz or .zip through GDAL's virtual file systems), or throw a UserError naming it. */
async function openDataset(gdal: Gdal, file: string): Promise<Dataset> {
  await access(file).catch((e) => {
    throw new UserError(`${file}: cannot read (${(e as NodeJS.ErrnoException).code ?? String(e)})`);
  });
  const path = await gdalPath(gdal, file);
  try {
    return await gdal.openAsync(path);
  } catch (e) {
    throw await unreadable(gdal, file, path, e);
  }
}

/** How a dataset becomes a lat/lon post grid: read as it is, or warped from its CRS. */
interface GdalPlan {
  info: DemInfo;
  nodata: number | null;
  /** Set when the dataset must be warped: its CRS. */
  warpFrom?: SpatialReference;
}

/** Work out the post grid of an opened dataset (without reading pixels). */
function planDataset(gdal: Gdal, ds: Dataset, file: string, opts: GdalReadOptions): GdalPlan {
  if (ds.bands.count() < 1) throw new UserError(`${file}: has no raster band`);
  const srs = ds.srs;
  if (!srs) throw new UserError(`${file}: unknown CRS (the file carries no spatial reference)`);
  const gt = ds.geoTransform;
  if (!gt || gt[2] !== 0 || gt[4] !== 0) throw new UserError(`${file}: needs a north-up geotransform (rotated or missing)`);
  const nodata = opts.nodata ?? ds.bands.get(1).noDataValue;
  if (srs.isGeographic() && srs.isSameGeogCS(wgs84(gdal))) return { info: geographicInfo(ds, file, gt), nodata };
  if (nodata === null) {
    throw new UserError(`${file}: no nodata value, needed to warp it from its CRS to lat/lon; set "nodata" for this source in the config`);
  }
  return { info: warpInfo(gdal, ds, file, srs), nodata, warpFrom: srs };
}

/** The post grid of a DEM (SRTM .hgt, GeoTIFF, any raster GDAL opens, in a .gz or .zip) without reading its pixels. */
export async function probeGdal(file: string, opts: GdalReadOptions = {}): Promise<DemInfo> {
  const gdal = await loadGdal();
  const ds = await openDataset(gdal, file);
  try {
    return planDataset(gdal, ds, file, opts).info;
  } finally {
    ds.close();
  }
}

/**
 * Read a DEM (SRTM .hgt, GeoTIFF, any raster GDAL opens, in a .gz or .zip) as a lat/lon post grid.
 * Geographic WGS84 sources are read as they are (pixel centres become posts); other CRSs are warped
 * once, bilinearly, to the nearest equivalent lat/lon resolution (GDAL's suggested output, snapped to
 * a whole arc-second or 1/N°).
 */
export async function readGdal(file: string, opts: GdalReadOptions = {}): Promise<DemGrid> {
  const gdal = await loadGdal();
  const ds = await openDataset(gdal, file);
  try {
    const plan = planDataset(gdal, ds, file, opts);
    if (!plan.warpFrom) return { ...plan.info, ...(await readBand(gdal, ds, file, plan.nodata)) };
    return await warp(gdal, ds, file, plan.nodata!, plan.warpFrom, plan.info);
  } finally {
    ds.close();
  }
}

function geographicInfo(ds: Dataset, file: string, gt: number[]): DemInfo {
  const { x: cols, y: rows } = ds.rasterSize;
  const stepLon = snapStep(gt[1]), stepLat = snapStep(-gt[5]);
  if (gt[5] >= 0) throw new UserError(`${file}: rows go north (positive pixel height); expected a north-up raster`);
  // GDAL's geotransform is area-based: the centre of pixel (0, 0) is half a pixel in. Point data too:
  // an SRTM .hgt (AREA_OR_POINT=Point, posts on whole degrees) has its geotransform half a post out
  // (N43E006: origin 5.99958°, 44.00042°), so its first post lands on 6°, 44° here.
  const originLon = snapToStep(gt[0] + gt[1] / 2, stepLon);
  const originLat = snapToStep(gt[3] + gt[5] / 2, stepLat);
  return {
    file, originLat, originLon, stepLat, stepLon, rows, cols,
    footprint: [originLon, originLat - (rows - 1) * stepLat, originLon + (cols - 1) * stepLon, originLat],
  };
}

/** The lat/lon grid a projected dataset is warped to: equal steps, origins on multiples of the step. */
function warpInfo(gdal: Gdal, src: Dataset, file: string, srs: SpatialReference): DemInfo {
  // Equivalent resolution: the pixel size in metres as degrees of arc along a meridian, snapped.
  const gt = src.geoTransform!;
  const metresPerUnit = srs.isGeographic() ? (Math.PI / 180) * MEAN_EARTH_RADIUS_M : srs.getLinearUnits().value;
  const pixelMetres = Math.min(Math.abs(gt[1]), Math.abs(gt[5])) * metresPerUnit;
  const step = snapStep(pixelMetres / ((Math.PI / 180) * MEAN_EARTH_RADIUS_M));
  // Footprint: the source's edges transformed to lon/lat.
  // A PROJ-string copy has (easting, northing) axis order, whatever the authority says.
  const ct = new gdal.CoordinateTransformation(gdal.SpatialReference.fromProj4(srs.toProj4()), wgs84(gdal));
  const { x: w, y: h } = src.rasterSize;
  let west = Infinity, east = -Infinity, south = Infinity, north = -Infinity;
  for (let k = 0; k <= EDGE_SAMPLES - 1; k++) {
    const t = k / (EDGE_SAMPLES - 1);
    for (const [px, py] of [[t * w, 0], [t * w, h], [0, t * h], [w, t * h]]) {
      const p = ct.transformPoint(gt[0] + px * gt[1], gt[3] + py * gt[5]);
      west = Math.min(west, p.x); east = Math.max(east, p.x);
      south = Math.min(south, p.y); north = Math.max(north, p.y);
    }
  }
  const originLon = Math.ceil(west / step - 1e-9) * step;
  const originLat = Math.floor(north / step + 1e-9) * step;
  return {
    file,
    originLat: snapToStep(originLat, step), originLon: snapToStep(originLon, step),
    stepLat: step, stepLon: step,
    cols: Math.floor((east - originLon) / step + 1e-9) + 1,
    rows: Math.floor((originLat - south) / step + 1e-9) + 1,
    footprint: [west, south, east, north],
  };
}

async function warp(gdal: Gdal, src: Dataset, file: string, nodata: number, srs: SpatialReference, info: DemInfo): Promise<DemGrid> {
  const step = info.stepLat;
  const dst = gdal.open('temp', 'w', 'MEM', info.cols, info.rows, 1, gdal.GDT_Float32);
  try {
    dst.srs = wgs84(gdal);
    dst.geoTransform = [info.originLon - step / 2, step, 0, info.originLat + step / 2, 0, -step];
    const band = dst.bands.get(1);
    band.noDataValue = WARP_NODATA;
    band.fill(WARP_NODATA);
    const options = { src, dst, s_srs: srs, t_srs: dst.srs, resampling: gdal.GRA_Bilinear, srcNodata: nodata, dstNodata: WARP_NODATA };
    try {
      await readChecked(gdal, src, () => gdal.reprojectImage(options), () => gdal.reprojectImageAsync(options));
    } catch (e) {
      throw new UserError(`${file}: cannot read its heights (${(e as Error).message})`);
    }
    return { ...info, ...(await readBand(gdal, dst, file, WARP_NODATA)) };
  } finally {
    dst.close();
  }
}
