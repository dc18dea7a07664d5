/* CRC-32 (PNG chunks) and Adler-32 (the zlib stream) for the PNG encoder. */
#ifndef TILEBAKE_CHECKSUM_H
#define TILEBAKE_CHECKSUM_H
#include <stddef.h>
#include <stdint.h>

/* Builds the CRC tables; call once before threads use tb_crc32. */
void tb_checksum_init(void);
/* CRC-32 (ISO-HDLC, as PNG and zlib) of `n` bytes continuing `crc` (0 to start). */
uint32_t tb_crc32(uint32_t crc, const uint8_t *p, size_t n);
/* Adler-32 of `n` bytes continuing `adler` (1 to start), with instruction set `simd` (filter.h's TB_SIMD_*, from tb_simd_level). */
uint32_t tb_adler32(uint32_t adler, const uint8_t *p, size_t n, int simd);
/* Adler-32 of `n` zero bytes continuing `adler` (s1 unchanged, s2 += n·s1). */
uint32_t tb_adler32_zeros(uint32_t adler, size_t n);

#endif
