/* The benchmark of a build without CUDA: there is nothing to measure. */
#include "bench.h"

#include <string.h>

static imgstat_status no_cuda(imgstat_error *err) {
  return imgstat_error_set(err, IMGSTAT_ERR_NODEVICE,
                           "the benchmark needs a CUDA build; this imgstat "
                           "was built without CUDA support");
}

imgstat_status imgstat_bench_run(const imgstat_bench_options *opts,
                                 imgstat_bench_result *out,
                                 imgstat_error *err) {
  (void)opts;
  if (out)
    memset(out, 0, sizeof *out);
  return no_cuda(err);
}

imgstat_status imgstat_gpu_norm_bench(imgstat_gpu *gpu, uint32_t width,
                                      uint32_t height, int runs,
                                      imgstat_gpu_norm_timing *t,
                                      imgstat_error *err) {
  (void)gpu;
  (void)width;
  (void)height;
  (void)runs;
  if (t)
    memset(t, 0, sizeof *t);
  return no_cuda(err);
}
