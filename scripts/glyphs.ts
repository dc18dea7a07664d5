// Generates the glyph PBFs of glyph sets (pipeline/glyphs/) when their fonts or stacks changed; run by
// `make setup` for the sample (data/sample/glyphs.json -> data/sample/fonts/Noto Sans */):
//   node --import tsx scripts/glyphs.ts [glyph-set.json …] [--force]
// A no-op (a hash of the fonts) when the generated folders are current.
import { relative } from 'node:path';
import { isUserError } from '../lib/errors.ts';
import { packagePath } from '../lib/package-root.ts';
import { ensureGlyphSet } from '../pipeline/glyphs/generate.ts';

const args = process.argv.slice(2);
const force = args.includes('--force');
const files = args.filter((a) => a !== '--force');
try {
  for (const file of files.length ? files : [packagePath('data', 'sample', 'glyphs.json')]) {
    const r = await ensureGlyphSet(file, { force });
    const stacks = Object.values(r.stacks);
    const where = relative(process.cwd(), r.out) || '.';
    if (!r.generated) continue;
    const mb = stacks.reduce((n, s) => n + s.bytes, 0) / 1e6;
    const ranges = stacks.reduce((n, s) => n + s.ranges, 0);
    console.log(`glyphs: ${where}: ${stacks.length} font stacks, ${ranges} ranges, ${mb.toFixed(1)} MB in ${(r.ms / 1000).toFixed(1)} s (fonts hash ${r.hash})`);
  }
} catch (e) {
  console.error(`glyphs: ${isUserError(e) ? (e as Error).message : (e as Error).stack}`);
  process.exit(1);
}
