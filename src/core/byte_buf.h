/* The buffers of imgstat's serialized forms (the dataset accumulator's,
 * the report's): a growing buffer written at its end, and a reader that
 * never reads past its bytes (a read beyond them sets failed and gives
 * zeros). Numbers little-endian through le_codec.h. One home, so that every
 * form is written and bounded alike. */
#ifndef IMGSTAT_CORE_BYTE_BUF_H
#define IMGSTAT_CORE_BYTE_BUF_H

#include "checksum.h"
#include "imgstat/imgstat.h"
#include "le_codec.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

typedef struct ist_wbuf {
  uint8_t *p;
  size_t n, cap;
  int failed; /* out of memory: nothing more is written */
} ist_wbuf;

/* n more bytes at the end (NULL once failed). */
static inline uint8_t *ist_w_room(ist_wbuf *w, size_t n) {
  if (w->failed)
    return NULL;
  if (n > SIZE_MAX / 2 - w->n) {
    w->failed = 1;
    return NULL;
  }
  if (w->n + n > w->cap) {
    size_t cap = w->cap ? w->cap : 4096;
    while (cap < w->n + n)
      cap *= 2;
    uint8_t *p = realloc(w->p, cap);
    if (!p) {
      w->failed = 1;
      return NULL;
    }
    w->p = p;
    w->cap = cap;
  }
  uint8_t *at = w->p + w->n;
  w->n += n;
  return at;
}

static inline void ist_w_bytes(ist_wbuf *w, const void *src, size_t n) {
  uint8_t *p = ist_w_room(w, n);
  if (p && n)
    memcpy(p, src, n);
}

static inline void ist_w_u32(ist_wbuf *w, uint32_t v) {
  uint8_t *p = ist_w_room(w, 4);
  if (p)
    ist_le_put32(&p, v);
}

static inline void ist_w_u64(ist_wbuf *w, uint64_t v) {
  uint8_t *p = ist_w_room(w, 8);
  if (p)
    ist_le_put64(&p, v);
}

static inline void ist_w_f64(ist_wbuf *w, double v) {
  uint8_t *p = ist_w_room(w, 8);
  if (p)
    ist_le_put_f64(&p, v);
}

/* The form's end: its FNV-1a sum appended, the bytes handed to *buf (the
 * caller frees them) and *size; out of memory: freed, an error. */
static inline imgstat_status ist_w_seal(ist_wbuf *w, void **buf, size_t *size,
                                        imgstat_error *err) {
  if (!w->failed)
    ist_w_u64(w, ist_fnv1a(w->p, w->n));
  if (w->failed) {
    free(w->p);
    return imgstat_error_set(err, IMGSTAT_ERR_NOMEM, "out of memory");
  }
  *buf = w->p;
  *size = w->n;
  return IMGSTAT_OK;
}

typedef struct ist_rbuf {
  const uint8_t *p;
  size_t n, at;
  int failed; /* a read went past the end */
} ist_rbuf;

/* The next n bytes, NULL (and failed) when fewer are left. */
static inline const uint8_t *ist_r_bytes(ist_rbuf *r, size_t n) {
  if (r->failed || r->n - r->at < n) {
    r->failed = 1;
    return NULL;
  }
  const uint8_t *p = r->p + r->at;
  r->at += n;
  return p;
}

static inline uint32_t ist_r_u32(ist_rbuf *r) {
  const uint8_t *b = ist_r_bytes(r, 4);
  return b ? ist_le_get32(&b) : 0;
}

static inline uint64_t ist_r_u64(ist_rbuf *r) {
  const uint8_t *b = ist_r_bytes(r, 8);
  return b ? ist_le_get64(&b) : 0;
}

static inline double ist_r_f64(ist_rbuf *r) {
  const uint8_t *b = ist_r_bytes(r, 8);
  return b ? ist_le_get_f64(&b) : 0;
}

#endif
