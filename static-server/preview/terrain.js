// The terrain toggle: the build's terrain tileset as a hillshade layer and, where WebGL runs on a GPU,
// as MapLibre's 3D terrain tilted to TERRAIN_PITCH.
import { $, baseUrl, fragment, state } from './session.js';

/** Ids of what the page adds on top of a style. */
const DEM = 'tilebake-dem';
const DEM_3D = 'tilebake-dem-3d';
const HILLSHADE = 'tilebake-hillshade';
const TERRAIN_EXAGGERATION = 1.5;
const TERRAIN_PITCH = 60;
/**
 * WebGL renderers that rasterise on the CPU. MapLibre's 3D terrain draws every visible tile into a
 * 1024 px texture and the surface into depth buffers each frame: under SwiftShader (headless Chromium,
 * machines without a GPU) one such frame was measured at 2-20 s, during which the page does not react
 * (docs/preview.md). There the terrain toggle shows the hillshade only; `#terrain3d=1` forces 3D.
 */
const SOFTWARE_GL = /swiftshader|llvmpipe|softpipe|software|basic render driver/i;

/** The hillshade (and 3D terrain) when the toggle is on, added again after every style change. */
export function addTerrainLayers(map) {
  const terrain = state.catalog.tilesets.find((t) => t.kind === 'terrain');
  if (!state.terrain || !terrain) return;
  const dem = { type: 'raster-dem', url: `${baseUrl()}/data/${encodeURIComponent(terrain.id)}.json`, tileSize: 256, encoding: terrain.encoding ?? 'terrarium' };
  // Separate sources for the hillshade and the 3D surface (MapLibre draws each better so).
  if (!map.getSource(DEM)) map.addSource(DEM, dem);
  if (state.terrain3d && !map.getSource(DEM_3D)) map.addSource(DEM_3D, dem);
  const firstSymbol = map.getStyle().layers.find((l) => l.type === 'symbol')?.id;
  if (!map.getLayer(HILLSHADE)) map.addLayer({ id: HILLSHADE, type: 'hillshade', source: DEM, paint: { 'hillshade-exaggeration': 0.4 } }, firstSymbol);
  if (state.terrain3d) map.setTerrain({ source: DEM_3D, exaggeration: TERRAIN_EXAGGERATION });
}

export function setTerrain(on) {
  state.terrain = on;
  const map = state.map;
  if (on) {
    addTerrainLayers(map);
    if (state.terrain3d) map.easeTo({ pitch: TERRAIN_PITCH });
  } else {
    const was3d = !!map.getTerrain();
    if (was3d) map.setTerrain(null);
    if (map.getLayer(HILLSHADE)) map.removeLayer(HILLSHADE);
    for (const s of [DEM, DEM_3D]) if (map.getSource(s)) map.removeSource(s);
    if (was3d) map.easeTo({ pitch: 0 });
  }
}

/** Whether the browser's WebGL rasterises on the CPU (SOFTWARE_GL), from the renderer's unmasked name. */
function softwareWebGl() {
  const gl = document.createElement('canvas').getContext('webgl2') ?? document.createElement('canvas').getContext('webgl');
  if (!gl) return true;
  const info = gl.getExtension('WEBGL_debug_renderer_info');
  const renderer = String(gl.getParameter(info ? info.UNMASKED_RENDERER_WEBGL : gl.RENDERER));
  gl.getExtension('WEBGL_lose_context')?.loseContext();
  return SOFTWARE_GL.test(renderer);
}

/** The terrain toggle's label: hillshade only, and why, on a software-rendered WebGL. */
export function setUpTerrainToggle() {
  state.terrain3d = fragment.get('terrain3d') === '1' || !softwareWebGl();
  $('terrain-label').textContent = state.terrain3d ? 'Terrain: hillshade and 3D' : 'Terrain: hillshade';
  $('terrain-note').hidden = state.terrain3d;
}
