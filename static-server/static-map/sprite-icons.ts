/**
 * Icons of a style's sprite for static maps' markers (GeoJSON `marker-symbol`): the build's sheet of the
 * style (`<sprite>[@2x].{json,png}`, what `/styles/{style}/sprite…` serves) is read and decoded once per
 * build version and pixel ratio; an icon is cut out of it by sharp (`extract`) at the image's scale, from
 * the sheet of that pixel ratio, else from the other one resized by sharp. Cut icons are kept: a sheet
 * holds a bounded number of them. Icons are drawn as the sheet holds them (an SDF icon, which MapLibre
 * tints, is not tinted).
 */
import sharp from 'sharp';
import { HttpError } from '../../lib/http-error.ts';
import { HttpStatus } from '../../lib/http-status.ts';
import type { StyleEntry } from '../../lib/manifest.ts';
import { Memo } from '../../lib/shared-work.ts';
import { StoreCorruptError } from '../../lib/store-read.ts';
import type { Store } from '../../lib/storage.ts';
import type { ServerContext } from '../context.ts';
import type { Icon, Icons } from './overlay.ts';
import type { MarkerOverlay } from './model.ts';

/** A `marker-symbol` that is not an icon is drawn on the pin when it is this (as the URL markers' `label:`). */
const PIN_LABEL = /^[\p{L}\p{N}]{1,3}$/u;
const RGBA = 4;

/** One entry of a sprite.json (the fields used here). */
interface SheetEntry {
  x: number;
  y: number;
  width: number;
  height: number;
  pixelRatio?: number;
}

/** A decoded sheet and its index. */
interface Sheet {
  entries: Record<string, SheetEntry>;
  data: Buffer;
  width: number;
  height: number;
  pixelRatio: 1 | 2;
  icons: Memo<string, Icon>;
}

export class SpriteIcons {
  private readonly sheets = new Memo<string, Sheet | null>();

  constructor(private readonly store: Store) {}

  /** The style's sheet at `ratio`, or null when the build has none. */
  private sheet(entry: StyleEntry, ratio: 1 | 2): Promise<Sheet | null> {
    const base = `${entry.sprite}${ratio === 2 ? '@2x' : ''}`;
    return this.sheets.get(base, async () => {
      const [json, png] = await Promise.all([this.store.readFile(`${base}.json`), this.store.readFile(`${base}.png`)]);
      if (!json || !png) return null;
      try {
        const entries = JSON.parse(Buffer.from(json).toString('utf8')) as Record<string, SheetEntry>;
        const { data, info } = await sharp(png).toColourspace('srgb').ensureAlpha().raw({ depth: 'uchar' }).toBuffer({ resolveWithObject: true });
        return { entries, data, width: info.width, height: info.height, pixelRatio: ratio, icons: new Memo() };
      } catch (e) {
        throw new StoreCorruptError(`${base}.json/.png: not a readable sprite (${(e as Error).message})`, e);
      }
    });
  }

  /** The sheet of the image's scale, else the other one; null when the style has no sprite. */
  private async sheetFor(entry: StyleEntry, scale: 1 | 2): Promise<Sheet | null> {
    if (!entry.sprite) return null;
    return (await this.sheet(entry, scale)) ?? (await this.sheet(entry, scale === 2 ? 1 : 2));
  }

  /** Icon `name` of `sheet` at the image's `scale` (straight RGBA). */
  private icon(sheet: Sheet, name: string, scale: 1 | 2): Promise<Icon> {
    return sheet.icons.get(`${name}@${scale}`, async () => {
      const e = sheet.entries[name];
      const ratio = e.pixelRatio ?? sheet.pixelRatio;
      let s = sharp(sheet.data, { raw: { width: sheet.width, height: sheet.height, channels: RGBA } }).extract({ left: e.x, top: e.y, width: e.width, height: e.height });
      if (ratio !== scale) s = s.resize(Math.max(1, Math.round((e.width * scale) / ratio)), Math.max(1, Math.round((e.height * scale) / ratio)), { fit: 'fill' });
      const { data, info } = await s.raw().toBuffer({ resolveWithObject: true });
      return { data, width: info.width, height: info.height };
    });
  }

  /**
   * Resolve the markers' `symbol`s against style `id`'s sprite: an icon of it (then drawn instead of the
   * pin), else 1–3 letters or digits (drawn on the pin), else a 400 naming where it was given. Returns
   * the icons the markers now name, at the image's scale.
   */
  async resolve(id: string, entry: StyleEntry, scale: 1 | 2, markers: MarkerOverlay[]): Promise<Icons> {
    const icons = new Map<string, Icon>();
    const asked = markers.filter((m) => m.symbol !== undefined);
    if (asked.length === 0) return icons;
    const sheet = await this.sheetFor(entry, scale);
    for (const m of asked) {
      const { name, where } = m.symbol!;
      delete m.symbol;
      if (sheet && Object.hasOwn(sheet.entries, name)) {
        m.icon = name;
        if (!icons.has(name)) icons.set(name, await this.icon(sheet, name, scale));
      } else if (PIN_LABEL.test(name)) {
        m.label = name;
      } else {
        const list = sheet ? `its icons: /styles/${id}/sprite.json` : `style "${id}" has no sprite`;
        throw new HttpError(HttpStatus.BadRequest, `${where}: ${JSON.stringify(name)} is not an icon of the sprite of style "${id}" (${list}), nor 1 to 3 letters or digits for the pin`);
      }
    }
    return icons;
  }
}

const byContext = new WeakMap<ServerContext, SpriteIcons>();

/** The sprite icons of a server context (one per build version, created on first use). */
export function spriteIconsOf(ctx: ServerContext): SpriteIcons {
  let s = byContext.get(ctx);
  if (!s) byContext.set(ctx, (s = new SpriteIcons(ctx.store)));
  return s;
}
