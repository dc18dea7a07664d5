/**
 * The /height request and response (Valhalla's elevation API): validation, resampling and the
 * response body with its fixed key order. Pure functions; the HTTP route wraps them.
 */
import { cumulativeDistances, type LatLon } from '../geo-distance.ts';
import { HttpStatus } from '../http-status.ts';
import { decodePolyline, encodePolyline, resample, resampledCount, TooManyPointsError, type PolylinePrecision } from './geo.ts';

/** Error codes in `error_code` (Valhalla's numbering where it has one). */
export enum HeightErrorCode {
  /** Body is not JSON, wrong content type or charset, too large, nested too deeply, no `json` query parameter, or a bad `height_precision`. */
  BadBody = 100,
  /** A point with a non-numeric or out-of-range lat/lon. */
  BadPoint = 130,
  /** Malformed `encoded_polyline` or unknown `shape_format`. */
  BadPolyline = 131,
  /** `shape` is empty. */
  EmptyShape = 311,
  /** Neither `shape` nor `encoded_polyline`. */
  NoShape = 312,
  /** `resample_distance` below the minimum (or not a number). */
  ResampleTooSmall = 313,
  /** More points than the limit (after resampling). */
  TooManyPoints = 314,
}

/** Configurable limits of the endpoint. */
export interface HeightLimits {
  /** Smallest `resample_distance` accepted, metres. */
  minResampleDistance: number;
  /** Most points per request, counted as given and again after resampling. */
  maxPoints: number;
  /** Largest request body, bytes (413 beyond). */
  bodyLimitBytes: number;
}

/** Defaults: 10 m, 100,000 points, 8 MiB. */
export const DEFAULT_HEIGHT_LIMITS: HeightLimits = { minResampleDistance: 10, maxPoints: 100_000, bodyLimitBytes: 8 * 1024 * 1024 };

/** Limits from the environment (TILEBAKE_HEIGHT_MIN_RESAMPLE_M, TILEBAKE_HEIGHT_MAX_POINTS, TILEBAKE_HEIGHT_BODY_LIMIT), else defaults. */
export function heightLimitsFromEnv(env: NodeJS.ProcessEnv = process.env): HeightLimits {
  const num = (name: string, dflt: number) => {
    const v = env[name];
    if (v === undefined || v === '') return dflt;
    const n = Number(v);
    if (!Number.isFinite(n) || n <= 0) throw new Error(`${name}: expected a positive number (got "${v}")`);
    return n;
  };
  return {
    minResampleDistance: num('TILEBAKE_HEIGHT_MIN_RESAMPLE_M', DEFAULT_HEIGHT_LIMITS.minResampleDistance),
    maxPoints: Math.floor(num('TILEBAKE_HEIGHT_MAX_POINTS', DEFAULT_HEIGHT_LIMITS.maxPoints)),
    bodyLimitBytes: Math.floor(num('TILEBAKE_HEIGHT_BODY_LIMIT', DEFAULT_HEIGHT_LIMITS.bodyLimitBytes)),
  };
}

/** A request error: HTTP status, message and error code. */
export class HeightRequestError extends Error {
  constructor(readonly code: HeightErrorCode, message: string, readonly status: number = HttpStatus.BadRequest) {
    super(message);
    this.name = 'HeightRequestError';
  }
}

/** A validated request. */
export interface HeightRequest {
  /** Points to answer (after resampling). */
  points: LatLon[];
  /** Which field the shape came in, echoed back in the same form. */
  input: 'shape' | 'encoded_polyline';
  polylinePrecision: PolylinePrecision;
  range: boolean;
  /** Decimals of heights and distances: 0, 1 or 2. */
  decimals: 0 | 1 | 2;
  id?: unknown;
  /** The original encoded polyline when it is echoed unchanged. */
  polyline?: string;
}

/** Longest echo of a client's value in an error message. */
const MAX_ECHO_CHARS = 64;

/** A client's value for an error message, cut short (a field may hold megabytes). */
function shown(v: unknown): string {
  const text = JSON.stringify(v) ?? String(v);
  return text.length > MAX_ECHO_CHARS ? `${text.slice(0, MAX_ECHO_CHARS)}…` : text;
}

const isObject = (v: unknown): v is Record<string, unknown> => typeof v === 'object' && v !== null && !Array.isArray(v);

