/* The order of the pool's extrema keys (internal to the library): one home
 * for the pool's merges (pool.c) and the dataset's choice among its depths'
 * pools (src/dataset/). */
#ifndef IMGSTAT_CORE_POOL_KEY_H
#define IMGSTAT_CORE_POOL_KEY_H

#include "imgstat/pool.h"

/* Whether a comes before b in (ordinal, y, x) order: the first
 * occurrence. */
int ist_pool_key_before(imgstat_pool_key a, imgstat_pool_key b);

#endif
