/** Options and argument parsers shared by several commands. */
import { parseBBox as parseBBoxText } from '../lib/packs/area.ts';

/** `--s3-endpoint` of every command that takes an s3:// location (serve, plan, shard, publish). */
export const S3_ENDPOINT_OPTION = {
  type: 'string',
  describe: 'Endpoint of an S3-compatible store for s3:// locations (path-style; default: AWS_ENDPOINT_URL, else AWS S3). Credentials: the standard AWS chain',
} as const;

/** Parse `w,s,e,n` for a `--bbox` option; `flag` names it in the error. */
export function parseBBox(s: string | undefined, flag = '--bbox'): [number, number, number, number] | undefined {
  return s === undefined ? undefined : parseBBoxText(s, flag);
}
