// Every relative link in the docs resolves: README.md, DEVELOPERS.md, CHANGELOG.md, docs/*.md and the
// benchmarks' RESULTS*.md point at files that exist, and a `#anchor` at a heading (GitHub's slug) or an
// `<a id>` of the file it names. A pure file check: no build, no server.
import { existsSync, readdirSync, readFileSync, statSync } from 'node:fs';
import { dirname, join, relative, resolve } from 'node:path';
import { describe, expect, it } from 'vitest';
import { PACKAGE_ROOT } from '../lib/package-root.ts';

/** The markdown with fenced code blocks and inline code spans blanked out (links there are examples). */
function prose(markdown: string): string {
  return markdown
    .replace(/^( {0,3})(`{3,}|~{3,})[^\n]*\n[\s\S]*?(?:^\1?\2[ \t]*$|(?![\s\S]))/gm, '')
    .replace(/(`+)(?:[^`\n]|\n(?![ \t]*\n))+?\1/g, (m) => m.replace(/[^\n]/g, ' '));
}

/** GitHub's anchor for a heading's text: inline markup dropped, lower case, punctuation gone, spaces to '-'. */
export function slug(heading: string): string {
  return heading
    .replace(/!?\[([^\]]*)\]\([^)]*\)/g, '$1')
    .replace(/[`*]/g, '')
    .toLowerCase()
    .replace(/[^\p{L}\p{M}\p{N}_\- ]/gu, '')
    .replace(/ /g, '-');
}

/** The anchors a markdown file offers: its headings' slugs (repeats get -1, -2 …) and `<a id|name="…">`. */
function anchors(markdown: string): Set<string> {
  const out = new Set<string>();
  const seen = new Map<string, number>();
  const code = markdown.replace(/^( {0,3})(`{3,}|~{3,})[^\n]*\n[\s\S]*?(?:^\1?\2[ \t]*$|(?![\s\S]))/gm, '');
  for (const m of code.matchAll(/^ {0,3}#{1,6}[ \t]+(.*?)(?:[ \t]+#+)?[ \t]*$/gm)) {
    const base = slug(m[1]!);
    const n = seen.get(base) ?? 0;
    seen.set(base, n + 1);
    out.add(n === 0 ? base : `${base}-${n}`);
  }
  for (const m of markdown.matchAll(/<a\s[^>]*\b(?:id|name)="([^"]+)"/g)) out.add(m[1]!);
  return out;
}

/** The link targets of a markdown file: inline links and images, and reference definitions. */
function targets(markdown: string): string[] {
  const text = prose(markdown);
  const inline = [...text.matchAll(/!?\[(?:[^\]\n]|\][^(\n])*\]\(\s*<?([^)\s>]+)>?(?:\s+"[^"]*")?\s*\)/g)].map((m) => m[1]!);
  const defs = [...text.matchAll(/^ {0,3}\[[^\]\n]+\]:\s*<?(\S+?)>?(?:\s+"[^"]*")?\s*$/gm)].map((m) => m[1]!);
  return [...inline, ...defs];
}

/** What is wrong with each relative link of `file` (empty when every one resolves). */
export function brokenLinks(file: string, read: (path: string) => string | undefined = (p) => (existsSync(p) ? readFileSync(p, 'utf8') : undefined)): string[] {
  const own = read(file)!;
  const problems: string[] = [];
  for (const target of targets(own)) {
    if (/^[a-z][a-z0-9+.-]*:/i.test(target)) continue; // https:, mailto:, WMTS: …
    const [pathPart, anchor] = target.split('#', 2) as [string, string | undefined];
    const path = pathPart === '' ? file : resolve(dirname(file), decodeURIComponent(pathPart));
    if (existsSync(path) && statSync(path).isDirectory()) continue;
    const body = read(path);
    if (body === undefined) problems.push(`${target}: no such file`);
    else if (anchor !== undefined && path.endsWith('.md') && !anchors(body).has(decodeURIComponent(anchor))) problems.push(`${target}: no heading or <a id> "#${anchor}" in ${relative(PACKAGE_ROOT, path)}`);
  }
  return problems;
}

const mdIn = (dir: string, match: RegExp) => readdirSync(join(PACKAGE_ROOT, dir)).filter((f) => match.test(f)).map((f) => join(dir, f));
const DOCS = [
  'README.md',
  'DEVELOPERS.md',
  'CHANGELOG.md',
  ...mdIn('docs', /\.md$/),
  ...readdirSync(join(PACKAGE_ROOT, 'bench'), { withFileTypes: true }).filter((d) => d.isDirectory()).flatMap((d) => mdIn(join('bench', d.name), /^RESULTS.*\.md$/)),
];

describe('relative links in the docs', () => {
  it('finds links, headings and anchors as GitHub renders them', () => {
    expect(slug('Elevation: `POST /height`')).toBe('elevation-post-height');
    expect(slug('The --quick job')).toBe('the---quick-job');
    expect(slug("Seeding a start's caches, at z13–14 (2026-11-26): measured, nothing adopted")).toBe('seeding-a-starts-caches-at-z1314-2026-11-26-measured-nothing-adopted');
    const files: Record<string, string> = {
      '/d/a.md': '# A\n## Two\n## Two\n[ok](b.md#b-c) [dup](#two-1) [gone](c.md) [bad](b.md#nope) [web](https://x.org/y.md)\n`[code](c.md)`\n```\n[fenced](c.md)\n```\n[def]: b.md#b-c\n',
      '/d/b.md': '# B `c`\n',
    };
    expect(brokenLinks('/d/a.md', (p) => files[p])).toEqual(['c.md: no such file', expect.stringMatching(/^b\.md#nope: no heading/)]);
  });

  it('lists the files it checks', () => {
    expect(DOCS).toEqual(expect.arrayContaining(['README.md', 'DEVELOPERS.md', 'CHANGELOG.md', join('docs', 'reference.md')]));
    for (const f of DOCS) expect(existsSync(join(PACKAGE_ROOT, f)), f).toBe(true);
  });

  it.each(DOCS)('%s: every relative link and anchor resolves', (file) => {
    expect(brokenLinks(join(PACKAGE_ROOT, file))).toEqual([]);
  });
});
