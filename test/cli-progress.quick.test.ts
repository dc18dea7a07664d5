import { describe, expect, it } from 'vitest';
import { formatDuration, progressLine } from '../lib/progress.ts';
import { timingLine } from '../pipeline/build.ts';

describe('progress reporting', () => {
  it('formats done/total, rate and ETA', () => {
    expect(progressLine('vector omt', 50, 200, 'tiles', 10_000)).toBe('vector omt: 50/200 tiles (25%), 5.0 tiles/s, ETA 30s');
    expect(progressLine('render', 200, 200, 'metatiles', 4_000)).toBe('render: 200/200 metatiles (100%), 50.0 metatiles/s, ETA 0s');
    expect(progressLine('x', 0, 10, 'tiles', 0)).toBe('x: 0/10 tiles (0%), 0.0 tiles/s, ETA ?');
  });

  it('formats durations', () => {
    expect(formatDuration(12.4)).toBe('12s');
    expect(formatDuration(185)).toBe('3m05s');
    expect(formatDuration(3725)).toBe('1h02m');
    expect(formatDuration(Number.NaN)).toBe('?');
  });

  it('prints Planetiler-style stage timing lines', () => {
    expect(timingLine({ stage: 'vector', tiles: 23, seconds: 0.42 })).toBe('stage vector: 23 tiles in 0.4 s');
  });
});
