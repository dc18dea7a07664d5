// The renderer is shared with `serve`'s on-demand renders.
export { MetatileRenderer, type FirstStyle, type MetatileRendererOptions, type RenderHost } from '../../workers/metatile-renderer.ts';
