// bench/results.ts: a benchmark's run rewrites its RESULTS file but keeps the file's `## History`.
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { readResults, writeResults } from '../bench/results.ts';

const dir = mkdtempSync(join(tmpdir(), 'tilebake-results-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

describe('bench RESULTS files', () => {
  it('a new file holds the run alone', () => {
    const f = join(dir, 'new.md');
    writeResults(f, '# bench\n\n| a |\n');
    expect(readFileSync(f, 'utf8')).toBe('# bench\n\n| a |\n');
    expect(readResults(f)).toEqual({ run: '# bench\n\n| a |\n', history: '' });
  });

  it('a run replaces the last one and keeps the history, new entries on top', () => {
    const f = join(dir, 'old.md');
    writeFileSync(f, '# bench\n\nold table\n\n## History\n\n- 2026-11-21: 43.2 tiles/s\n');
    writeResults(f, '# bench\n\nnew table\n', ['- 2026-12-02: 44.0 tiles/s']);
    expect(readFileSync(f, 'utf8')).toBe('# bench\n\nnew table\n\n## History\n\n- 2026-12-02: 44.0 tiles/s\n- 2026-11-21: 43.2 tiles/s\n');
    writeResults(f, '# bench\n\nnewer table');
    expect(readResults(f)).toEqual({ run: '# bench\n\nnewer table\n', history: '- 2026-12-02: 44.0 tiles/s\n- 2026-11-21: 43.2 tiles/s' });
  });
});
