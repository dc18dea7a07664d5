/* Length-limited Huffman codes for deflate blocks. */
#ifndef TILEBAKE_HUFFMAN_H
#define TILEBAKE_HUFFMAN_H
#include <stdint.h>

/*
 * Code lengths (≤ `maxbits`) for `n` symbols with frequencies `freq` (0: unused, length 0). The code is
 * always complete: with fewer than two used symbols, symbols 0/1 are given length 1.
 */
void tb_huffman_lengths(const uint32_t *freq, int n, int maxbits, uint8_t *lens);
/* Canonical codes of `lens`, bit-reversed for deflate's LSB-first bit order. */
void tb_huffman_codes(const uint8_t *lens, int n, uint16_t *codes);

#endif
