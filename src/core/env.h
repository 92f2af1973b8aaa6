/* Whole numbers from the environment (the IMGSTAT_* tuning and test knobs):
 * one rule for all of them. */
#ifndef IMGSTAT_CORE_ENV_H
#define IMGSTAT_CORE_ENV_H

#include <stdlib.h>

/* The environment's whole number NAME in [lo, hi] (clamped), else dflt:
 * unset, empty, not a whole number, or negative. */
static inline long long ist_env_count(const char *name, long long dflt,
                                      long long lo, long long hi) {
  const char *s = getenv(name);
  if (!s || !*s)
    return dflt;
  char *end = NULL;
  long long v = strtoll(s, &end, 10);
  if (*end || v < 0)
    return dflt;
  return v < lo ? lo : v > hi ? hi : v;
}

#endif
