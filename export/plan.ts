/** What `--only` selects: each part is a top-level folder of the export. */
export const EXPORT_PARTS = ['tilesets', 'styles', 'fonts'] as const;
export type ExportPart = (typeof EXPORT_PARTS)[number];

/** The part a path of the export belongs to (by its first folder), undefined for anything else. */
export function partOf(path: string): ExportPart | undefined {
  const top = path.slice(0, path.indexOf('/'));
  return top === 'data' ? 'tilesets' : top === 'styles' ? 'styles' : top === 'fonts' ? 'fonts' : undefined;
}
