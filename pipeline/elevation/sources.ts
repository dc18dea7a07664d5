import { UserError } from '../../lib/errors.ts';
import { expandGlob, isGlob } from '../../lib/glob.ts';
import { probeGdal, readGdal } from './gdal.ts';
import type { DemGrid, DemInfo } from './grid.ts';

/** One configured DEM input (absolute path or glob). */
export interface DemSource {
  path: string;
  priority?: number;
  nodata?: number;
}

/** Expand every source; a glob matching nothing is an error naming it. */
export async function expandSources(sources: DemSource[]): Promise<DemSource[]> {
  const out: DemSource[] = [];
  for (const s of sources) {
    const files = await expandGlob(s.path);
    if (files.length === 0) throw new UserError(`${s.path}: no DEM file matches this pattern`);
    for (const f of files) out.push({ ...s, path: f });
  }
  return out;
}

/** Read one DEM (SRTM .hgt, .hgt.gz, .zip, GeoTIFF...) through GDAL. */
export function readDem(s: DemSource): Promise<DemGrid> {
  return readGdal(s.path, { nodata: s.nodata });
}

/** Where one DEM's posts lie, without reading its heights. */
export function probeDem(s: DemSource): Promise<DemInfo> {
  return probeGdal(s.path, { nodata: s.nodata });
}
