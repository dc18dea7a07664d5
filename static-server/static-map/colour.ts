/**
 * Colours of static map overlays: `#rgb`, `#rgba`, `#rrggbb`, `#rrggbbaa` (the `#` optional, so `%23`
 * need not be typed), `rgb(r,g,b)`, `rgba(r,g,b,a)` and a few CSS names. Parsed into a fixed form, so
 * nothing a client sends reaches the SVG as text.
 */

/** A parsed colour: `#rrggbb` and an opacity 0 … 1. */
export interface Colour {
  hex: string;
  opacity: number;
}

const NAMED: Readonly<Record<string, string>> = Object.freeze({
  black: '000000',
  white: 'ffffff',
  red: 'ff0000',
  green: '008000',
  blue: '0000ff',
  yellow: 'ffff00',
  orange: 'ffa500',
  purple: '800080',
  magenta: 'ff00ff',
  cyan: '00ffff',
  gray: '808080',
  grey: '808080',
});

const HEX = /^#?([0-9a-f]{3,4}|[0-9a-f]{6}|[0-9a-f]{8})$/i;
const RGB = /^rgba?\(\s*(\d{1,3})\s*,\s*(\d{1,3})\s*,\s*(\d{1,3})\s*(?:,\s*([01]|0?\.\d+|1\.0*)\s*)?\)$/i;

/** Parse a colour; undefined when it is not one of the accepted forms. */
export function parseColour(text: string): Colour | undefined {
  const named = NAMED[text.toLowerCase()];
  if (named) return { hex: `#${named}`, opacity: 1 };
  if (text.toLowerCase() === 'none' || text.toLowerCase() === 'transparent') return { hex: '#000000', opacity: 0 };
  const h = HEX.exec(text);
  if (h) {
    let digits = h[1].toLowerCase();
    if (digits.length <= 4) digits = [...digits].map((c) => c + c).join('');
    const opacity = digits.length === 8 ? parseInt(digits.slice(6), 16) / 255 : 1;
    return { hex: `#${digits.slice(0, 6)}`, opacity };
  }
  const m = RGB.exec(text);
  if (m) {
    const rgb = [m[1], m[2], m[3]].map(Number);
    if (rgb.some((v) => v > 255)) return undefined;
    if (m[4] !== undefined && !/^rgba/i.test(text)) return undefined;
    return { hex: `#${rgb.map((v) => v.toString(16).padStart(2, '0')).join('')}`, opacity: m[4] === undefined ? 1 : Number(m[4]) };
  }
  return undefined;
}
