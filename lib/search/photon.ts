/**
 * Answers in the shape Photon returns (GeoJSON, properties after the GeocodeJSON draft): a
 * FeatureCollection of points with `name`, `osm_type`/`osm_id`, `osm_key`/`osm_value`, `type`, the
 * address parts and `extent` as [west, north, east, south] (Photon's order), plus tilebake's `kind` and,
 * for reverse geocoding, `distance` in metres; a GIS feature has `layer` and `fid` instead of `osm_*`. `lang` picks `name:xx` (and the city's and country's)
 * where the entry has it, else the default name, as Photon does.
 */
import type { Hit, SearchIndex } from './query.ts';

/** One feature of an answer. */
export interface PhotonFeature {
  type: 'Feature';
  geometry: { type: 'Point'; coordinates: [number, number] };
  properties: Record<string, string | number | number[]>;
}

/** A FeatureCollection of features. */
export interface PhotonAnswer {
  type: 'FeatureCollection';
  features: PhotonFeature[];
}

/** Coordinates are given to 7 decimals (OSM's precision). */
const COORD_DECIMALS = 1e7;
const round = (v: number) => Math.round(v * COORD_DECIMALS) / COORD_DECIMALS;
/** Distances to a tenth of a metre. */
const round1 = (v: number) => Math.round(v * 10) / 10;

/** The name of `key`'s entry in `lang`, when it has one there. */
function localName(index: SearchIndex, key: string | undefined, lang: string | undefined): string | undefined {
  if (!key || !lang) return undefined;
  return index.namesOf(key)?.names[lang];
}

/** The feature of `hit` (found in `index`). */
export function photonFeature(hit: Hit, index: SearchIndex, lang?: string): PhotonFeature {
  const e = hit.entry;
  const p: PhotonFeature['properties'] = {};
  const name = (lang && e.names[lang]) || e.name;
  if (name) p.name = name;
  p.kind = e.kind;
  p.type = e.type;
  if (e.osmType !== undefined && e.osmId !== undefined) {
    p.osm_type = e.osmType;
    p.osm_id = e.osmId;
    if (e.osmKey) p.osm_key = e.osmKey;
    if (e.osmValue) p.osm_value = e.osmValue;
  } else {
    // A GIS feature: no OSM element (a client linking to openstreetmap.org must not), its layer and FID instead.
    if (e.layer !== undefined) p.layer = e.layer;
    if (e.fid !== undefined) p.fid = e.fid;
  }
  if (e.housenumber) p.housenumber = e.housenumber;
  if (e.street) p.street = e.street;
  if (e.postcode) p.postcode = e.postcode;
  if (e.district) p.district = e.district;
  const city = localName(index, e.cityKey, lang) ?? e.city;
  if (city) p.city = city;
  const country = localName(index, e.countryKey, lang) ?? e.country;
  if (country) p.country = country;
  if (e.countrycode) p.countrycode = e.countrycode;
  if (e.bbox) p.extent = [round(e.bbox[0]), round(e.bbox[3]), round(e.bbox[2]), round(e.bbox[1])];
  if (hit.distance !== undefined) p.distance = round1(hit.distance);
  return { type: 'Feature', geometry: { type: 'Point', coordinates: [round(e.lon), round(e.lat)] }, properties: p };
}

/** The answer of `hits`, each from its index. */
export function photonAnswer(hits: readonly { hit: Hit; index: SearchIndex }[], lang?: string): PhotonAnswer {
  return { type: 'FeatureCollection', features: hits.map(({ hit, index }) => photonFeature(hit, index, lang)) };
}
