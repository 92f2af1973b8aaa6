/* The checksum of imgstat's serialized forms (pooled partials, dataset
 * accumulators): FNV-1a, 64 bits. One home, so that both forms check alike. */
#ifndef IMGSTAT_CORE_CHECKSUM_H
#define IMGSTAT_CORE_CHECKSUM_H

#include <stddef.h>
#include <stdint.h>

static inline uint64_t ist_fnv1a(const uint8_t *p, size_t n) {
  uint64_t h = UINT64_C(0xcbf29ce484222325);
  for (size_t i = 0; i < n; i++) {
    h ^= p[i];
    h *= UINT64_C(0x100000001b3);
  }
  return h;
}

#endif
