/**
 * The static maps' one overlay model: paths (lines, and polygons with their holes) and markers (pins, or
 * icons of the style's sprite), with their titles. params.ts reads them from the URL, geojson.ts from a
 * GeoJSON body; overlay.ts draws them.
 */
import type { LatLon } from '../../lib/geo-distance.ts';
import type { Colour } from './colour.ts';

/** Pin sizes (simplestyle's `marker-size`). */
export const MARKER_SIZES = ['small', 'medium', 'large'] as const;
export type MarkerSize = (typeof MARKER_SIZES)[number];

/** A line, or with `fill` a closed path: a polygon (its outer ring, and its holes). */
export interface PathOverlay {
  /** The line's vertices, or the polygon's outer ring. */
  points: LatLon[];
  /** The polygon's inner rings (filled by the even-odd rule). */
  holes?: LatLon[][];
  stroke: Colour;
  /** Line width in logical pixels (0: no outline). */
  width: number;
  fill?: Colour;
  /** A label at the line's middle or the polygon's centroid. */
  title?: string;
}

/** A pin whose tip stands on the point, or an icon of the style's sprite centred on it. */
export interface MarkerOverlay {
  lon: number;
  lat: number;
  colour: Colour;
  /** 1–3 letters or digits on the pin. */
  label?: string;
  /** The pin's size (default medium). */
  size?: MarkerSize;
  /** An icon of the style's sprite drawn instead of the pin (sprite-icons.ts). */
  icon?: string;
  /** A GeoJSON `marker-symbol` not yet resolved against the sprite (icon, else label), and where it was given. */
  symbol?: { name: string; where: string };
  /** A label below the marker. */
  title?: string;
}
