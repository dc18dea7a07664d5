/* PNG row filters (filter.c). */
#ifndef TILEBAKE_FILTER_H
#define TILEBAKE_FILTER_H
#include <stddef.h>
#include <stdint.h>

/* Instruction sets, best last; a call may cap what it uses (tests compare them). */
enum { TB_SIMD_AUTO = 0, TB_SIMD_NONE = 1, TB_SIMD_SSE2 = 2, TB_SIMD_AVX2 = 3 };
/* The filters tried (tb_filter_apply's f: 0 Sub, 1 Up, 2 Paeth), as PNG's filter type bytes. */
#define TB_FILTERS 3
extern const uint8_t tb_filter_type[TB_FILTERS];

/* Detects the CPU's instruction sets; call once before threads filter. */
void tb_filter_init(void);
/* The best level this machine and build support, at most `cap` (TB_SIMD_AUTO: no cap). */
int tb_simd_level(int cap);

/*
 * tb_filter_costs samples one 32-byte block in TB_COST_STRIDE. On the static-map bench (C alone, AVX2):
 * every block 3.49 ms per image (two passes), 2: 3.18, 4: 2.98, 8: 2.86, 16: 2.78; 473.0, 473.7, 474.9,
 * 476.4, 479.2 KB, against 3.14 ms and 473.0 KB for one pass filtering the three in full.
 */
#define TB_COST_STRIDE 8
/* Rows `cur` over `prev` (`len` bytes, pixels of `bpp` bytes; both readable from `bpp` bytes before, zeros there); `simd` from tb_simd_level. */
/* Each filter's sum of absolute residuals (as signed bytes) over the row's sampled blocks: bytes i with (i / 32) % TB_COST_STRIDE == 0, the same at every instruction set. */
void tb_filter_costs(const uint8_t *cur, const uint8_t *prev, size_t len, int bpp, uint64_t costs[TB_FILTERS], int simd);
/* Filter `f` (0 Sub, 1 Up, 2 Paeth) of the row into out[0…len); returns whether some residual is not 0. */
int tb_filter_apply(const uint8_t *cur, const uint8_t *prev, size_t len, int bpp, int f, uint8_t *out, int simd);

#endif
