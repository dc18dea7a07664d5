/**
 * An imagery tileset's source opened with GDAL, before any pixel is read: the files (a glob expanded,
 * sorted), each checked (GDAL opens it, 8-bit bands, a coordinate system and a geotransform), its
 * footprint in lon/lat and its pixel size in Web Mercator, every file GDAL reads for it (overviews,
 * masks, a VRT's sources: the fingerprint), and the datasets the warper reads: each file as RGB or
 * RGBA (grey and paletted images through a VRT in the work folder), files of one coordinate system
 * and band layout in one VRT mosaic (GDAL's buildVRT, later files on top).
 */
import { mkdir } from 'node:fs/promises';
import { join } from 'node:path';
import type { Dataset } from 'gdal-async';
import { UserError } from '../../lib/errors.ts';
import { loadGdal, type Gdal } from '../../lib/gdal.ts';
import { MAX_LATITUDE, type BBox } from '../../lib/tile-math.ts';
import { expandGlob } from '../../lib/glob.ts';

/** Metres per pixel of zoom 0 of 256 px Web Mercator tiles. */
export const Z0_METRES_PER_PIXEL = (2 * Math.PI * 6378137) / 256;
/** Deepest zoom a tileset may be baked to (the config's range). */
const MAX_IMAGERY_ZOOM = 24;

/** What the warper reads for one tileset. */
export interface ImagerySource {
  /** The image files (a glob expanded, sorted). */
  files: string[];
  /** Every file GDAL reads for them (sidecars, overviews, a VRT's sources), sorted: what the tiles depend on. */
  inputs: string[];
  /** Datasets to warp, painted in this order (later ones on top): images or VRTs in the work folder. */
  datasets: string[];
  /** Each file's footprint [w, s, e, n] in degrees, within the Web Mercator square. */
  boxes: BBox[];
  /** The union of the footprints. */
  bounds: BBox;
  /** The zoom whose pixels are just finer than the finest image's. */
  nativeZoom: number;
}

/** `tileset "id": file: why` (the one line a bad input ends the build with). */
function bad(id: string, file: string, why: string): UserError {
  return new UserError(`tileset "${id}": ${file}: ${why}`);
}

function wgs84(gdal: Gdal) {
  // Traditional GIS order (lon, lat) regardless of GDAL 3's authority axis order.
  return gdal.SpatialReference.fromProj4('+proj=longlat +datum=WGS84 +no_defs');
}

/** The zoom whose Web Mercator pixels (256 px tiles) are just finer than `metres` (Web Mercator metres per pixel). */
export function zoomForMercatorPixel(metres: number): number {
  const z = Math.ceil(Math.log2(Z0_METRES_PER_PIXEL / metres) - 1e-9);
  return Math.max(0, Math.min(MAX_IMAGERY_ZOOM, z));
}

/** The bands to read as R, G, B (and alpha) of an image: by colour interpretation, else grey or the first three. */
function rgbBands(ds: Dataset): { bands: number[]; alpha?: number; palette: boolean } {
  const count = ds.bands.count();
  const interp = (b: number) => (ds.bands.get(b).colorInterpretation ?? '').toLowerCase();
  const find = (name: string) => {
    for (let b = 1; b <= count; b++) if (interp(b) === name) return b;
    return undefined;
  };
  const alpha = find('alpha');
  if (count >= 1 && ds.bands.get(1).colorTable) return { bands: [1], palette: true };
  const r = find('red'), g = find('green'), b = find('blue');
  if (r && g && b) return { bands: [r, g, b], alpha, palette: false };
  const colour = [...Array(count).keys()].map((i) => i + 1).filter((i) => i !== alpha);
  if (colour.length < 3) return { bands: [colour[0], colour[0], colour[0]], alpha, palette: false };
  return { bands: colour.slice(0, 3), alpha, palette: false };
}

/** Why an image cannot be warped as it is (no georeferencing, not 8-bit), or undefined. */
function problem(ds: Dataset): string | undefined {
  if (ds.bands.count() < 1) return 'has no raster band';
  const gt = ds.geoTransform;
  const identity = !gt || (gt[0] === 0 && gt[1] === 1 && gt[2] === 0 && gt[3] === 0 && gt[4] === 0 && gt[5] === 1);
  if (!ds.srs || identity) {
    const what = !ds.srs && identity ? 'no coordinate system and no geotransform' : !ds.srs ? 'no coordinate system' : 'no geotransform';
    return `has no georeferencing (${what}): give it one, e.g. gdal_translate -a_srs EPSG:… -a_ullr west north east south, or a world file`;
  }
  for (let b = 1; b <= ds.bands.count(); b++) {
    const type = ds.bands.get(b).dataType;
    if (type !== 'Byte') return `band ${b} holds ${type} values: expected 8-bit (Byte) images; scale them first, e.g. gdal_translate -ot Byte -scale`;
  }
  return undefined;
}

/** Open one image or throw naming the tileset, the file and GDAL's reason. */
async function openImage(gdal: Gdal, id: string, file: string): Promise<Dataset> {
  try {
    return await gdal.openAsync(file);
  } catch (e) {
    throw bad(id, file, `GDAL cannot open it (${(e as Error).message.replace(/\s+/g, ' ').trim()})`);
  }
}

