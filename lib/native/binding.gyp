# tilebake's native addon: the PNG encoder, the resamplers (bilinear up, lanczos3 down), the static maps'
# overlay rasteriser and blend (lib/native.ts loads build/Release/tilebake_native.node). Built by scripts/build-native.mjs (make setup). Plain C; on x86-64
# SSE2 (its baseline) and AVX2/SSSE3 chosen at run time, so no -march is needed: any x86-64 runs it.
{
  "targets": [
    {
      "target_name": "tilebake_native",
      "sources": ["src/binding.c", "src/resize_napi.c", "src/png_encode.c", "src/filter.c", "src/deflate.c", "src/deflate_block.c", "src/huffman.c", "src/checksum.c", "src/resample.c", "src/reduce.c", "src/blend.c", "src/raster.c", "src/raster_shapes.c", "src/raster_napi.c"],
      "cflags": ["-O2", "-std=c11", "-Wall", "-Wextra"],
      "cflags!": ["-O3"],
      "xcode_settings": { "OTHER_CFLAGS": ["-O2", "-std=c11"] }
    }
  ]
}
