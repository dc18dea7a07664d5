// How every map tilebake shows draws its labels: the render page (baked tiles and on-demand renders,
// render.js beside this file) and the preview page (static-server/preview/preview.js, which loads this
// file as /maplibre/tilebake-text.mjs) create their maps with these options, so that a baked tile and
// the same view in the preview draw each label alike (docs/glyphs.md).
//
// Chinese, Japanese and Korean are drawn by MapLibre from a local font (TinySDF in the browser), not
// from glyph PBFs. For labels with a `text-font` MapLibre asks the browser for the stack's names and
// then `sans-serif`; `localIdeographFontFamily` is the family of labels without one. Both resolve to
// the same font: `sans-serif`, which fontconfig answers for CJK with Noto Sans CJK (Debian's
// fonts-noto-cjk, installed by `make setup`). Arabic shaping and right-to-left order are MapLibre's
// own (maplibre-gl 6 deprecates the RTL text plugin): nothing to load.
export const MAP_TEXT_OPTIONS = Object.freeze({ localIdeographFontFamily: 'sans-serif' });
