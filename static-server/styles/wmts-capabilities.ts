/**
 * WMTS 1.0.0 capabilities (RESTful encoding) of rendered styles: one layer per style and scale
 * (`{style}`: 256 px tiles in the `GoogleMapsCompatible` tile matrix set, `{style}@2x`: 512 px tiles in
 * `GoogleMapsCompatible_512`, the same grid at twice the pixel density), the built formats, bounds and
 * zoom range from the manifest, and ResourceURL templates at the raster tile routes.
 */
import { boundsAtZoom, type StyleEntry } from '../../lib/manifest.ts';
import { tileRangeForBBox } from '../../lib/tile-math.ts';
import { xmlEscape } from '../../lib/xml.ts';
import { TILE_CONTENT_TYPES } from '../tile-response.ts';
import { TILE_SIZE } from '../../lib/metatiles.ts';
import { FORMAT_PREFERENCE } from './raster-tilejson.ts';

/** Scale denominator of zoom 0 of GoogleMapsCompatible (256 px tiles, 0.28 mm pixels). */
const Z0_SCALE_DENOMINATOR = 559082264.0287178;
/** Half the Web Mercator world's width in metres: the top-left corner of the tile matrices. */
const MERCATOR_HALF_WORLD_M = 20037508.3427892;
/** Tile matrix sets by scale. */
const MATRIX_SETS = { 1: 'GoogleMapsCompatible', 2: 'GoogleMapsCompatible_512' } as const;

/** A style as the capabilities describe it. */
export interface WmtsStyle {
  id: string;
  entry: StyleEntry;
  /** Deepest zoom served (the baked maxzoom, or more when tiles above it are served). */
  maxzoom: number;
}

/** One tile matrix set from zoom 0 to `maxzoom`: 256 px tiles at scale 1, 512 px tiles at scale 2. */
function tileMatrixSet(scale: 1 | 2, maxzoom: number): string {
  const size = TILE_SIZE * scale;
  const matrices: string[] = [];
  for (let z = 0; z <= maxzoom; z++) {
    const n = 2 ** z;
    matrices.push(`    <TileMatrix>
      <ows:Identifier>${z}</ows:Identifier>
      <ScaleDenominator>${Z0_SCALE_DENOMINATOR / n / scale}</ScaleDenominator>
      <TopLeftCorner>${-MERCATOR_HALF_WORLD_M} ${MERCATOR_HALF_WORLD_M}</TopLeftCorner>
      <TileWidth>${size}</TileWidth>
      <TileHeight>${size}</TileHeight>
      <MatrixWidth>${n}</MatrixWidth>
      <MatrixHeight>${n}</MatrixHeight>
    </TileMatrix>`);
  }
  const wellKnown = scale === 1 ? '\n    <WellKnownScaleSet>urn:ogc:def:wkss:OGC:1.0:GoogleMapsCompatible</WellKnownScaleSet>' : '';
  return `  <TileMatrixSet>
    <ows:Title>Web Mercator, ${size} px tiles</ows:Title>
    <ows:Identifier>${MATRIX_SETS[scale]}</ows:Identifier>
    <ows:SupportedCRS>urn:ogc:def:crs:EPSG::3857</ows:SupportedCRS>${wellKnown}
${matrices.join('\n')}
  </TileMatrixSet>`;
}

