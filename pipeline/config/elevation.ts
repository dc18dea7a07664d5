import { z } from 'zod';

/** One DEM input: a file or glob (relative to the config), with an optional priority. */
export const demSourceSchema = z.union([
  z.string().min(1),
  z.strictObject({
    path: z.string().min(1),
    /** Higher wins where sources overlap; default: finer resolution wins. */
    priority: z.number().optional(),
    /** Override the file's nodata value. */
    nodata: z.number().optional(),
  }),
], { error: 'expected a DEM path or glob, or {"path": path, "priority"?, "nodata"?}' });

const idSchema = z.string().regex(/^[A-Za-z0-9_-]+$/, 'expected an id of letters, digits, "_" or "-"');
const zoomSchema = z.number().int().min(0).max(20);

export const terrainSchema = z.strictObject({
  /** Tileset id the terrain tiles are served under (/data/{id}/{z}/{x}/{y}.{png|webp}). */
  id: idSchema.default('terrain'),
  encoding: z.enum(['terrarium', 'mapbox']).default('terrarium'),
  format: z.enum(['png', 'webp']).default('png'),
  minzoom: zoomSchema.default(0),
  /** Default: the zoom whose pixels are just finer than the finest DEM's posts. */
  maxzoom: zoomSchema.optional(),
}).refine((t) => t.maxzoom === undefined || t.minzoom <= t.maxzoom, { message: 'expected minzoom <= maxzoom', path: ['minzoom'] });

/** Contour intervals per zoom (maplibre-contour's defaults): `[minor, index]` metres; a zoom uses the nearest entry at or below it. */
export const DEFAULT_CONTOUR_INTERVALS: Record<string, [number, number]> = { 11: [100, 500], 12: [50, 250], 13: [20, 100], 14: [10, 50] };

const intervalSchema = z
  .tuple([z.number().int().positive(), z.number().int().positive()], { error: 'expected [minor, index] whole metres, e.g. [20, 100]' })
  .refine(([minor, major]) => major % minor === 0, { message: 'expected the index interval to be a multiple of the minor one' });

export const contoursSchema = z
  .strictObject({
    /** Tileset id the contour lines are served under (/data/{id}/{z}/{x}/{y}.pbf). */
    id: idSchema.default('contours'),
    minzoom: zoomSchema.default(11),
    maxzoom: zoomSchema.default(14),
    /** `{"<zoom>": [minor, index]}`. */
    intervals: z
      .record(z.string().regex(/^\d{1,2}$/, 'expected a zoom (0-20)'), intervalSchema)
      .refine((r) => Object.keys(r).length > 0, { message: 'expected at least one zoom' })
      .default(DEFAULT_CONTOUR_INTERVALS),
  })
  .refine((c) => c.minzoom <= c.maxzoom, { message: 'expected minzoom <= maxzoom', path: ['minzoom'] });

/** Zooms of a tileset shaded from the index: default from the terrain tiles' minzoom to the DEM's resolution. */
const shadedZooms = {
  /** Default: the terrain tiles' minzoom (0 without terrain tiles). */
  minzoom: zoomSchema.optional(),
  /** Default: the terrain tiles' maxzoom or the zoom of the finest DEM's resolution, whichever is deeper. */
  maxzoom: zoomSchema.optional(),
};
const zoomOrder = { message: 'expected minzoom <= maxzoom', path: ['minzoom'] };
const zoomsInOrder = (t: { minzoom?: number; maxzoom?: number }) => t.minzoom === undefined || t.maxzoom === undefined || t.minzoom <= t.maxzoom;

export const hillshadeSchema = z
  .strictObject({
    /** Tileset id the hillshade is served under (/data/{id}/{z}/{x}/{y}.{png|webp}). */
    id: idSchema.default('hillshade'),
    format: z.enum(['png', 'webp']).default('png'),
    ...shadedZooms,
    /** Light direction, degrees clockwise from north (gdaldem `-az`; `multidirectional` ignores it). */
    azimuth: z.number().min(0).max(360).default(315),
    /** Light altitude above the horizon, degrees (gdaldem `-alt`). */
    altitude: z.number().min(0).max(90).default(45),
    /** Vertical exaggeration (gdaldem `-z`). */
    zfactor: z.number().positive().max(100).default(1),
    /** gdaldem's shading: `standard`, or its `-multidirectional`, `-combined` or `-igor` variant. */
    method: z.enum(['standard', 'multidirectional', 'combined', 'igor']).default('standard'),
    /** Slope algorithm (gdaldem `-alg`). */
    algorithm: z.enum(['Horn', 'ZevenbergenThorne']).default('Horn'),
    /** `grey`: opaque grey shades (to lay under a style); `transparent`: flat ground transparent, shadows black and highlights white with alpha (to lay over one). Outside the DEMs: transparent either way. */
    flat: z.enum(['grey', 'transparent']).default('grey'),
  })
  .refine(zoomsInOrder, zoomOrder);

export const reliefSchema = z
  .strictObject({
    /** Tileset id the colour relief is served under (/data/{id}/{z}/{x}/{y}.{png|webp}). */
    id: idSchema.default('relief'),
    format: z.enum(['png', 'webp']).default('png'),
    ...shadedZooms,
    /** Colour ramp file in `gdaldem color-relief`'s text format (`elevation R G B [A]` per line, metres), relative to the config; default: hypsometric tints. */
    ramp: z.string().min(1).optional(),
    /** Between ramp entries: `interpolate` (gdaldem's default), `nearest` (`-nearest_color_entry`) or `exact` (`-exact_color_entry`). */
    match: z.enum(['interpolate', 'nearest', 'exact']).default('interpolate'),
  })
  .refine(zoomsInOrder, zoomOrder);

export const elevationSchema = z.strictObject({
  sources: z.array(demSourceSchema).min(1),
  /** Quantisation step in metres (exact for integer sources). */
  precision: z.number().positive().max(100).default(0.1),
  /** Terrain-RGB tiles; `false` to skip. */
  terrain: z.union([terrainSchema, z.literal(false)]).prefault({}),
  /** Contour lines as a vector tileset; absent or `false`: none. */
  contours: z.union([contoursSchema, z.literal(false)]).optional(),
  /** Hillshade raster tiles shaded by GDAL from the index; `{}` for the defaults; absent or `false`: none. */
  hillshade: z.union([hillshadeSchema, z.literal(false)]).optional(),
  /** Colour-relief raster tiles coloured by GDAL from the index with a ramp; absent or `false`: none. */
  relief: z.union([reliefSchema, z.literal(false)]).optional(),
  /** Credit for the DEMs, on the terrain, contour, hillshade and relief tilesets (default: the config's `attribution`). */
  attribution: z.string().optional(),
});

export type ElevationConfig = z.infer<typeof elevationSchema>;
export type TerrainConfig = z.infer<typeof terrainSchema>;
export type ContoursConfig = z.infer<typeof contoursSchema>;
export type HillshadeConfig = z.infer<typeof hillshadeSchema>;
export type ReliefConfig = z.infer<typeof reliefSchema>;

/** The `[minor, index]` intervals of zoom `z`: the entry of the nearest zoom at or below it (else the lowest entry). */
export function contourIntervals(intervals: Record<string, [number, number]>, z: number): [number, number] {
  const zooms = Object.keys(intervals).map(Number).sort((a, b) => a - b);
  const at = zooms.filter((k) => k <= z).pop() ?? zooms[0];
  return intervals[String(at)];
}
