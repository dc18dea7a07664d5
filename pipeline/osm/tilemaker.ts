/**
 * Running tilemaker 2.2 with this project's OpenMapTiles profile (openmaptiles.json + openmaptiles.lua):
 * the per-run config (box, shapefile layers, zooms), progress from its output, and its errors.
 */
import { readFile, writeFile } from 'node:fs/promises';
import { basename, join } from 'node:path';
import { packagePath } from '../../lib/package-root.ts';
import type { BBox } from '../../lib/tile-math.ts';
import { createProgress, logLine, type Progress } from '../../lib/progress.ts';
import { countryRanks, type ShapeLayer } from './natural-earth.ts';
import { runTool, ToolError } from './tools.ts';

/** The profile tilemaker runs with. */
export const PROFILE_CONFIG = packagePath('pipeline', 'osm', 'openmaptiles.json');
export const PROFILE_PROCESS = packagePath('pipeline', 'osm', 'openmaptiles.lua');

/**
 * Tile boxes are shrunk by this much (degrees, ~1 cm) before tilemaker sees them: it writes every tile
 * that intersects its bounding box, and a tile merely touching the box's edge counts.
 */
const EDGE_INSET = 1e-7;

/** What tilemaker is asked to do. */
export interface TilemakerJob {
  input: string;
  output: string;
  /** tilemaker's bounding box: tiles outside it are not written, shapefile layers are clipped to it. */
  box: BBox;
  /** Shapefile layers besides the profile's (the ocean, Natural Earth). */
  shapeLayers?: Record<string, ShapeLayer>;
  /** The zooms of the run (the deepest is its base zoom), when not the profile's. */
  zooms?: [number, number];
  /** The `name:xx` languages the profile writes (the tileset's `languages`). */
  languages: readonly string[];
  workDir: string;
  pidFile: string;
  /** Progress label prefix. */
  label: string;
}

/** The tilemaker config of one run: the profile with the box, the shapefile layers and the zooms filled in. */
export async function runConfig(job: Pick<TilemakerJob, 'box' | 'shapeLayers' | 'zooms'>): Promise<Record<string, unknown>> {
  const config = JSON.parse(await readFile(PROFILE_CONFIG, 'utf8')) as {
    layers: Record<string, unknown>;
    settings: Record<string, unknown>;
  };
  Object.assign(config.layers, job.shapeLayers);
  if (job.zooms) {
    config.settings.minzoom = job.zooms[0];
    config.settings.maxzoom = config.settings.basezoom = job.zooms[1];
  }
  const [w, s, e, n] = job.box;
  config.settings.bounding_box = [w + EDGE_INSET, s + EDGE_INSET, e - EDGE_INSET, n - EDGE_INSET];
  return config;
}

/** Lines of tilemaker's output worth quoting when it fails (its progress lines are not). */
const PROGRESS_LINE = /^(Block \d+\/\d+|Zoom level \d+, writing tile)/;
/** How many of the last non-progress lines are kept. */
const KEEP_LINES = 20;

/** The most telling line of a failed run: a Lua error, else an error line, else the last line. */
export function failureReason(lines: string[]): string {
  const clean = lines.map((l) => l.trim()).filter(Boolean);
  return (
    clean.find((l) => /lua (runtime )?error/i.test(l)) ??
    [...clean].reverse().find((l) => /error|couldn't|can't|cannot|failed|exception/i.test(l)) ??
    clean[clean.length - 1] ??
    'no output'
  );
}

/**
 * Progress of a run from tilemaker's output: the reading phase is reported with its elapsed time
 * (its "Block i/n" lines restart with every pass over the file), the writing phase as a tile count.
 */
class TilemakerProgress {
  private readonly started = performance.now();
  private writing?: Progress;
  private written = 0;
  tiles = 0;

  constructor(private readonly label: string) {}

  line(l: string): void {
    const tile = /^Zoom level (\d+), writing tile (\d+) of (\d+)/.exec(l);
    if (!tile) return;
    const done = Number(tile[2]);
    if (!this.writing) {
      this.tiles = Number(tile[3]);
      logLine(`${this.label}: tilemaker read the extract in ${seconds(this.started)} s, writing ${this.tiles} tiles`);
      this.writing = createProgress(`${this.label} tilemaker`, this.tiles, 'tiles');
    }
    if (done > this.written) {
      this.writing.tick(done - this.written);
      this.written = done;
    }
  }

  done(): void {
    this.writing?.done();
  }
}

const MS_PER_S = 1000;
const seconds = (since: number) => ((performance.now() - since) / MS_PER_S).toFixed(1);

/** Run tilemaker; resolves with the number of tiles it wrote, rejects with a one-line reason. */
export async function runTilemaker(tilemaker: string, job: TilemakerJob): Promise<number> {
  const configFile = join(job.workDir, `${basename(job.output)}.json`);
  await writeFile(configFile, JSON.stringify(await runConfig(job), null, 2));
  const progress = new TilemakerProgress(job.label);
  logLine(`${job.label}: tilemaker reading ${job.input}`);
  const recent: string[] = [];
  const args = ['--input', job.input, '--output', job.output, '--config', configFile, '--process', PROFILE_PROCESS];
  try {
    await runTool(tilemaker, args, {
      pidFile: job.pidFile,
      // The profile ranks the extract's country nodes as Natural Earth's countries are ranked, and
      // writes the names of the tileset's languages.
      env: { TILEBAKE_COUNTRY_RANKS: await countryRanks(), TILEBAKE_NAME_LANGUAGES: job.languages.join(',') },
      onLine: (l) => {
        progress.line(l);
        if (!PROGRESS_LINE.test(l)) {
          recent.push(l);
          if (recent.length > KEEP_LINES) recent.shift();
        }
      },
    });
  } catch (e) {
    if (e instanceof ToolError) {
      const how = e.signal ? `killed by ${e.signal}` : `exit code ${e.code}`;
      throw new Error(`tilemaker failed (${how}): ${failureReason([...recent, ...e.stderr.split(/[\r\n]+/)])}`, { cause: e });
    }
    throw e;
  } finally {
    progress.done();
  }
  return progress.tiles;
}
