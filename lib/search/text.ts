/**
 * The text rules of the search index, shared by the build (pipeline/search/) and the server: how a name
 * is split into words and folded, how the user's words become an FTS5 query (each one an FTS5 string,
 * so nothing typed is ever FTS5 syntax), and the one-typo neighbourhood of a word (SymSpell's deletions).
 *
 * SQLite's `unicode61` tokenizer with `remove_diacritics 2` splits and folds the indexed text itself; the
 * words here are split the way it splits them (letters, digits and private-use characters are word
 * characters, NFC so that an accented letter is one character) and folded the way it folds them
 * (diacritics removed, lower case), for what the index looks up outside FTS5: exact names and typos.
 */

/** A run of word characters, as unicode61 sees them (categories L*, N*, Co). */
const WORD = /[\p{L}\p{N}\p{Co}]+/gu;
/**
 * A Latin letter with diacritics, decomposed: what unicode61's `remove_diacritics 2` folds to the bare
 * letter (é, ñ, ő, ș, ǖ). Other scripts' accented letters (ё, й, ά) and letters without a canonical
 * decomposition (ø, ł, đ) are left as they are, as unicode61 leaves them.
 */
const LATIN_WITH_MARKS = /^([a-z])\p{M}+$/u;

/** Words of at least this many letters match with one typo (the issue's rule). */
export const TYPO_MIN_LENGTH = 5;
/** Vocabulary words the typo table covers: one letter shorter than the shortest typed word it can match. */
export const TYPO_TERM_MIN_LENGTH = TYPO_MIN_LENGTH - 1;

/** The words of `text` (NFC), unfolded: what FTS5 will fold. */
export function words(text: string): string[] {
  return text.normalize('NFC').match(WORD) ?? [];
}

/** One word or name folded as the index folds it: no diacritics, lower case. */
export function fold(text: string): string {
  let out = '';
  for (const c of text.normalize('NFC')) {
    const lower = c.toLowerCase();
    out += LATIN_WITH_MARKS.exec(lower.normalize('NFD'))?.[1] ?? lower;
  }
  return out.normalize('NFC');
}

/** A name as the exact-name table keys it: its folded words joined by single spaces (`Sainte-Dévote` → `sainte devote`). */
export function nameKey(name: string): string {
  return words(fold(name)).join(' ');
}

/** A word as an FTS5 string: double quotes around it, any `"` inside doubled. Nothing else is FTS5 syntax inside a string. */
export function ftsString(word: string): string {
  return `"${word.replaceAll('"', '""')}"`;
}

/**
 * An FTS5 query in which every word must match, the last one as a prefix when `prefix`;
 * `alternatives[i]`, when given, are other whole words that may stand for word i (typo corrections).
 */
export function ftsQuery(tokens: readonly string[], opts: { prefix?: boolean; alternatives?: readonly (readonly string[] | undefined)[] } = {}): string {
  const parts = tokens.map((t, i) => {
    const star = opts.prefix && i === tokens.length - 1 ? '*' : '';
    const alts = opts.alternatives?.[i];
    if (!alts || alts.length === 0) return `${ftsString(t)}${star}`;
    // A correction is a whole word of the index: the word typed may be a prefix, its corrections are not.
    return `(${[`${ftsString(t)}${star}`, ...alts.map(ftsString)].join(' OR ')})`;
  });
  // Explicit ANDs: FTS5's implicit AND does not join a parenthesised group to its neighbours.
  return parts.join(' AND ');
}

/** The words obtained by deleting one character of `word` (its one-typo neighbourhood's keys), without duplicates. */
export function deletions(word: string): string[] {
  const chars = [...word];
  const out = new Set<string>();
  for (let i = 0; i < chars.length; i++) out.add([...chars.slice(0, i), ...chars.slice(i + 1)].join(''));
  return [...out];
}

/**
 * True when `a` and `b` differ by at most one edit: one character inserted, deleted or replaced, or
 * two neighbours swapped (the optimal-string-alignment distance is ≤ 1).
 */
export function withinOneEdit(a: string, b: string): boolean {
  const x = [...a];
  const y = [...b];
  if (Math.abs(x.length - y.length) > 1) return false;
  let i = 0;
  while (i < x.length && i < y.length && x[i] === y[i]) i++;
  if (i === x.length && i === y.length) return true;
  const rest = (p: number, q: number) => x.slice(p).join('') === y.slice(q).join('');
  if (x.length === y.length) return rest(i + 1, i + 1) || (x[i] === y[i + 1] && x[i + 1] === y[i] && rest(i + 2, i + 2));
  return x.length > y.length ? rest(i + 1, i) : rest(i, i + 1);
}