/** The layer of one style at one scale, or undefined when nothing was built at that scale. */
function layer(style: WmtsStyle, scale: 1 | 2, baseUrl: string): string | undefined {
  const { id, entry, maxzoom } = style;
  const formats = Object.values(entry.archives)
    .filter((a) => a.scale === scale)
    .map((a) => a.format)
    .sort((a, b) => FORMAT_PREFERENCE.indexOf(a) - FORMAT_PREFERENCE.indexOf(b));
  if (formats.length === 0) return undefined;
  const layerId = scale === 2 ? `${id}@2x` : id;
  const [w, s, e, n] = entry.bounds;
  const limits: string[] = [];
  for (let z = entry.minzoom; z <= maxzoom; z++) {
    const r = tileRangeForBBox(boundsAtZoom(entry, z), z);
    limits.push(`        <TileMatrixLimits>
          <TileMatrix>${z}</TileMatrix>
          <MinTileRow>${r.minY}</MinTileRow>
          <MaxTileRow>${r.maxY}</MaxTileRow>
          <MinTileCol>${r.minX}</MinTileCol>
          <MaxTileCol>${r.maxX}</MaxTileCol>
        </TileMatrixLimits>`);
  }
  const root = `${baseUrl}/styles/${encodeURIComponent(id)}/{TileMatrix}/{TileCol}/{TileRow}${scale === 2 ? '@2x' : ''}`;
  const title = `${entry.name ?? id}${scale === 2 ? ' (512 px, high-DPI)' : ''}`;
  return `  <Layer>
    <ows:Title>${xmlEscape(title)}</ows:Title>${entry.attribution ? `\n    <ows:Abstract>${xmlEscape(entry.attribution)}</ows:Abstract>` : ''}
    <ows:WGS84BoundingBox crs="urn:ogc:def:crs:OGC:2:84">
      <ows:LowerCorner>${w} ${s}</ows:LowerCorner>
      <ows:UpperCorner>${e} ${n}</ows:UpperCorner>
    </ows:WGS84BoundingBox>
    <ows:Identifier>${xmlEscape(layerId)}</ows:Identifier>
    <Style isDefault="true">
      <ows:Identifier>default</ows:Identifier>
    </Style>
${formats.map((f) => `    <Format>${TILE_CONTENT_TYPES[f]}</Format>`).join('\n')}
    <TileMatrixSetLink>
      <TileMatrixSet>${MATRIX_SETS[scale]}</TileMatrixSet>
      <TileMatrixSetLimits>
${limits.join('\n')}
      </TileMatrixSetLimits>
    </TileMatrixSetLink>
${formats.map((f) => `    <ResourceURL format="${TILE_CONTENT_TYPES[f]}" resourceType="tile" template="${xmlEscape(`${root}.${f}`)}"/>`).join('\n')}
  </Layer>`;
}

/** An OperationsMetadata entry offering `name` at `href` (escaped) in the RESTful encoding. */
function restOperation(name: string, href: string): string {
  return `    <ows:Operation name="${name}">
      <ows:DCP>
        <ows:HTTP>
          <ows:Get xlink:href="${href}">
            <ows:Constraint name="GetEncoding">
              <ows:AllowedValues>
                <ows:Value>RESTful</ows:Value>
              </ows:AllowedValues>
            </ows:Constraint>
          </ows:Get>
        </ows:HTTP>
      </ows:DCP>
    </ows:Operation>`;
}

/**
 * The capabilities document of `styles` (one style for `/styles/{style}/wmts.xml`, all for
 * `/styles/wmts.xml`), URLs under `baseUrl`; `selfUrl` is this document's own URL.
 */
export function wmtsCapabilities(styles: readonly WmtsStyle[], baseUrl: string, selfUrl: string): string {
  const layers: string[] = [];
  const scales = new Set<1 | 2>();
  for (const style of styles) {
    for (const scale of [1, 2] as const) {
      const l = layer(style, scale, baseUrl);
      if (l) {
        layers.push(l);
        scales.add(scale);
      }
    }
  }
  const maxzoom = Math.max(0, ...styles.map((s) => s.maxzoom));
  const sets = [...scales].sort().map((scale) => tileMatrixSet(scale, maxzoom));
  const self = xmlEscape(selfUrl);
  return `<?xml version="1.0" encoding="UTF-8"?>
<Capabilities xmlns="http://www.opengis.net/wmts/1.0" xmlns:ows="http://www.opengis.net/ows/1.1" xmlns:xlink="http://www.w3.org/1999/xlink" xmlns:xsi="http://www.w3.org/2001/XMLSchema-instance" xmlns:gml="http://www.opengis.net/gml" xsi:schemaLocation="http://www.opengis.net/wmts/1.0 http://schemas.opengis.net/wmts/1.0/wmtsGetCapabilities_response.xsd" version="1.0.0">
  <ows:ServiceIdentification>
    <ows:Title>tilebake</ows:Title>
    <ows:ServiceType>OGC WMTS</ows:ServiceType>
    <ows:ServiceTypeVersion>1.0.0</ows:ServiceTypeVersion>
  </ows:ServiceIdentification>
  <ows:OperationsMetadata>
${restOperation('GetCapabilities', self)}
${restOperation('GetTile', xmlEscape(`${baseUrl}/styles/`))}
  </ows:OperationsMetadata>
  <Contents>
${layers.join('\n')}
${sets.join('\n')}
  </Contents>
  <ServiceMetadataURL xlink:href="${self}"/>
</Capabilities>
`;
}
