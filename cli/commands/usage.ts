/**
 * `tilebake usage --since 2026-11-01`: requests, body bytes, /height points and pack tiles per key and UTC day,
 * from a server's state folder (static-server/keys/usage-store.ts).
 */
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import type { CommandModule } from 'yargs';
import { UserError } from '../../lib/errors.ts';
import type { UsageRow } from '../../static-server/keys/usage-store.ts';

const DAY = /^\d{4}-\d{2}-\d{2}$/;

interface UsageArgs {
  since?: string;
  out?: string;
  'state-dir'?: string;
  json: boolean;
}

/** The rows as an aligned table (day, key, requests, bytes, points, pack tiles) with a total per key. */
export function usageTable(rows: readonly UsageRow[]): string {
  const totals = new Map<string, UsageRow>();
  for (const r of rows) {
    const t = totals.get(r.key) ?? { day: 'total', key: r.key, requests: 0, bytes: 0, points: 0, packTiles: 0 };
    t.requests += r.requests;
    t.bytes += r.bytes;
    t.points += r.points;
    t.packTiles += r.packTiles;
    totals.set(r.key, t);
  }
  const lines = [
    ['day', 'key', 'requests', 'bytes', 'points', 'pack_tiles'],
    ...[...rows, ...[...totals.values()].sort((a, b) => a.key.localeCompare(b.key))].map((r) => [r.day, r.key, String(r.requests), String(r.bytes), String(r.points), String(r.packTiles)]),
  ];
  const widths = lines[0].map((_, i) => Math.max(...lines.map((l) => l[i].length)));
  return lines.map((l) => l.map((c, i) => (i < 2 ? c.padEnd(widths[i]) : c.padStart(widths[i]))).join('  ').trimEnd()).join('\n') + '\n';
}

export const usageCommand: CommandModule<object, UsageArgs> = {
  command: 'usage',
  describe: "Print requests, bytes, /height points and pack tiles per key and day from a server's state folder",
  builder: (y) =>
    y
      .option('since', { type: 'string', describe: 'First UTC day, YYYY-MM-DD (default: the first of this month)' })
      .option('out', { alias: 'o', type: 'string', describe: 'Build folder the server serves (its state folder is <out>/.state)' })
      .option('state-dir', { type: 'string', describe: "The server's --state-dir" })
      .option('json', { type: 'boolean', default: false, describe: 'Print JSON rows instead of a table' }) as never,
  handler: async (a) => {
    // Loaded on use: the other commands do not pay for SQLite and the server's modules.
    const { stateDirOf } = await import('../../static-server/keys/runtime.ts');
    const { USAGE_FILE, UsageStore } = await import('../../static-server/keys/usage-store.ts');
    const since = a.since ?? new Date().toISOString().slice(0, 8) + '01';
    if (!DAY.test(since) || Number.isNaN(Date.parse(since))) throw new UserError(`--since: expected a day as YYYY-MM-DD (got "${since}")`, { exitCode: 2 });
    if (a.out === undefined && a['state-dir'] === undefined) throw new UserError('usage: give the server\'s --state-dir, or --out for its default state folder', { exitCode: 2 });
    const dir = stateDirOf({ out: a.out ?? '', stateDir: a['state-dir'] });
    if (!existsSync(join(dir, USAGE_FILE))) throw new UserError(`${join(dir, USAGE_FILE)}: no usage recorded here (the server writes it when started with --keys)`);
    const store = new UsageStore(dir, true);
    try {
      const rows = store.report(since);
      process.stdout.write(a.json ? `${JSON.stringify(rows)}\n` : rows.length === 0 ? `no usage since ${since}\n` : usageTable(rows));
    } finally {
      store.close();
    }
  },
};