/** Validate a parsed JSON body against the limits; throws HeightRequestError. */
export function parseHeightRequest(body: unknown, limits: HeightLimits): HeightRequest {
  if (!isObject(body)) throw new HeightRequestError(HeightErrorCode.BadBody, 'Failed to parse json request: expected a JSON object');
  let points: LatLon[];
  let input: HeightRequest['input'];
  let polylinePrecision: PolylinePrecision = 6;
  let polyline: string | undefined;
  const tooMany = (n: number | string) => new HeightRequestError(HeightErrorCode.TooManyPoints, `Too many shape points: ${n} (the limit is ${limits.maxPoints} points, counted as given and after resampling)`);
  const hp = body.height_precision;
  if (hp !== undefined && hp !== 0 && hp !== 1 && hp !== 2) {
    throw new HeightRequestError(HeightErrorCode.BadBody, `height_precision: expected 0, 1 or 2 (got ${shown(hp)})`);
  }
  if (body.shape !== undefined) {
    input = 'shape';
    if (!Array.isArray(body.shape)) throw new HeightRequestError(HeightErrorCode.BadPoint, 'shape: expected an array of {"lat", "lon"}');
    if (body.shape.length === 0) throw new HeightRequestError(HeightErrorCode.EmptyShape, 'Insufficient shape provided: shape is empty');
    if (body.shape.length > limits.maxPoints) throw tooMany(body.shape.length);
    points = body.shape.map((p: unknown, i: number) => {
      const lat = isObject(p) ? p.lat : undefined, lon = isObject(p) ? p.lon : undefined;
      if (typeof lat !== 'number' || typeof lon !== 'number' || !Number.isFinite(lat) || !Number.isFinite(lon)) {
        throw new HeightRequestError(HeightErrorCode.BadPoint, `shape[${i}]: expected numeric "lat" and "lon"`);
      }
      if (Math.abs(lat) > 90) throw new HeightRequestError(HeightErrorCode.BadPoint, `shape[${i}]: lat ${lat} is outside [-90, 90]`);
      if (Math.abs(lon) > 180) throw new HeightRequestError(HeightErrorCode.BadPoint, `shape[${i}]: lon ${lon} is outside [-180, 180]`);
      return { lat, lon };
    });
  } else if (body.encoded_polyline !== undefined) {
    input = 'encoded_polyline';
    const fmt = body.shape_format ?? 'polyline6';
    if (fmt !== 'polyline6' && fmt !== 'polyline5') throw new HeightRequestError(HeightErrorCode.BadPolyline, `shape_format: expected "polyline6" or "polyline5" (got ${shown(fmt)})`);
    polylinePrecision = fmt === 'polyline5' ? 5 : 6;
    if (typeof body.encoded_polyline !== 'string') throw new HeightRequestError(HeightErrorCode.BadPolyline, 'encoded_polyline: expected a string');
    try {
      points = decodePolyline(body.encoded_polyline, polylinePrecision, limits.maxPoints);
    } catch (e) {
      if (e instanceof TooManyPointsError) throw tooMany(`more than ${limits.maxPoints}`);
      throw new HeightRequestError(HeightErrorCode.BadPolyline, `encoded_polyline: malformed (${(e as Error).message})`);
    }
    if (points.length === 0) throw new HeightRequestError(HeightErrorCode.EmptyShape, 'Insufficient shape provided: encoded_polyline is empty');
    const bad = points.findIndex((p) => Math.abs(p.lat) > 90 || Math.abs(p.lon) > 180);
    if (bad >= 0) throw new HeightRequestError(HeightErrorCode.BadPoint, `encoded_polyline: point ${bad} (${points[bad].lat}, ${points[bad].lon}) is outside the valid range (wrong shape_format?)`);
    polyline = body.encoded_polyline;
  } else {
    throw new HeightRequestError(HeightErrorCode.NoShape, "Insufficiently specified required parameter 'shape' or 'encoded_polyline'");
  }
  if (body.resample_distance !== undefined) {
    const d = body.resample_distance;
    if (typeof d !== 'number' || !Number.isFinite(d) || d < limits.minResampleDistance) {
      throw new HeightRequestError(HeightErrorCode.ResampleTooSmall, `resample_distance must be >= ${limits.minResampleDistance} m (got ${shown(d)})`);
    }
    const n = resampledCount(points, d);
    if (n > limits.maxPoints) throw tooMany(n);
    points = resample(points, d);
    polyline = undefined;
  }
  if (points.length > limits.maxPoints) throw tooMany(points.length);
  return {
    points, input, polylinePrecision, polyline,
    range: body.range === true,
    decimals: (hp ?? 0) as 0 | 1 | 2,
    id: body.id,
  };
}

/** Round to 0, 1 or 2 decimals. */
export function roundTo(v: number, decimals: 0 | 1 | 2): number {
  if (decimals === 0) return Math.round(v);
  const f = decimals === 1 ? 10 : 100;
  return Math.round(v * f) / f;
}

const COORD_FACTOR = 1e6;

/**
 * The response body with keys in order: `shape` or `encoded_polyline` (as they came in), then
 * `height` or `range_height`, then `id` (if given), then `warnings` (points outside coverage).
 */
export function buildHeightResponse(req: HeightRequest, heights: (number | null)[], outside: number[]): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  if (req.input === 'shape') {
    out.shape = req.points.map((p) => ({ lat: Math.round(p.lat * COORD_FACTOR) / COORD_FACTOR, lon: Math.round(p.lon * COORD_FACTOR) / COORD_FACTOR }));
  } else {
    out.encoded_polyline = req.polyline ?? encodePolyline(req.points, req.polylinePrecision);
  }
  const d = req.decimals;
  const hs = heights.map((h) => (h === null ? null : roundTo(h, d)));
  if (req.range) {
    const dist = cumulativeDistances(req.points);
    out.range_height = hs.map((h, i) => [roundTo(dist[i], d), h]);
  } else {
    out.height = hs;
  }
  if (req.id !== undefined) out.id = req.id;
  if (outside.length > 0) {
    out.warnings = [{ code: 'outside_coverage', text: 'points outside every elevation source (their heights are null)', indexes: outside }];
  }
  return out;
}
