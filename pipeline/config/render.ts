import { z } from 'zod';
import { isLanguageCode, LANGUAGE_CODE_HINT } from '../../lib/languages.ts';

/** Bounding box [west, south, east, north] in degrees. */
export const bboxSchema = z
  .tuple([z.number().min(-180).max(180), z.number().min(-85.0511287798066).max(85.0511287798066), z.number().min(-180).max(180), z.number().min(-85.0511287798066).max(85.0511287798066)])
  .refine((b) => b[0] < b[2] && b[1] < b[3], { message: 'expected [west, south, east, north] with west < east and south < north' });

/** A label language: the `xx` of `name:xx` (lib/languages.ts). */
export const languageSchema = z
  .string({ error: `expected ${LANGUAGE_CODE_HINT}` })
  .refine(isLanguageCode, {
    error: (issue) =>
      issue.input === 'latin' || issue.input === 'nonlatin'
        ? `"${issue.input}" is not a language: name:${issue.input} is always written`
        : `${JSON.stringify(issue.input)} is not ${LANGUAGE_CODE_HINT}`,
  });

/** One style to pre-render. */
export const styleSchema = z.strictObject({
  /** MapLibre style JSON, relative to the config file. */
  style: z.string().min(1),
  /** Tileset id that `mbtiles://…`/`pmtiles://…`/TileJSON sources of the style resolve to (default: the only tileset). */
  tileset: z.string().min(1).optional(),
  minzoom: z.number().int().min(0).max(24).default(0),
  maxzoom: z.number().int().min(0).max(24).default(14),
  /** Deepest raster zoom `serve` answers, above `maxzoom` by upscaling baked tiles (default 20; static-server/overzoom). */
  maxzoom_served: z.number().int().min(0).max(24).optional(),
  /**
   * How `serve` answers raster zooms above `maxzoom`: `upscale` the deepest baked tile (the server stays
   * static), or `render` them on demand in headless Chromium, byte-identical to a build baked that deep.
   */
  overzoom: z.enum(['upscale', 'render'], { error: 'expected "upscale" or "render"' }).default('upscale'),
  /** Area to render; default: the tileset's bounds. */
  bbox: bboxSchema.optional(),
  scales: z.array(z.union([z.literal(1), z.literal(2)], { error: 'expected 1 or 2' })).min(1).default([1, 2]),
  formats: z.array(z.enum(['png', 'jpg', 'webp'], { error: 'expected "png", "jpg" or "webp"' })).min(1).default(['png', 'jpg']),
  /**
   * Bake the labels in this language: every label that shows a name reads `name:xx` first, then the
   * style's own choice (lib/style-language.ts; the tileset must carry `name:xx`). Otherwise an ordinary style.
   */
  language: languageSchema.optional(),
  /**
   * A folder of SVG icons (one per `<name>.svg`, relative to the config file) made into the style's sprite
   * at 1x and 2x: `"icons/"` replaces the style's own sprite, `{"extend": "icons/"}` adds its icons to it
   * (a name in both: the folder's icon). Otherwise the style's own sprite is copied.
   */
  sprite: z
    .union([z.string().min(1), z.strictObject({ extend: z.string().min(1) })], { error: 'expected a folder of SVG icons ("icons/") or {"extend": "icons/"}' })
    .optional(),
});

/** Renderer settings shared by every style. */
export const renderSchema = z
  .strictObject({
    /** Tiles per metatile side. */
    metatile: z.number().int().min(1).max(16).default(4),
    /** Margin in CSS pixels (1x) rendered around a metatile and cropped away. */
    margin: z.number().int().min(0).max(512).default(64),
    /** Render pool size (browsers); default: one per two CPUs this process may use (workers/pool.ts defaultRenderWorkers, lib/cpus.ts). */
    workers: z.number().int().min(1).max(64).optional(),
    png: z.strictObject({ compressionLevel: z.number().int().min(0).max(9).default(6), palette: z.boolean().default(false) }).prefault({}),
    jpeg: z.strictObject({ quality: z.number().int().min(1).max(100).default(85) }).prefault({}),
    /**
     * WebP tiles (`"formats": [..., "webp"]`): lossy at `quality`, or `lossless` (the PNG's pixels exactly;
     * `quality` then trades encoding time for size).
     */
    webp: z.strictObject({ quality: z.number().int().min(1).max(100).default(90), lossless: z.boolean().default(false) }).prefault({}),
    /**
     * Metatiles per render task (fewer when there are not enough for every worker). A task's
     * metatiles are journalled when it returns: a killed build renders again at most the tasks in flight.
     */
    batch: z.number().int().min(1).max(64).default(4),
    /** Per-metatile timeout before the browser is restarted. */
    timeoutMs: z.number().int().min(1000).default(60_000),
    /** Retries of a failed metatile before the build fails. */
    retries: z.number().int().min(0).max(10).default(2),
    /**
     * Render each distinct view once: a metatile whose view loads the same source tiles in the same
     * places as one already rendered in this run takes its pixels (docs/regions.md). Off: every
     * metatile is rendered (the reference the dedup is tested against).
     */
    dedup: z.boolean().default(true),
  })
  .prefault({});

export type StyleConfig = z.infer<typeof styleSchema>;
export type RenderConfig = z.infer<typeof renderSchema>;