/** The footprint of `ds` in lon/lat, clipped to the Web Mercator square, and its pixel size in Web Mercator metres. */
function placeOf(gdal: Gdal, id: string, file: string, ds: Dataset): { box: BBox; metres: number } {
  try {
    const geo = gdal.suggestedWarpOutput({ src: ds, s_srs: ds.srs!, t_srs: wgs84(gdal) });
    const g = geo.geoTransform;
    const box: BBox = [Math.max(-180, g[0]), Math.max(-MAX_LATITUDE, g[3] + geo.rasterSize.y * g[5]), Math.min(180, g[0] + geo.rasterSize.x * g[1]), Math.min(MAX_LATITUDE, g[3])];
    if (!(box[0] < box[2] && box[1] < box[3])) throw new Error(`its footprint ${JSON.stringify(box)} lies outside the Web Mercator square`);
    const merc = gdal.suggestedWarpOutput({ src: ds, s_srs: ds.srs!, t_srs: gdal.SpatialReference.fromEPSG(3857) });
    return { box, metres: Math.abs(merc.geoTransform[1]) };
  } catch (e) {
    throw bad(id, file, `cannot be placed on the map (${(e as Error).message.replace(/\s+/g, ' ').trim()})`);
  }
}

/** `a` and `b` as one box. */
function union(boxes: readonly BBox[]): BBox {
  return [Math.min(...boxes.map((b) => b[0])), Math.min(...boxes.map((b) => b[1])), Math.max(...boxes.map((b) => b[2])), Math.max(...boxes.map((b) => b[3]))];
}

/**
 * Open and check tileset `id`'s source (a file or a glob), and write what the warper reads into
 * `workDir` (VRTs for grey and paletted images and for mosaics). Throws one UserError naming the
 * tileset, the file and the cause for the first bad file.
 */
export async function openImagery(id: string, source: string, workDir: string): Promise<ImagerySource> {
  const gdal = await loadGdal();
  const files = await expandGlob(source);
  if (files.length === 0) throw bad(id, source, 'no file matches this pattern');
  await mkdir(workDir, { recursive: true });
  const inputs = new Set<string>();
  const boxes: BBox[] = [];
  let finest = Infinity;
  /** Datasets by coordinate system and band count, in file order. */
  const groups = new Map<string, string[]>();
  for (const [i, file] of files.entries()) {
    const ds = await openImage(gdal, id, file);
    try {
      const why = problem(ds);
      if (why) throw bad(id, file, why);
      for (const f of ds.getFileList()) inputs.add(f);
      const { box, metres } = placeOf(gdal, id, file, ds);
      boxes.push(box);
      finest = Math.min(finest, metres);
      const rgb = rgbBands(ds);
      let dataset = file;
      let bands = 3 + (rgb.alpha ? 1 : 0);
      const plain = !rgb.palette && rgb.bands.join() === '1,2,3' && (rgb.alpha === undefined || rgb.alpha === 4) && ds.bands.count() === bands;
      if (!plain) {
        // Grey, paletted or with more bands: R, G, B (and alpha) through a VRT.
        dataset = join(workDir, `rgb-${i}.vrt`);
        const hasAlphaPalette = rgb.palette && (ds.bands.get(1).colorTable?.count() ?? 0) > 0 && [...Array(ds.bands.get(1).colorTable!.count()).keys()].some((k) => ds.bands.get(1).colorTable!.get(k).c4 < 255);
        const args = rgb.palette
          ? ['-of', 'VRT', '-expand', hasAlphaPalette ? 'rgba' : 'rgb']
          : ['-of', 'VRT', ...[...rgb.bands, ...(rgb.alpha ? [rgb.alpha] : [])].flatMap((b) => ['-b', String(b)]), ...(rgb.alpha ? ['-colorinterp', 'red,green,blue,alpha'] : ['-colorinterp', 'red,green,blue'])];
        if (rgb.palette) bands = hasAlphaPalette ? 4 : 3;
        try {
          (await gdal.translateAsync(dataset, ds, args)).close();
        } catch (e) {
          throw bad(id, file, `cannot be read as RGB (${(e as Error).message})`);
        }
      }
      const key = `${ds.srs!.toWKT()}\n${bands}`;
      groups.set(key, [...(groups.get(key) ?? []), dataset]);
    } finally {
      ds.close();
    }
  }
  const datasets: string[] = [];
  for (const [n, members] of [...groups.values()].entries()) {
    if (members.length === 1) {
      datasets.push(members[0]);
      continue;
    }
    // One mosaic per coordinate system and layout: the finest resolution, later files on top.
    const mosaic = join(workDir, `mosaic-${n}.vrt`);
    try {
      (await gdal.buildVRTAsync(mosaic, members, ['-resolution', 'highest'])).close();
    } catch (e) {
      throw bad(id, source, `GDAL cannot make one mosaic of its ${members.length} images (${(e as Error).message})`);
    }
    datasets.push(mosaic);
  }
  return { files, inputs: [...inputs].sort(), datasets, boxes, bounds: union(boxes), nativeZoom: zoomForMercatorPixel(finest) };
}
