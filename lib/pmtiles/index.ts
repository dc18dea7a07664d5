/**
 * PMTiles v3 for tilebake: a streaming writer (pipeline) and a range-read reader (server).
 */
export { Compression, TileType, zxyToTileId, tileIdToZxy } from 'pmtiles';
export type { Header } from 'pmtiles';
export { PMTilesWriter, type WriterOptions, type WriterResult } from './writer.ts';
export { writerOptionsOf } from './prelude.ts';
export { DuplicateTileError } from './tile-index.ts';
export {
  openArchive,
  openArchiveFile,
  openStoreArchive,
  summarizeArchiveFile,
  type ArchiveSummary,
  type ArchiveEntry,
  type ArchiveReader,
  type OpenArchiveOptions,
  type TileLocation,
} from './reader.ts';
