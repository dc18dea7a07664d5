/** File globs (`*`, `?`, `[...]`, `**`) expanded to the files they match: DEM sources and imagery sources. */
import { readdir, stat } from 'node:fs/promises';
import { isAbsolute, join, resolve, sep } from 'node:path';

const GLOB_CHARS = /[*?[]/;

/** True when a path is a glob pattern (`*`, `?`, `[...]`, `**`). */
export function isGlob(path: string): boolean {
  return GLOB_CHARS.test(path);
}

/** A glob pattern (`*`, `?`, `[...]`, `**`) of one path component as a RegExp. */
function componentRegex(pattern: string): RegExp {
  let re = '';
  for (let i = 0; i < pattern.length; i++) {
    const ch = pattern[i];
    if (ch === '*') re += '[^/]*';
    else if (ch === '?') re += '[^/]';
    else if (ch === '[') {
      const end = pattern.indexOf(']', i);
      if (end < 0) re += '\\[';
      else {
        re += `[${pattern.slice(i + 1, end).replace(/^!/, '^')}]`;
        i = end;
      }
    } else re += ch.replace(/[.+^${}()|\\]/g, '\\$&');
  }
  return new RegExp(`^${re}$`);
}

async function walk(dir: string, parts: string[], out: string[]): Promise<void> {
  if (parts.length === 0) {
    out.push(dir);
    return;
  }
  const [head, ...rest] = parts;
  if (head === '**') {
    await walk(dir, rest, out);
    const entries = await readdir(dir, { withFileTypes: true }).catch(() => []);
    for (const e of entries) if (e.isDirectory()) await walk(join(dir, e.name), parts, out);
    return;
  }
  if (!GLOB_CHARS.test(head)) {
    await walk(join(dir, head), rest, out);
    return;
  }
  const re = componentRegex(head);
  const entries = await readdir(dir, { withFileTypes: true }).catch(() => []);
  for (const e of entries.sort((a, b) => a.name.localeCompare(b.name))) {
    if (re.test(e.name) && (rest.length === 0 ? !e.isDirectory() : e.isDirectory())) await walk(join(dir, e.name), rest, out);
  }
}

/** Expand a path or glob to existing files (sorted); a plain path is returned as is. */
export async function expandGlob(pattern: string): Promise<string[]> {
  if (!GLOB_CHARS.test(pattern)) return [pattern];
  const abs = isAbsolute(pattern) ? pattern : resolve(pattern);
  const parts = abs.split(sep).filter((p) => p !== '');
  const out: string[] = [];
  await walk(sep, parts, out);
  const files: string[] = [];
  for (const f of [...new Set(out)]) if ((await stat(f).catch(() => undefined))?.isFile()) files.push(f);
  return files;
}
