/** Options and argument parsers shared by several commands. */
import { UserError } from '../lib/errors.ts';

/** `--s3-endpoint` of every command that takes an s3:// location (serve, plan, shard, publish). */
export const S3_ENDPOINT_OPTION = {
  type: 'string',
  describe: 'Endpoint of an S3-compatible store for s3:// locations (path-style; default: AWS_ENDPOINT_URL, else AWS S3). Credentials: the standard AWS chain',
} as const;

/** Parse `w,s,e,n` for a `--bbox` option; `flag` names it in the error. */
export function parseBBox(s: string | undefined, flag = '--bbox'): [number, number, number, number] | undefined {
  if (s === undefined) return undefined;
  const n = s.split(',').map((v) => Number(v.trim()));
  const ok = n.length === 4 && n.every(Number.isFinite) && n[0] >= -180 && n[2] <= 180 && n[1] >= -90 && n[3] <= 90 && n[0] < n[2] && n[1] < n[3];
  if (!ok) throw new UserError(`${flag}: expected west,south,east,north in degrees with west < east and south < north (got "${s}")`, { exitCode: 2 });
  return [n[0], n[1], n[2], n[3]];
}
