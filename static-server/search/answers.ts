/**
 * Finished answers of GET /search and /reverse (their JSON bodies), keyed by the route and its parsed
 * parameters, so the same query asked again (a user typing `Vad`, `Vadu`, `Vaduz` in a town of users
 * typing the same; a map page reverse-geocoding its centre) is answered without asking SQLite again.
 * One cache per server context, and a new build version gets a new context, so a rebuild never serves
 * an old answer. An LRU bounded in bytes (a sixteenth of the tile cache's share of `--cache-mb`; 0
 * turns it off), metric cache name `search-answers`.
 */
import { ByteLru } from '../../lib/lru.ts';
import { perContextCache } from '../context-cache.ts';

/** Share of the tile cache's budget given to search answers. */
const ANSWERS_SHARE = 1 / 16;
/** Rough per-entry overhead (map slot, entry object), bytes. */
const ENTRY_OVERHEAD_BYTES = 100;

/** Answers of one server context: key → JSON body. */
export class SearchAnswers {
  readonly entries: ByteLru<string, string>;

  constructor(maxBytes: number) {
    this.entries = new ByteLru(maxBytes);
  }

  /** The body for `key`, else the one `answer()` makes (kept when it fits; a failure is not kept). */
  async get(key: string, answer: () => Promise<string>): Promise<string> {
    const hit = this.entries.get(key);
    if (hit !== undefined) return hit;
    const body = await answer();
    // JavaScript strings are UTF-16: two bytes a character.
    this.entries.set(key, body, 2 * (key.length + body.length) + ENTRY_OVERHEAD_BYTES);
    return body;
  }
}

/** The cache key of an answer: the same parsed parameters give the same key however the URL spelt them. */
export function answerKey(route: 'search' | 'reverse', params: unknown, lang: string | undefined): string {
  return JSON.stringify([route, params, lang ?? null]);
}

/** The search answer cache of a server context (created on first use). */
export const searchAnswersOf = perContextCache('search-answers', ANSWERS_SHARE, (bytes) => new SearchAnswers(bytes), (c) => c.entries);
