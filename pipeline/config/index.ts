import { readFile } from 'node:fs/promises';
import { dirname, resolve } from 'node:path';
import { z } from 'zod';
import { UserError } from '../../lib/errors.ts';
import { elevationSchema } from './elevation.ts';
import { renderSchema, styleSchema } from './render.ts';

const idSchema = z.string().regex(/^[A-Za-z0-9_-]+$/, 'expected an id of letters, digits, "_" or "-"');

/** A vector tileset: MBTiles, PMTiles or a z/x/y folder. */
export const tilesetSchema = z.union([
  z.string().min(1),
  z.strictObject({
    source: z.string().min(1),
    name: z.string().optional(),
    attribution: z.string().optional(),
    description: z.string().optional(),
  }),
], { error: 'expected a source path (MBTiles, PMTiles or z/x/y folder) or {"source": path, "name"?, "attribution"?, "description"?}' });

/** The build config file. Paths are relative to the file itself. */
export const configSchema = z.strictObject({
  $schema: z.string().optional(),
  /** Output folder (default `build` beside the config). */
  out: z.string().min(1).default('build'),
  /** Attribution shown for everything served (tilesets may add their own). */
  attribution: z.string().optional(),
  tilesets: z.record(idSchema, tilesetSchema).default({}),
  styles: z.record(idSchema, styleSchema).default({}),
  /** Glyph folder `<fontstack>/<start>-<end>.pbf`. */
  fonts: z.string().optional(),
  render: renderSchema,
  elevation: elevationSchema.optional(),
});

type RawConfig = z.infer<typeof configSchema>;

export interface TilesetConfig {
  id: string;
  source: string;
  name?: string;
  attribution?: string;
  description?: string;
}

/** A validated config with every path made absolute. */
export interface BuildConfig extends Omit<RawConfig, 'tilesets' | 'out' | 'fonts' | 'styles' | 'elevation'> {
  /** The config file itself (absolute). */
  file: string;
  out: string;
  fonts?: string;
  tilesets: Record<string, TilesetConfig>;
  styles: Record<string, RawConfig['styles'][string] & { id: string }>;
  elevation?: Omit<NonNullable<RawConfig['elevation']>, 'sources'> & {
    sources: { path: string; priority?: number; nodata?: number }[];
  };
}

/** `$.a.b[0]` from a zod issue path. */
export function jsonPath(path: readonly PropertyKey[]): string {
  return path.reduce<string>((s, k) => (typeof k === 'number' ? `${s}[${k}]` : `${s}.${String(k)}`), '$');
}

/** Validate a parsed config object; `file` is only used for messages and to resolve paths. */
export function parseConfig(raw: unknown, file: string): BuildConfig {
  const r = configSchema.safeParse(raw);
  if (!r.success) {
    const lines = r.error.issues.map((i) => `  ${jsonPath(i.path)}: ${i.message}`);
    throw new UserError(`${file}: invalid config\n${lines.join('\n')}`, { exitCode: 2 });
  }
  const c = r.data;
  const base = dirname(resolve(file));
  const abs = (p: string) => resolve(base, p);
  const tilesets: Record<string, TilesetConfig> = {};
  for (const [id, t] of Object.entries(c.tilesets)) {
    tilesets[id] = typeof t === 'string' ? { id, source: abs(t) } : { id, ...t, source: abs(t.source) };
  }
  const styles: BuildConfig['styles'] = {};
  for (const [id, s] of Object.entries(c.styles)) {
    if (s.minzoom > s.maxzoom) {
      throw new UserError(`${file}: invalid config\n  ${jsonPath(['styles', id, 'minzoom'])}: expected minzoom <= maxzoom (${s.minzoom} > ${s.maxzoom})`, { exitCode: 2 });
    }
    const tileset = s.tileset ?? (Object.keys(tilesets).length === 1 ? Object.keys(tilesets)[0] : undefined);
    if (!tileset || !tilesets[tileset]) {
      throw new UserError(`${file}: invalid config\n  ${jsonPath(['styles', id, 'tileset'])}: expected one of the configured tileset ids (${Object.keys(tilesets).join(', ') || 'none configured'})`, { exitCode: 2 });
    }
    styles[id] = { ...s, id, tileset, style: abs(s.style) };
  }
  const elevation = c.elevation && {
    ...c.elevation,
    sources: c.elevation.sources.map((s) => (typeof s === 'string' ? { path: abs(s) } : { ...s, path: abs(s.path) })),
  };
  return { ...c, file: resolve(file), out: abs(c.out), fonts: c.fonts ? abs(c.fonts) : undefined, tilesets, styles, elevation };
}

/** Read and validate a config file. */
export async function loadConfig(file: string): Promise<BuildConfig> {
  let text: string;
  try {
    text = await readFile(file, 'utf8');
  } catch (e) {
    throw new UserError(`${file}: cannot read config (${(e as NodeJS.ErrnoException).code ?? String(e)})`);
  }
  let raw: unknown;
  try {
    raw = JSON.parse(text);
  } catch (e) {
    throw new UserError(`${file}: not valid JSON (${(e as Error).message})`, { exitCode: 2 });
  }
  return parseConfig(raw, file);
}
