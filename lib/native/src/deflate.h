/*
 * A deflate compressor specialised for filtered image rows: literals and runs (matches at distance 1)
 * only, Huffman codes built per block from the block's own histogram. See deflate.c.
 */
#ifndef TILEBAKE_DEFLATE_H
#define TILEBAKE_DEFLATE_H
#include <stddef.h>
#include <stdint.h>

/* Least-significant-bit-first bit writer over a buffer with room for everything written plus 8 bytes; holds < 8 bits. */
typedef struct {
  uint8_t *out;
  uint64_t buf;
  unsigned bits;
} tb_bits;

/* A block being gathered: tokens and histograms of the bytes added since the last flush. */
typedef struct tb_deflate tb_deflate;

/* Builds the length tables; call once before threads compress. */
void tb_deflate_init(void);
/* A compressor whose blocks hold at most `block_bytes` bytes, using instruction set `simd` (filter.h's TB_SIMD_*, from tb_simd_level; NULL when out of memory). */
tb_deflate *tb_deflate_new(size_t block_bytes, int simd);
void tb_deflate_free(tb_deflate *d);
/* Add `n` ≥ 1 bytes to the block (at most its capacity in all); `data` must be readable from 1 byte before to 34 bytes past `n`. */
void tb_deflate_add(tb_deflate *d, const uint8_t *data, size_t n);
/* tb_deflate_add of `n` ≥ 2 bytes that are `first` then n − 1 zeros (a row filtered to all 0), without reading them: the same tokens. */
void tb_deflate_add_zeros(tb_deflate *d, uint8_t first, size_t n);
/* Bytes added since the last flush. */
size_t tb_deflate_pending(const tb_deflate *d);
/*
 * Write the block: dynamic Huffman codes, or stored blocks when those are smaller; `last` sets BFINAL.
 * Writes at most tb_deflate_bound(pending) bytes, but the output must have room for TB_DEFLATE_SLACK
 * more (a Huffman block found larger than stored while written is written again, stored). Returns 0,
 * or −1 when out of memory.
 */
int tb_deflate_flush(tb_deflate *d, tb_bits *w, int last);
/* Bytes past tb_deflate_bound's that tb_deflate_flush may write before writing the block again (header ≤ ~520, 4096 tokens ≤ 10 752, 8). */
#define TB_DEFLATE_SLACK 16384
/* Most bytes tb_deflate_flush writes for `n` pending bytes. */
size_t tb_deflate_bound(size_t n);
/* Pad the stream to a whole byte and write out what the bit writer holds. */
void tb_bits_flush(tb_bits *w);

#endif
