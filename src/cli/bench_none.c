/* The benchmark of a build without CUDA: there is nothing to measure. */
#include "imgstat_cuda.h"

#include <string.h>

imgstat_status imgstat_bench_run(const imgstat_bench_options *opts,
                                 imgstat_bench_result *out,
                                 imgstat_error *err) {
  (void)opts;
  if (out)
    memset(out, 0, sizeof *out);
  return imgstat_error_set(err, IMGSTAT_ERR_NODEVICE,
                           "the benchmark needs a CUDA build; this imgstat "
                           "was built without CUDA support");
}
