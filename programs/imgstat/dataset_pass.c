/* The float range pass on the command line (dataset_pass.h). */
#include "dataset_pass.h"
#include "cli_util.h"

#include <string.h>

int ist_dataset_range_run(const imgstat_dataset_pass *p,
                          imgstat_dataset_options *ds) {
  imgstat_error err;
  memset(&err, 0, sizeof err);
  int found = 0, cancelled = 0;
  double lo, hi;
  if (imgstat_dataset_float_range(p, &found, &lo, &hi, &cancelled, &err) !=
      IMGSTAT_OK) {
    ist_cli_error("--dataset: %s",
                  err.message[0] ? err.message : "out of memory");
    return 1;
  }
  if (cancelled && ist_cli_cancel_status() >= 0)
    return ist_cli_cancel_status();
  if (found) {
    ds->have_range = 1;
    ds->lo = lo;
    ds->hi = hi;
  }
  return -1;
}
