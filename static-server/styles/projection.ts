/**
 * `?projection=globe` on `style.json`: the style drawn on MapLibre's globe (lib/style-projection.ts), or
 * `mercator` to override a style's own projection. A bad or repeated value is a 400.
 */
import { HttpError } from '../../lib/http-error.ts';
import { HttpStatus } from '../../lib/http-status.ts';
import { isProjection, PROJECTIONS, type Projection } from '../../lib/style-projection.ts';

/** The query parameter. */
export const PROJECTION_PARAM = 'projection';

/** `?projection=` of a query: undefined when absent; a 400 when repeated or not one of PROJECTIONS. */
export function queryProjection(query: unknown): Projection | undefined {
  const raw = (query as Record<string, unknown> | undefined)?.[PROJECTION_PARAM];
  if (raw === undefined) return undefined;
  if (Array.isArray(raw)) throw new HttpError(HttpStatus.BadRequest, `${PROJECTION_PARAM}: given ${raw.length} times`);
  if (!isProjection(raw)) throw new HttpError(HttpStatus.BadRequest, `${PROJECTION_PARAM}: ${JSON.stringify(raw)} is not one of ${PROJECTIONS.join(', ')}`, { projections: [...PROJECTIONS] });
  return raw;
}
