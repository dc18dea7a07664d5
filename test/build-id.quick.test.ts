// Build version ids sort in the order versions are published, also within one second (pruning keeps
// the newest by id): lib/build-version.ts newBuildId.
import { describe, expect, it } from 'vitest';
import { newBuildId } from '../lib/build-version.ts';

const FORMAT = /^\d{8}T\d{6}Z-[0-9a-f]{6}$/;

describe('newBuildId', () => {
  it('is the time to the second and a random suffix', () => {
    const id = newBuildId(new Date('2025-01-02T03:04:05.678Z'));
    expect(id).toMatch(FORMAT);
    expect(id.startsWith('20250102T030405Z-')).toBe(true);
  });

  it('sorts after the version it follows within the same second, and after one from the future', () => {
    const now = new Date('2025-01-02T03:04:05.100Z');
    for (const suffix of ['000000', '7fffff', 'fffffe']) {
      const after = `20250102T030405Z-${suffix}`;
      for (let i = 0; i < 50; i++) {
        const id = newBuildId(now, after);
        expect(id).toMatch(FORMAT);
        expect(id > after, `${id} after ${after}`).toBe(true);
        expect(id.startsWith('20250102T030405Z-')).toBe(true);
      }
    }
    // The highest suffix of a second: the next second.
    expect(newBuildId(now, '20250102T030405Z-ffffff').startsWith('20250102T030406Z-')).toBe(true);
    expect(newBuildId(now, '20250102T235959Z-ffffff').startsWith('20250103T000000Z-')).toBe(true);
    // A later second than `after`, or an id of another form: the time as is.
    expect(newBuildId(now, '20250102T030404Z-ffffff').startsWith('20250102T030405Z-')).toBe(true);
    expect(newBuildId(now, 'legacy').startsWith('20250102T030405Z-')).toBe(true);
  });
});
