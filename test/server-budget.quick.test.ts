import { describe, expect, it } from 'vitest';
import { cacheBudgetBytes, type CachePart } from '../static-server/context.ts';
import { emptyManifest, type Manifest } from '../lib/manifest.ts';

const PARTS: CachePart[] = ['tiles', 'elevation', 'styleFiles'];
const MB = 1024 * 1024;

function ctx(cacheMb: number, elevation: boolean) {
  const manifest: Manifest = emptyManifest();
  if (elevation) manifest.elevation = { index: 'data/elevation.tbei', sources: [], bounds: [7, 43, 8, 44], precision: 0.1, bytes: 1 };
  return { manifest, options: { cacheMb } as never };
}

describe('--cache-mb budget', () => {
  it.each([true, false])('the caches share the budget without exceeding it (elevation index: %s)', (elevation) => {
    const c = ctx(256, elevation);
    const sum = PARTS.reduce((n, p) => n + cacheBudgetBytes(c, p), 0);
    expect(sum).toBeLessThanOrEqual(256 * MB);
    expect(sum).toBeGreaterThan(255 * MB);
    expect(cacheBudgetBytes(c, 'elevation') > 0).toBe(elevation);
    expect(cacheBudgetBytes(c, 'tiles')).toBeGreaterThanOrEqual(128 * MB);
  });
});
