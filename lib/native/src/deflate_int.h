/* Internals shared by deflate.c (the token scan) and deflate_block.c (the block writer). */
#ifndef TILEBAKE_DEFLATE_INT_H
#define TILEBAKE_DEFLATE_INT_H
#include "deflate.h"
#include <string.h>

#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ != __ORDER_LITTLE_ENDIAN__
#error "tilebake's PNG encoder writes words in little-endian byte order"
#endif

#define MIN_MATCH 3
#define MAX_MATCH 258
#define LITLEN_SYMBOLS 286
#define END_OF_BLOCK 256
#define MAX_STORED 65535u

/* A token: a literal byte (0…255), or a match of length len as MATCH_TOKEN + len. */
#define MATCH_TOKEN 256
#define TOKENS (MATCH_TOKEN + MAX_MATCH + 1)

struct tb_deflate {
  uint16_t *tokens;
  uint32_t *eq, *begins, *ends; /* add_avx2's mask and run positions (deflate.c) */
  size_t ntokens, raw;
  int sse2, avx2;
};

/* Length 3…258 → its symbol (257…285), extra bits and their value (tb_deflate_init). */
extern uint16_t tb_len_sym[MAX_MATCH + 1];
extern uint8_t tb_len_extra[MAX_MATCH + 1];
extern uint8_t tb_len_extra_val[MAX_MATCH + 1];
/* Extra bits of length symbols 257…285. */
extern const uint8_t tb_sym_extra[29];

/* Append the `n` ≤ 56 low bits of v; writes 8 bytes at the output's end each time (hence 8 of slack), no branch. */
static inline void tb_put(tb_bits *w, uint64_t v, unsigned n) {
  w->buf |= v << w->bits;
  w->bits += n;
  memcpy(w->out, &w->buf, 8); /* little-endian machines: the byte order deflate wants */
  w->out += w->bits >> 3;
  w->buf >>= w->bits & 56;
  w->bits &= 7;
}

#endif
