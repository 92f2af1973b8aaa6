/*
 * The images' summaries of a dataset accumulator, packed (internal to the
 * library): what the outlier rule and the notes need of each image, about
 * 40 bytes for an RGB image where a struct of doubles and a copied name
 * took over 300. Each summary follows the one before in one growing block:
 *
 *   the ordinal's difference from the previous one (zigzag varint), width
 *   and height (varints), the image's channels, the pooled channels, the
 *   depth and the constant flag (3 bytes), the constant's value (a double,
 *   constant images only), a float mean and std per pooled channel, then
 *   the name as the length it shares with the previous name and the rest
 *   (varints, then the rest's bytes).
 *
 * The means and stds are kept as floats (unit scale: 24 bits of mantissa,
 * a relative 6e-8): the outlier rule's robust z-scores are printed to one
 * decimal. Everything else is exact.
 */
#include "dataset_state.h"

#include <stdlib.h>
#include <string.h>

static int grow(summaries *S, size_t more) {
  if (S->used + more <= S->cap)
    return 1;
  size_t cap = S->cap ? S->cap : 4096;
  while (cap < S->used + more)
    cap *= 2;
  uint8_t *p = realloc(S->p, cap);
  if (!p)
    return 0;
  S->p = p;
  S->cap = cap;
  return 1;
}

static void put_varint(uint8_t **p, uint64_t v) {
  while (v >= 0x80) {
    *(*p)++ = (uint8_t)(v | 0x80);
    v >>= 7;
  }
  *(*p)++ = (uint8_t)v;
}

static uint64_t get_varint(const uint8_t **p) {
  uint64_t v = 0;
  for (int shift = 0;; shift += 7) {
    uint8_t b = *(*p)++;
    v |= (uint64_t)(b & 0x7f) << shift;
    if (!(b & 0x80) || shift >= 63)
      return v;
  }
}

imgstat_status ist_summaries_add(summaries *S, const summary *s,
                                 const char *name) {
  size_t len = strlen(name), shared = 0;
  while (shared < len && shared < S->last_len &&
         name[shared] == S->last_name[shared])
    shared++;
  size_t most =
      5 * 10 + 1 + 8 + (size_t)s->pooled * 8 + 2 * 10 + (len - shared);
  if (!grow(S, most))
    return IMGSTAT_ERR_NOMEM;
  if (len + 1 > S->last_cap) {
    size_t cap = 2 * (len + 1);
    char *p = realloc(S->last_name, cap);
    if (!p)
      return IMGSTAT_ERR_NOMEM;
    S->last_name = p;
    S->last_cap = cap;
  }
  uint8_t *p = S->p + S->used;
  uint64_t delta = s->ordinal - S->last_ordinal; /* mod 2^64 */
  put_varint(&p, delta << 1 ^ (uint64_t)((int64_t)delta >> 63));
  put_varint(&p, s->width);
  put_varint(&p, s->height);
  put_varint(&p, (uint64_t)s->channels);
  put_varint(&p, (uint64_t)s->pooled);
  *p++ = (uint8_t)(s->depth | (s->constant ? 4 : 0));
  if (s->constant) {
    memcpy(p, &s->const_value, 8);
    p += 8;
  }
  for (int c = 0; c < s->pooled; c++) {
    memcpy(p, &s->mean[c], 4);
    memcpy(p + 4, &s->std[c], 4);
    p += 8;
  }
  put_varint(&p, shared);
  put_varint(&p, len - shared);
  memcpy(p, name + shared, len - shared);
  p += len - shared;
  S->used = (size_t)(p - S->p);
  memcpy(S->last_name + shared, name + shared, len - shared + 1);
  S->last_len = len;
  S->last_ordinal = s->ordinal;
  S->n++;
  return IMGSTAT_OK;
}

void ist_summaries_free(summaries *S) {
  free(S->p);
  free(S->last_name);
  memset(S, 0, sizeof *S);
}

void ist_summary_reader_start(summary_reader *r, const summaries *S) {
  memset(r, 0, sizeof *r);
  r->from = S;
}

int ist_summary_next(summary_reader *r, summary *s) {
  const summaries *S = r->from;
  if (r->index >= S->n)
    return 0;
  const uint8_t *p = S->p + r->at;
  uint64_t z = get_varint(&p);
  r->ordinal += z >> 1 ^ (uint64_t)(-(int64_t)(z & 1));
  memset(s, 0, sizeof *s);
  s->ordinal = r->ordinal;
  s->width = (uint32_t)get_varint(&p);
  s->height = (uint32_t)get_varint(&p);
  s->channels = (int)get_varint(&p);
  s->pooled = (int)get_varint(&p);
  s->depth = *p & 3;
  s->constant = (*p++ & 4) != 0;
  if (s->constant) {
    memcpy(&s->const_value, p, 8);
    p += 8;
  }
  if (s->pooled > r->ms_cap) {
    float *ms = realloc(r->ms, 2 * (size_t)s->pooled * sizeof *ms);
    if (!ms)
      return -1;
    r->ms = ms;
    r->ms_cap = s->pooled;
  }
  s->mean = r->ms;
  s->std = r->ms + s->pooled;
  for (int c = 0; c < s->pooled; c++) {
    memcpy(&s->mean[c], p, 4);
    memcpy(&s->std[c], p + 4, 4);
    p += 8;
  }
  size_t shared = (size_t)get_varint(&p), rest = (size_t)get_varint(&p);
  if (r->no_names) {
    s->name = "";
    r->at = (size_t)(p + rest - S->p);
    r->index++;
    return 1;
  }
  if (shared + rest + 1 > r->cap) {
    size_t cap = 2 * (shared + rest + 1);
    char *q = realloc(r->name, cap);
    if (!q)
      return -1;
    r->name = q;
    r->cap = cap;
  }
  memcpy(r->name + shared, p, rest);
  r->name[shared + rest] = '\0';
  p += rest;
  s->name = r->name;
  r->at = (size_t)(p - S->p);
  r->index++;
  return 1;
}

void ist_summary_reader_end(summary_reader *r) {
  free(r->name);
  free(r->ms);
  memset(r, 0, sizeof *r);
}

size_t imgstat_dataset_footprint(const imgstat_dataset *d) {
  return d ? d->s.used : 0;
}
