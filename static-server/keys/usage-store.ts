/**
 * Usage per key and UTC day (requests, body bytes, /height points, pack tiles), kept in SQLite in the server's
 * state folder (`<state>/usage.sqlite`): it survives restarts, local quotas count from it, and
 * `tilebake usage` reads it. Only the process that decides limits writes (the cluster primary).
 */
import { mkdirSync } from 'node:fs';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import type { QuotaHistory, QuotaKind } from './limits.ts';

/** The database file in the state folder. */
export const USAGE_FILE = 'usage.sqlite';

/** One row: what one key used on one day. */
export interface UsageRow {
  day: string;
  key: string;
  requests: number;
  bytes: number;
  points: number;
  /** Tiles of the packs (`/packs/…`) answered. */
  packTiles: number;
}

const COLUMN: Readonly<Record<QuotaKind, string>> = { requests: 'requests', heightPoints: 'points', packTiles: 'pack_tiles' };

/** The usage database of a state folder. */
export class UsageStore implements QuotaHistory {
  private readonly db: Database.Database;
  private readonly upsert: Database.Statement;

  /** Open (creating) `<stateDir>/usage.sqlite`; `readonly` for reports. */
  constructor(stateDir: string, readonly = false) {
    if (!readonly) mkdirSync(stateDir, { recursive: true });
    this.db = new Database(join(stateDir, USAGE_FILE), { readonly, fileMustExist: readonly });
    this.db.pragma('busy_timeout = 5000');
    if (!readonly) {
      this.db.pragma('journal_mode = WAL');
      this.db.exec(
        'CREATE TABLE IF NOT EXISTS usage (day TEXT NOT NULL, key TEXT NOT NULL, requests INTEGER NOT NULL DEFAULT 0, ' +
          'bytes INTEGER NOT NULL DEFAULT 0, points INTEGER NOT NULL DEFAULT 0, pack_tiles INTEGER NOT NULL DEFAULT 0, PRIMARY KEY (day, key))',
      );
      // A state folder from before packs: the column is added (old rows count no pack tiles).
      const columns = this.db.prepare("SELECT name FROM pragma_table_info('usage')").pluck().all() as string[];
      if (!columns.includes('pack_tiles')) this.db.exec('ALTER TABLE usage ADD COLUMN pack_tiles INTEGER NOT NULL DEFAULT 0');
    }
    this.upsert = readonly
      ? this.db.prepare('SELECT 1')
      : this.db.prepare(
          'INSERT INTO usage (day, key, requests, bytes, points, pack_tiles) VALUES (@day, @key, @requests, @bytes, @points, @packTiles) ' +
            'ON CONFLICT (day, key) DO UPDATE SET requests = requests + excluded.requests, bytes = bytes + excluded.bytes, points = points + excluded.points, ' +
            'pack_tiles = pack_tiles + excluded.pack_tiles',
        );
  }

  /** Add rows (summed into existing ones) in one transaction. */
  add(rows: readonly UsageRow[]): void {
    if (rows.length === 0) return;
    this.db.transaction((rs: readonly UsageRow[]) => {
      for (const r of rs) this.upsert.run(r);
    })(rows);
  }

  usedSince(key: string, kind: QuotaKind, sinceDay: string): number {
    const row = this.db.prepare(`SELECT COALESCE(SUM(${COLUMN[kind]}), 0) AS n FROM usage WHERE key = ? AND day >= ?`).get(key, sinceDay) as { n: number };
    return row.n;
  }

  /** Every row from `sinceDay` on, by day then key. */
  report(sinceDay: string): UsageRow[] {
    const hasPacks = (this.db.prepare("SELECT COUNT(*) FROM pragma_table_info('usage') WHERE name = 'pack_tiles'").pluck().get() as number) > 0;
    const packTiles = hasPacks ? 'pack_tiles' : '0';
    return this.db.prepare(`SELECT day, key, requests, bytes, points, ${packTiles} AS packTiles FROM usage WHERE day >= ? ORDER BY day, key`).all(sinceDay) as UsageRow[];
  }

  close(): void {
    this.db.close();
  }
}
