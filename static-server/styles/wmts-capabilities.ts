/**
 * WMTS 1.0.0 capabilities (RESTful encoding) of rendered styles and raster tilesets: one layer per
 * style or tileset and scale (`{id}`: 256 px tiles in the `GoogleMapsCompatible` tile matrix set,
 * `{id}@2x`: 512 px tiles in `GoogleMapsCompatible_512`, the same grid at twice the pixel density), the
 * built formats, bounds and zoom range from the manifest, and ResourceURL templates at the tile routes
 * (`/styles/{style}/…`, `/data/{tileset}/…`).
 */
import { boundsAtZoom, tilesetMaxzoom, tilesetScales, type StyleEntry, type TilesetEntry, type ZoomCoverage } from '../../lib/manifest.ts';
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

/** One layer of the capabilities at one scale: what a style or a raster tileset offers there. */
export interface WmtsLayer {
  /** Layer identifier (`{id}` or `{id}@2x`). */
  identifier: string;
  title: string;
  attribution?: string;
  coverage: ZoomCoverage;
  scale: 1 | 2;
  minzoom: number;
  maxzoom: number;
  /** Formats, preferred first. */
  formats: string[];
  /** Tile URL template without the extension (`…/{TileMatrix}/{TileCol}/{TileRow}[@2x]`). */
  root: string;
}

/** Formats in the order they are listed. */
function preferred(formats: string[]): string[] {
  const rank = (f: string) => (FORMAT_PREFERENCE as readonly string[]).indexOf(f);
  return [...formats].sort((a, b) => rank(a) - rank(b));
}

/** The layers of a style: one per scale it was built at. */
export function styleLayers(style: WmtsStyle, baseUrl: string): WmtsLayer[] {
  const { id, entry, maxzoom } = style;
  return ([1, 2] as const).flatMap((scale) => {
    const formats = preferred(Object.values(entry.archives).filter((a) => a.scale === scale).map((a) => a.format));
    if (formats.length === 0) return [];
    return [{
      identifier: scale === 2 ? `${id}@2x` : id,
      title: `${entry.name ?? id}${scale === 2 ? ' (512 px, high-DPI)' : ''}`,
      attribution: entry.attribution,
      coverage: entry,
      scale, minzoom: entry.minzoom, maxzoom, formats,
      root: `${baseUrl}/styles/${encodeURIComponent(id)}/{TileMatrix}/{TileCol}/{TileRow}${scale === 2 ? '@2x' : ''}`,
    }];
  });
}

/**
 * The layers of a raster tileset: `{name}` and, with @2x tiles, `{name}@2x` (`name`: the tileset id,
 * unless a style has that id; then `data/{id}`).
 */
export function tilesetLayers(id: string, entry: TilesetEntry, baseUrl: string, name = id): WmtsLayer[] {
  if (entry.kind !== 'raster') return [];
  return tilesetScales(entry).map((scale) => ({
    identifier: scale === 2 ? `${name}@2x` : name,
    title: `${entry.name ?? id}${scale === 2 ? ' (512 px, high-DPI)' : ''}`,
    attribution: entry.attribution,
    coverage: entry,
    scale, minzoom: entry.minzoom, maxzoom: tilesetMaxzoom(entry, scale), formats: [entry.format],
    root: `${baseUrl}/data/${encodeURIComponent(id)}/{TileMatrix}/{TileCol}/{TileRow}${scale === 2 ? '@2x' : ''}`,
  }));
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

/** The XML of one layer. */
function layerXml(l: WmtsLayer): string {
  const [w, s, e, n] = l.coverage.bounds;
  const limits: string[] = [];
  for (let z = l.minzoom; z <= l.maxzoom; z++) {
    const r = tileRangeForBBox(boundsAtZoom(l.coverage, z), z);
    limits.push(`        <TileMatrixLimits>
          <TileMatrix>${z}</TileMatrix>
          <MinTileRow>${r.minY}</MinTileRow>
          <MaxTileRow>${r.maxY}</MaxTileRow>
          <MinTileCol>${r.minX}</MinTileCol>
          <MaxTileCol>${r.maxX}</MaxTileCol>
        </TileMatrixLimits>`);
  }
  return `  <Layer>
    <ows:Title>${xmlEscape(l.title)}</ows:Title>${l.attribution ? `\n    <ows:Abstract>${xmlEscape(l.attribution)}</ows:Abstract>` : ''}
    <ows:WGS84BoundingBox crs="urn:ogc:def:crs:OGC:2:84">
      <ows:LowerCorner>${w} ${s}</ows:LowerCorner>
      <ows:UpperCorner>${e} ${n}</ows:UpperCorner>
    </ows:WGS84BoundingBox>
    <ows:Identifier>${xmlEscape(l.identifier)}</ows:Identifier>
    <Style isDefault="true">
      <ows:Identifier>default</ows:Identifier>
    </Style>
${l.formats.map((f) => `    <Format>${TILE_CONTENT_TYPES[f]}</Format>`).join('\n')}
    <TileMatrixSetLink>
      <TileMatrixSet>${MATRIX_SETS[l.scale]}</TileMatrixSet>
      <TileMatrixSetLimits>
${limits.join('\n')}
      </TileMatrixSetLimits>
    </TileMatrixSetLink>
${l.formats.map((f) => `    <ResourceURL format="${TILE_CONTENT_TYPES[f]}" resourceType="tile" template="${xmlEscape(`${l.root}.${f}`)}"/>`).join('\n')}
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
 * The capabilities document of `layers` (one style's or tileset's for `/styles/{style}/wmts.xml` and
 * `/data/{tileset}/wmts.xml`, all for `/styles/wmts.xml`); `selfUrl` is this document's own URL and
 * `getTileUrl` the GetTile operation's.
 */
export function wmtsCapabilities(layers: readonly WmtsLayer[], selfUrl: string, getTileUrl: string): string {
  const scales = new Set(layers.map((l) => l.scale));
  const maxzoom = Math.max(0, ...layers.map((l) => l.maxzoom));
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
${restOperation('GetTile', xmlEscape(getTileUrl))}
  </ows:OperationsMetadata>
  <Contents>
${layers.map(layerXml).join('\n')}
${sets.join('\n')}
  </Contents>
  <ServiceMetadataURL xlink:href="${self}"/>
</Capabilities>
`;
}
