/** Tile coordinates and tile file names in request paths, checked with HTTP errors (400, 404). */
import { HttpError } from './http-error.ts';
import { HttpStatus } from './http-status.ts';

/** A validated Slippy Map tile coordinate. */
export interface TileCoord {
  z: number;
  x: number;
  y: number;
}

/** Digits only, short enough to stay an exact JS integer (no sign, no fraction, no exponent). */
const UNSIGNED_INT = /^\d{1,15}$/;
/** A leading minus followed by digits: reported as "negative" rather than "not an integer". */
const NEGATIVE_INT = /^-\d+$/;

/** Parse one path component as a non-negative integer, or throw 400 naming the field. */
function parseComponent(name: 'z' | 'x' | 'y', text: string): number {
  if (UNSIGNED_INT.test(text)) return Number(text);
  const why = NEGATIVE_INT.test(text) ? 'must not be negative' : 'must be a non-negative integer';
  throw new HttpError(HttpStatus.BadRequest, `invalid tile coordinate: ${name} ${why} (got "${text}")`);
}

/**
 * Parse and validate z/x/y from a request path: 400 for a non-integer or negative component and
 * for x or y ≥ 2^z. The zoom range of a particular archive is checked by `checkZoom`.
 */
export function parseTileCoord(zText: string, xText: string, yText: string): TileCoord {
  const z = parseComponent('z', zText);
  const x = parseComponent('x', xText);
  const y = parseComponent('y', yText);
  const size = 2 ** z;
  if (x >= size || y >= size) {
    const name = x >= size ? 'x' : 'y';
    throw new HttpError(
      HttpStatus.BadRequest,
      `invalid tile coordinate: ${name} must be below 2^z = ${size} at z=${z} (got ${name === 'x' ? x : y})`,
    );
  }
  return { z, x, y };
}

/** Throw 404 naming the range when `z` is outside `minzoom..maxzoom` of the named tileset or style. */
export function checkZoom(z: number, minzoom: number, maxzoom: number, what: string): void {
  if (z < minzoom || z > maxzoom) {
    throw new HttpError(HttpStatus.NotFound, `zoom ${z} is outside the zoom range of ${what}: ${minzoom}-${maxzoom}`, {
      minzoom,
      maxzoom,
    });
  }
}

/** Tile file names `{y}.{ext}` and `{y}@2x.{ext}`: y, the optional scale and the extension. */
const TILE_FILE = /^([^.@]+)(@2x)?\.([a-z0-9]+)$/;

/** The parts of a tile file name such as `5974.pbf` or `5974@2x.png`; undefined when it has no extension. */
export function splitTileFile(file: string): { y: string; scale: 1 | 2; ext: string } | undefined {
  const m = TILE_FILE.exec(file);
  if (!m) return undefined;
  return { y: m[1], scale: m[2] ? 2 : 1, ext: m[3] };
}
