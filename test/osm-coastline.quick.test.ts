/**
 * The OSM source's coastline: OPL coastline ways → water polygons clipped to the box, and the ocean
 * shapefile written from a sea that needed repairing.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import type { BBox } from '../lib/tile-math.ts';
import { assembleChains, clipPolyline, parseCoastlineOpl, pointInRing, signedArea2, waterPolygons, type Point } from '../pipeline/osm/coastline.ts';
import { seaGeometry } from '../pipeline/osm/ocean.ts';
import { loadGdal } from '../lib/gdal.ts';

const BOX: BBox = [0, 0, 10, 10];

/** Area of a polygon with holes (degrees², unsigned). */
function area(p: { outer: Point[]; holes: Point[][] }): number {
  return Math.abs(signedArea2(p.outer)) / 2 - p.holes.reduce((s, h) => s + Math.abs(signedArea2(h)) / 2, 0);
}

describe('coastline → water polygons', () => {
  it('parses OPL ways with their nodes\' locations (node lines or inline), dropping nodes without one', () => {
    const opl = ['n1 v1 T x1 y2', 'n2 v1 T x y', 'n3 v1 T x3.5 y-4', 'w2 v1 Tnatural=coastline Nn1,n2,n3', 'w1 v1 Tnatural=coastline Nn4x0y0,n5x1y1,n6x'].join('\n');
    const ways = parseCoastlineOpl(opl);
    expect(ways.map((w) => w.id)).toEqual([1, 2]);
    expect(ways[0]).toEqual({ id: 1, refs: [4, 5], coords: [[0, 0], [1, 1]] });
    expect(ways[1]).toEqual({ id: 2, refs: [1, 3], coords: [[1, 2], [3.5, -4]] });
  });

  it('merges ways end to start into chains and closes rings', () => {
    const w = (id: number, refs: number[]) => ({ id, refs, coords: refs.map((r): Point => [r, r * 2]) });
    const c = assembleChains([w(1, [3, 4]), w(2, [1, 2, 3]), w(3, [4, 5]), w(4, [10, 11, 12]), w(5, [12, 13, 10])]);
    expect(c.open).toEqual([[1, 2, 3, 4, 5].map((r) => [r, r * 2])]);
    // The ring may start at any of its nodes.
    expect(c.closed).toHaveLength(1);
    const ring = c.closed[0];
    expect(ring[0]).toEqual(ring[ring.length - 1]);
    expect(new Set(ring.slice(1).map((p) => p[0]))).toEqual(new Set([10, 11, 12, 13]));
  });

  it('clips a polyline into its parts inside the box', () => {
    const parts = clipPolyline([[-5, 5], [5, 5], [5, 15], [7, 15], [7, 5], [15, 5]], BOX);
    expect(parts).toEqual([[[0, 5], [5, 5], [5, 10]], [[7, 10], [7, 5], [10, 5]]]);
  });

  it('a coast crossing the box with land on its left: the water is the part on its right', () => {
    // West to east along y = 4: land to the north (left), sea to the south.
    const [p] = waterPolygons({ open: [[[-1, 4], [11, 4]]], closed: [] }, BOX);
    expect(area(p)).toBeCloseTo(40, 9);
    expect(signedArea2(p.outer)).toBeLessThan(0); // clockwise
    expect(pointInRing([5, 2], p.outer)).toBe(true);
    expect(pointInRing([5, 6], p.outer)).toBe(false);
    // The same coast the other way round has the sea to the north.
    const [q] = waterPolygons({ open: [[[11, 4], [-1, 4]]], closed: [] }, BOX);
    expect(area(q)).toBeCloseTo(60, 9);
  });

  it('two coasts crossing the box give the two seas between them (a peninsula)', () => {
    // A peninsula from the south edge up to y = 6 between x = 4 and x = 6: water left and right of it.
    const coast: Point[] = [[6, -1], [6, 6], [4, 6], [4, -1]];
    const polys = waterPolygons({ open: [coast], closed: [] }, BOX);
    expect(polys).toHaveLength(1);
    expect(area(polys[0])).toBeCloseTo(100 - 2 * 6, 9);
    expect(pointInRing([5, 3], polys[0].outer)).toBe(false);
  });

  it('a coast entering and leaving through the same edge: a bay one way round, a peninsula the other', () => {
    // South, west, north with the land on the left (outside the U): the water is the bay inside.
    const bay = waterPolygons({ open: [[[7, 11], [7, 5], [3, 5], [3, 11]]], closed: [] }, BOX);
    expect(bay).toHaveLength(1);
    expect(area(bay[0])).toBeCloseTo(4 * 5, 9);
    // South, east, north: the land is inside the U, the water all around it.
    const peninsula = waterPolygons({ open: [[[3, 11], [3, 5], [7, 5], [7, 11]]], closed: [] }, BOX);
    expect(peninsula).toHaveLength(1);
    expect(area(peninsula[0])).toBeCloseTo(100 - 4 * 5, 9);
  });

  it('islands are holes in the sea; an island alone makes the whole box sea', () => {
    const island: Point[] = [[4, 4], [6, 4], [6, 6], [4, 6], [4, 4]]; // counter-clockwise: land inside
    expect(signedArea2(island)).toBeGreaterThan(0);
    const alone = waterPolygons({ open: [], closed: [island] }, BOX);
    expect(alone).toHaveLength(1);
    expect(alone[0].holes).toEqual([island]);
    expect(area(alone[0])).toBeCloseTo(96, 9);
    const withCoast = waterPolygons({ open: [[[-1, 8], [11, 8]]], closed: [island] }, BOX);
    expect(withCoast).toHaveLength(1);
    expect(area(withCoast[0])).toBeCloseTo(80 - 4, 9);
  });

  it('no coastline: no water', () => {
    expect(waterPolygons({ open: [], closed: [] }, BOX)).toEqual([]);
  });

  it('a coast that ends inside the box goes on in its heading to the edge', () => {
    // Cut off at (5, 4) heading east: continued to (10, 4), as if it crossed the east edge.
    const [p] = waterPolygons({ open: [[[-1, 4], [5, 4]]], closed: [] }, BOX);
    expect(area(p)).toBeCloseTo(40, 9);
    // Starting inside the box: continued backwards to the west edge.
    const [q] = waterPolygons({ open: [[[2, 4], [11, 4]]], closed: [] }, BOX);
    expect(area(q)).toBeCloseTo(40, 9);
  });

  it('a ring crossing the box edge is clipped like an open coast', () => {
    // An island straddling the east edge: the sea is the box minus its part inside.
    const island: Point[] = [[8, 4], [12, 4], [12, 6], [8, 6], [8, 4]];
    const polys = waterPolygons({ open: [], closed: [island] }, BOX);
    expect(polys).toHaveLength(1);
    expect(area(polys[0])).toBeCloseTo(100 - 4, 9);
  });
});

describe('the sea as a polygon', () => {
  it('keeps the polygon parts of a sea that repairing turned into a collection (a coastline spike, as on Belize\'s coast)', async () => {
    // The spike (5,10)→(5,15)→(5,10) makes the ring invalid; GEOS repairs it into a polygon and a line.
    const spiked = [[0, 0], [10, 0], [10, 10], [5, 10], [5, 15], [5, 10], [0, 10], [0, 0]] as Point[];
    const g = (await seaGeometry([{ outer: spiked, holes: [] }]))!;
    const gdal = await loadGdal();
    expect([gdal.wkbPolygon, gdal.wkbMultiPolygon]).toContain(g.wkbType & 0xff);
    expect((g as import('gdal-async').Polygon).getArea()).toBeCloseTo(100, 6);
  });
});
