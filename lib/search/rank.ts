/**
 * How well a candidate matches the words typed, and the score that orders the answer: the match of the
 * names (an exact name first, then the share of the name the words cover, a name that starts with them),
 * the entry's importance and, with a `near` point, its closeness.
 */

/** A candidate's names as the index folds them (lib/search/text.ts nameKey), one string per name. */
export interface Matchable {
  folded: readonly string[];
  importance: number;
}

/** The words typed (folded) and what may stand for each (typo corrections), the last one maybe a prefix. */
export interface TypedWords {
  words: readonly string[];
  alternatives?: readonly (readonly string[] | undefined)[];
  prefix: boolean;
}

const EXACT = 1;
/** The name match of a name that holds every word typed starts here (below: some words only). */
export const ALL_WORDS_BASE = 0.6;
const ALL_WORDS_COVERAGE = 0.3;
const STARTS_WITH = 0.05;
const SOME_WORDS_BASE = 0.3;
const SOME_WORDS_SHARE = 0.2;
/** A match through a typo correction counts this much of the same match spelt right. */
export const TYPO_FACTOR = 0.85;

/** How a word typed matches a word of a name: 'word' (the same word), 'prefix', or undefined. */
function wordMatch(typed: string, alts: readonly string[] | undefined, word: string, prefix: boolean): 'word' | 'prefix' | undefined {
  if (word === typed || alts?.includes(word)) return 'word';
  // Only the word typed is a prefix; a correction is a whole word (lib/search/text.ts ftsQuery).
  return prefix && word.startsWith(typed) ? 'prefix' : undefined;
}

/** The name match of one name (0–1) and whether every typed word is a whole word of it. */
function nameMatch(typed: TypedWords, name: string): { score: number; whole: boolean } {
  const q = typed.words;
  if (name === q.join(' ')) return { score: EXACT, whole: true };
  const nameWords = name.split(' ');
  const total = nameWords.reduce((n, w) => n + w.length, 0) || 1;
  let covered = 0;
  let found = 0;
  let whole = true;
  const used = new Set<number>();
  q.forEach((t, i) => {
    const last = i === q.length - 1;
    let best: { at: number; how: 'word' | 'prefix' } | undefined;
    nameWords.forEach((w, at) => {
      if (used.has(at)) return;
      const how = wordMatch(t, typed.alternatives?.[i], w, typed.prefix && last);
      if (how && (!best || (how === 'word' && best.how === 'prefix'))) best = { at, how };
    });
    if (!best) {
      whole = false;
      return;
    }
    used.add(best.at);
    found++;
    covered += best.how === 'word' ? nameWords[best.at].length : Math.min(t.length, nameWords[best.at].length);
    if (best.how === 'prefix') whole = false;
  });
  if (found < q.length) return { score: SOME_WORDS_BASE + (SOME_WORDS_SHARE * found) / q.length, whole: false };
  const starts = used.has(0) ? STARTS_WITH : 0;
  return { score: ALL_WORDS_BASE + (ALL_WORDS_COVERAGE * covered) / total + starts, whole };
}

/** The best name match of a candidate over its names. */
export function matchOf(typed: TypedWords, c: Matchable): { score: number; whole: boolean } {
  let best = { score: 0, whole: false };
  for (const name of c.folded) {
    const m = nameMatch(typed, name);
    if (m.score > best.score || (m.score === best.score && m.whole)) best = m;
  }
  return best;
}

/** Weights of the final score without and with a `near` point. */
const W_NAME = 0.65;
const W_IMPORTANCE = 0.35;
const W_NEAR_NAME = 0.55;
const W_NEAR_IMPORTANCE = 0.25;
const W_NEAR = 0.2;
/** Distance at which closeness has fallen to 1/e, metres. */
export const NEAR_SCALE_M = 3000;

/** The score ordering the answer: name match, importance and (with `distanceM`) closeness. */
export function scoreOf(name: number, importance: number, distanceM?: number): number {
  if (distanceM === undefined) return W_NAME * name + W_IMPORTANCE * importance;
  return W_NEAR_NAME * name + W_NEAR_IMPORTANCE * importance + W_NEAR * Math.exp(-distanceM / NEAR_SCALE_M);
}
