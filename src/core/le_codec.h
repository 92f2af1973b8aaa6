/* The byte order of imgstat's serialized forms (pooled partials, dataset
 * accumulators): little-endian whatever the host's, a double as the bits of
 * its IEEE 754 binary64. One home, so that both forms write alike. Each
 * function writes or reads at *p and moves *p past what it wrote or read. */
#ifndef IMGSTAT_CORE_LE_CODEC_H
#define IMGSTAT_CORE_LE_CODEC_H

#include <stdint.h>
#include <string.h>

static inline void ist_le_put32(uint8_t **p, uint32_t v) {
  for (int i = 0; i < 4; i++)
    *(*p)++ = (uint8_t)(v >> (8 * i));
}

static inline void ist_le_put64(uint8_t **p, uint64_t v) {
  for (int i = 0; i < 8; i++)
    *(*p)++ = (uint8_t)(v >> (8 * i));
}

static inline void ist_le_put_f64(uint8_t **p, double v) {
  uint64_t b;
  memcpy(&b, &v, sizeof b);
  ist_le_put64(p, b);
}

static inline uint32_t ist_le_get32(const uint8_t **p) {
  uint32_t v = 0;
  for (int i = 0; i < 4; i++)
    v |= (uint32_t)(*p)[i] << (8 * i);
  *p += 4;
  return v;
}

static inline uint64_t ist_le_get64(const uint8_t **p) {
  uint64_t v = 0;
  for (int i = 0; i < 8; i++)
    v |= (uint64_t)(*p)[i] << (8 * i);
  *p += 8;
  return v;
}

static inline double ist_le_get_f64(const uint8_t **p) {
  uint64_t b = ist_le_get64(p);
  double v;
  memcpy(&v, &b, sizeof v);
  return v;
}

#endif
