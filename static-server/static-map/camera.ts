/**
 * Where a static map looks: centre in Web Mercator world coordinates (0 … 1), zoom in the raster
 * tiles' scheme (at zoom z a 1x image shows the world 256·2^z px wide, as the 256 px tiles do;
 * @2x doubles the pixels, not the area), bearing in degrees clockwise, and the projection of
 * lon/lat onto the image's pixels.
 */
import { lonLatToWorld } from '../../lib/tile-math.ts';
import type { StaticMapRequest } from './params.ts';

/** Pixels of the world at zoom 0 and scale 1. */
export const WORLD_PX_Z0 = 256;

export interface Camera {
  cx: number;
  cy: number;
  zoom: number;
  bearing: number;
  /** Image size in pixels (logical size × scale). */
  width: number;
  height: number;
  scale: 1 | 2;
}

/** World pixels per world unit at the camera's zoom and scale. */
export function worldPixels(cam: Pick<Camera, 'zoom' | 'scale'>): number {
  return WORLD_PX_Z0 * cam.scale * 2 ** cam.zoom;
}

/** Image pixel position of lon/lat (pixel edges at whole numbers), rotated by the bearing about the image centre. */
export function project(cam: Camera, lon: number, lat: number): [number, number] {
  const w = lonLatToWorld(lon, lat);
  const p = worldPixels(cam);
  const dx = (w.x - cam.cx) * p;
  const dy = (w.y - cam.cy) * p;
  if (cam.bearing === 0) return [cam.width / 2 + dx, cam.height / 2 + dy];
  const t = (cam.bearing * Math.PI) / 180;
  const c = Math.cos(t), s = Math.sin(t);
  return [cam.width / 2 + dx * c + dy * s, cam.height / 2 - dx * s + dy * c];
}

/**
 * The camera of a request. Boxes and `auto` (the box around every path point and marker, GeoJSON's among them) are centred
 * and fitted inside the image less `padding` on each side, at most at `fitMaxZoom`.
 */
export function cameraFor(req: StaticMapRequest, fitMaxZoom: number): Camera {
  const size = { width: req.width * req.scale, height: req.height * req.scale, scale: req.scale };
  const v = req.view;
  if (v.kind === 'center') {
    const w = lonLatToWorld(v.lon, v.lat);
    return { cx: w.x, cy: w.y, zoom: v.zoom, bearing: v.bearing, ...size };
  }
  let box: [number, number, number, number];
  if (v.kind === 'bbox') {
    const sw = lonLatToWorld(v.bbox[0], v.bbox[1]);
    const ne = lonLatToWorld(v.bbox[2], v.bbox[3]);
    box = [sw.x, ne.y, ne.x, sw.y];
  } else {
    // A loop, not Math.min(...): a GeoJSON body may hold more positions than a call takes arguments.
    let minX = Infinity, minY = Infinity, maxX = -Infinity, maxY = -Infinity;
    for (const p of [...req.paths.flatMap((p) => p.points), ...req.markers]) {
      const w = lonLatToWorld(p.lon, p.lat);
      minX = Math.min(minX, w.x), minY = Math.min(minY, w.y), maxX = Math.max(maxX, w.x), maxY = Math.max(maxY, w.y);
    }
    box = [minX, minY, maxX, maxY];
  }
  const [x0, y0, x1, y1] = box;
  const free = 1 - 2 * req.padding;
  const fitX = x1 > x0 ? Math.log2((req.width * free) / (WORLD_PX_Z0 * (x1 - x0))) : Infinity;
  const fitY = y1 > y0 ? Math.log2((req.height * free) / (WORLD_PX_Z0 * (y1 - y0))) : Infinity;
  const zoom = Math.max(0, Math.min(fitX, fitY, fitMaxZoom));
  return { cx: (x0 + x1) / 2, cy: (y0 + y1) / 2, zoom, bearing: 0, ...size };
}
