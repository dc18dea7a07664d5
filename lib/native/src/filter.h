/* PNG row filters (filter.c). */
#ifndef TILEBAKE_FILTER_H
#define TILEBAKE_FILTER_H
#include <stddef.h>
#include <stdint.h>

/* Instruction sets, best last; a call may cap what it uses (tests compare them). */
enum { TB_SIMD_AUTO = 0, TB_SIMD_NONE = 1, TB_SIMD_SSE2 = 2, TB_SIMD_AVX2 = 3 };
/* The filters tried, in the order of tb_filter_row's outputs, as PNG's filter type bytes. */
#define TB_FILTERS 3
extern const uint8_t tb_filter_type[TB_FILTERS];

/* Detects the CPU's instruction sets; call once before threads filter. */
void tb_filter_init(void);
/* The best level this machine and build support, at most `cap` (TB_SIMD_AUTO: no cap). */
int tb_simd_level(int cap);
/*
 * Sub, Up and Paeth of row `cur` over `prev` (`len` bytes, pixels of `bpp` bytes; both readable from
 * `bpp` bytes before, zeros there) into out[0..2], and each output's sum of absolute values as signed
 * bytes (libpng's heuristic for choosing one), using instruction set `simd` (from tb_simd_level).
 */
void tb_filter_row(const uint8_t *cur, const uint8_t *prev, size_t len, int bpp, uint8_t *const out[TB_FILTERS], uint64_t costs[TB_FILTERS], int simd);

#endif
