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

export const terrainSchema = z.strictObject({
  /** Tileset id the terrain tiles are served under (/data/{id}/{z}/{x}/{y}.{png|webp}). */
  id: z.string().min(1).default('terrain'),
  encoding: z.enum(['terrarium', 'mapbox']).default('terrarium'),
  format: z.enum(['png', 'webp']).default('png'),
  minzoom: z.number().int().min(0).max(20).default(0),
  maxzoom: z.number().int().min(0).max(20).default(12),
});

export const elevationSchema = z.strictObject({
  sources: z.array(demSourceSchema).min(1),
  /** Quantisation step in metres (exact for integer sources). */
  precision: z.number().positive().max(100).default(0.1),
  /** Terrain-RGB tiles; `false` to skip. */
  terrain: z.union([terrainSchema, z.literal(false)]).prefault({}),
});

export type ElevationConfig = z.infer<typeof elevationSchema>;
export type TerrainConfig = z.infer<typeof terrainSchema>;
