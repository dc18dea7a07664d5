/**
 * How old the served OpenStreetMap data is: the replication state the manifest's `osm` section
 * records (`tilebake build` from the extract's header, then `tilebake update`), for /health and the
 * `tilebake_data_timestamp_seconds` gauge (alert on `time() - tilebake_data_timestamp_seconds`).
 */
import { Gauge } from 'prom-client';
import type { Manifest, OsmDataState } from '../lib/manifest.ts';
import { serverMetrics } from './metrics.ts';

const MS_PER_S = 1000;

/** One tileset's data state as /health shows it. */
export interface TilesetDataAge {
  sequence?: number;
  timestamp: string;
  age_seconds: number;
}

/** The served tilesets with a recorded OSM data time: id, state, time in ms. */
function osmTimes(m: Manifest): [string, OsmDataState, number][] {
  return Object.entries(m.osm ?? {})
    .map(([id, s]): [string, OsmDataState, number] => [id, s, s.timestamp ? Date.parse(s.timestamp) : NaN])
    .filter(([id, , ts]) => m.tilesets[id] && Number.isFinite(ts));
}

/** /health's fields: per tileset with a recorded data time, and the oldest age (absent when none records one). */
export function dataAge(m: Manifest, now = Date.now()): { data_age_seconds?: number; data?: Record<string, TilesetDataAge> } {
  const data: Record<string, TilesetDataAge> = {};
  for (const [id, s, ts] of osmTimes(m)) data[id] = { sequence: s.sequence, timestamp: s.timestamp!, age_seconds: Math.max(0, Math.round((now - ts) / MS_PER_S)) };
  const ages = Object.values(data).map((d) => d.age_seconds);
  return ages.length ? { data_age_seconds: Math.max(...ages), data } : {};
}

let gauge: Gauge<'tileset'> | undefined;
/** Set the gauge to the served manifest's data times (called with each version the server switches to). */
export function recordDataTimestamps(m: Manifest): void {
  gauge ??= new Gauge({
    name: 'tilebake_data_timestamp_seconds',
    help: 'Time of the OpenStreetMap replication state the served tileset shows (Unix seconds), by tileset',
    labelNames: ['tileset'] as const,
    // Workers switching versions one after the other: the cluster reports the oldest data still served.
    aggregator: 'min',
    registers: [serverMetrics().registry],
  });
  gauge.reset();
  for (const [id, , ts] of osmTimes(m)) gauge.set({ tileset: id }, ts / MS_PER_S);
}
