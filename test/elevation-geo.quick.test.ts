import { describe, expect, it } from 'vitest';
import { decodePolyline, encodePolyline, resample } from '../lib/elevation/geo.ts';
import { EARTH_RADIUS_M, cumulativeDistances, haversine } from '../lib/geo-distance.ts';

describe('haversine and range distances', () => {
  it('one degree of latitude is R·π/180 with R = 6378160.187 m', () => {
    expect(haversine({ lat: 0, lon: 0 }, { lat: 1, lon: 0 })).toBeCloseTo((EARTH_RADIUS_M * Math.PI) / 180, 6);
    expect(haversine({ lat: 10, lon: 20 }, { lat: 10, lon: 20 })).toBe(0);
  });

  it('a quarter of the equator and pole to equator', () => {
    expect(haversine({ lat: 0, lon: 0 }, { lat: 0, lon: 90 })).toBeCloseTo((EARTH_RADIUS_M * Math.PI) / 2, 3);
    expect(haversine({ lat: 90, lon: 0 }, { lat: 0, lon: 45 })).toBeCloseTo((EARTH_RADIUS_M * Math.PI) / 2, 3);
  });

  it('cumulative distances start at 0 and add the legs', () => {
    const pts = [{ lat: 43.7384, lon: 7.4246 }, { lat: 43.7311, lon: 7.4197 }, { lat: 43.7503, lon: 7.439 }];
    const d = cumulativeDistances(pts);
    expect(d[0]).toBe(0);
    expect(d[1]).toBeCloseTo(haversine(pts[0], pts[1]), 9);
    expect(d[2]).toBeCloseTo(d[1] + haversine(pts[1], pts[2]), 9);
    // Independent check of the first leg with the spherical law of cosines.
    const r = Math.PI / 180;
    const c = Math.acos(Math.sin(pts[0].lat * r) * Math.sin(pts[1].lat * r) + Math.cos(pts[0].lat * r) * Math.cos(pts[1].lat * r) * Math.cos((pts[1].lon - pts[0].lon) * r));
    expect(d[1]).toBeCloseTo(c * EARTH_RADIUS_M, 3);
  });
});

describe('polyline5 / polyline6', () => {
  it('decodes Google\'s reference polyline5', () => {
    expect(decodePolyline('_p~iF~ps|U_ulLnnqC_mqNvxq`@', 5)).toEqual([
      { lat: 38.5, lon: -120.2 }, { lat: 40.7, lon: -120.95 }, { lat: 43.252, lon: -126.453 },
    ]);
    expect(encodePolyline([{ lat: 38.5, lon: -120.2 }, { lat: 40.7, lon: -120.95 }, { lat: 43.252, lon: -126.453 }], 5)).toBe('_p~iF~ps|U_ulLnnqC_mqNvxq`@');
  });

  it('round-trips at 6 decimals, including negative and large coordinates', () => {
    const pts = [{ lat: 43.738412, lon: 7.424634 }, { lat: -33.868820, lon: 151.209296 }, { lat: 89.999999, lon: -179.999999 }, { lat: 0, lon: 0 }];
    const enc = encodePolyline(pts, 6);
    expect(decodePolyline(enc, 6)).toEqual(pts);
    // The same string read as polyline5 is ten times larger: the two precisions really differ.
    expect(decodePolyline(enc, 5)[0].lat).toBeCloseTo(437.38412, 5);
  });

  it('rejects malformed strings', () => {
    expect(() => decodePolyline('_p~iF~ps|U_', 5)).toThrow(/truncated|odd/);
    expect(() => decodePolyline('_p~iF', 5)).toThrow(/odd/);
    expect(() => decodePolyline('ab cd', 6)).toThrow(/invalid character/);
  });
});

describe('resampling', () => {
  const line = [{ lat: 43.70, lon: 7.40 }, { lat: 43.71, lon: 7.42 }, { lat: 43.73, lon: 7.43 }];

  it('keeps first and last points and spaces samples evenly along the line', () => {
    const spacing = 100;
    const out = resample(line, spacing);
    expect(out[0]).toEqual(line[0]);
    expect(out[out.length - 1]).toEqual(line[2]);
    const total = cumulativeDistances(line)[2];
    expect(out.length).toBe(Math.floor(total / spacing) + 2 - (total % spacing < 1e-3 ? 1 : 0));
    const d = cumulativeDistances(out);
    // Every step is `spacing`, except across the original vertex (a chord: at most spacing) and the last.
    for (let i = 1; i < out.length - 1; i++) {
      const step = d[i] - d[i - 1];
      expect(step).toBeLessThanOrEqual(spacing + 1e-6);
      expect(step).toBeGreaterThan(spacing * 0.9);
    }
    expect(d[d.length - 1] - d[d.length - 2]).toBeLessThanOrEqual(spacing + 1e-6);
  });

  it('a spacing longer than the line gives just the two ends', () => {
    const out = resample(line, 1e7);
    expect(out).toEqual([line[0], line[2]]);
  });

  it('samples lie on the segments (great circle), not off the line', () => {
    const out = resample([line[0], line[1]], 50);
    const total = haversine(line[0], line[1]);
    for (const p of out) expect(haversine(line[0], p) + haversine(p, line[1])).toBeCloseTo(total, 3);
  });
});
