/* The run's index of masks and label images (mask_pair.h). */
#include "mask_pair.h"

imgstat_status ist_pairs_create(const imgstat_run_options *o, const char *where,
                                const char *what, ist_pairs **out,
                                imgstat_error *err) {
  return ist_pairs_open(where, what, o->mask_suffix, out, err);
}
