/*
 * The multi-pass driver: pass 1 turns the input into one result per block,
 * each further pass reduces the previous results into one per block, until
 * one block is left; that last pass writes the caller's output. Everything
 * stays on the device, in a fixed order.
 *
 * Scratch holds two ping-pong arrays: A for the results of passes 1, 3, 5...
 * and B for passes 2, 4... (every pass's results fit in the array of the pass
 * two before it, since each pass shrinks its input).
 */
#include "cuda_check.cuh"
#include "reduce.cuh"

namespace {

constexpr int kMaxPasses = 16;

bool kernel_ok(int kernel) {
  return kernel == IMGSTAT_KERNEL_FAST ||
         (kernel >= IMGSTAT_KERNEL_LADDER_MIN &&
          kernel <= IMGSTAT_KERNEL_LADDER_MAX);
}

bool block_ok(int block) {
  return block >= IMGSTAT_LADDER_BLOCK_MIN &&
         block <= IMGSTAT_LADDER_BLOCK_MAX && (block & (block - 1)) == 0;
}

cudaError_t sm_count(int *out) {
  int dev = 0;
  cudaError_t e = cudaGetDevice(&dev);
  if (e != cudaSuccess)
    return e;
  return cudaDeviceGetAttribute(out, cudaDevAttrMultiProcessorCount, dev);
}

/* The plan: grid of every pass, and the scratch it needs. */
struct Plan {
  int passes = 0;
  unsigned grid[kMaxPasses] = {};
  uint64_t results[kMaxPasses] = {}; /* per channel */
  size_t bytes_a = 0, bytes_b = 0;
};

/* grid_of(pass, items) gives the blocks per channel of a pass over `items`;
 * first_results: the results per channel of pass 1 when they are not one
 * per block (f32: one per chunk), else 0. */
template <typename GridOf>
cudaError_t make_plan(uint64_t n, uint32_t channels, size_t result_bytes,
                      GridOf grid_of, uint64_t first_results, Plan *plan) {
  uint64_t items = n;
  uint64_t max_a = 0, max_b = 0;
  for (int pass = 0;; ++pass) {
    if (pass == kMaxPasses)
      return cudaErrorInvalidValue;
    unsigned g = grid_of(pass, items);
    if (g == 0)
      return cudaErrorInvalidValue;
    uint64_t results = pass == 0 && first_results ? first_results : g;
    plan->grid[pass] = g;
    plan->results[pass] = results;
    plan->passes = pass + 1;
    if (results == 1)
      break;
    if (pass % 2 == 0)
      max_a = max_a > results ? max_a : results;
    else
      max_b = max_b > results ? max_b : results;
    if (pass > 0 && results >= items)
      return cudaErrorInvalidValue; /* would never finish */
    items = results;
  }
  plan->bytes_a = ist_align256((size_t)(max_a * channels * result_bytes));
  plan->bytes_b = ist_align256((size_t)(max_b * channels * result_bytes));
  return cudaSuccess;
}

/* Runs the plan: first(pass) launches pass 1, later(pass) the others. */
template <typename First, typename Later>
cudaError_t run_plan(const Plan &plan, const void *d_in, uint64_t n,
                     uint64_t in_stride, uint32_t channels,
                     uint64_t first_index, void *d_scratch, size_t result_bytes,
                     const ist_pass &shift, void *d_out, First first,
                     Later later) {
  unsigned char *a = static_cast<unsigned char *>(d_scratch);
  unsigned char *b = a + plan.bytes_a;
  ist_pass p = shift; /* k, k_given, add_k */
  p.planes = d_in;
  p.plane_stride = in_stride;
  p.plane_n = n;
  p.in = d_in;
  p.n = n;
  p.in_stride = in_stride;
  p.channels = channels;
  p.first_index = first_index;
  for (int pass = 0; pass < plan.passes; ++pass) {
    bool last = pass == plan.passes - 1;
    p.last = last;
    p.grid = plan.grid[pass];
    p.out = last ? d_out : (pass % 2 == 0 ? (void *)a : (void *)b);
    p.out_stride = last ? 1 : plan.results[pass];
    cudaError_t e = pass == 0 ? first(&p) : later(&p);
    if (e != cudaSuccess)
      return e;
    p.in = p.out;
    p.n = plan.results[pass];
    p.in_stride = plan.results[pass];
    p.first_index = 0;
  }
  (void)result_bytes;
  return cudaSuccess;
}

/*
 * The common frame of the reductions: checks, the plan (the fast kernel's
 * first pass sized by bytes, then folds; the ladder's kernel on every pass;
 * f32: the canonical order's pass 1, one result per chunk, then folds),
 * the scratch query, then the passes. first / later launch pass 1 / the
 * others. align: the alignment d_in must have (1: any).
 */
template <typename First, typename Later>
cudaError_t reduce(int kernel, int block_size, bool f32, const void *d_in,
                   uint64_t n, uint64_t in_stride, size_t item_bytes,
                   size_t align, uint32_t channels, uint64_t first_index,
                   size_t result_bytes, void *d_scratch, size_t *scratch_bytes,
                   const ist_pass &shift, void *d_out, First first, Later later,
                   cudaStream_t stream) {
  if (!kernel_ok(kernel) || !scratch_bytes || channels == 0 || channels > 65535)
    return cudaErrorInvalidValue;
  int block = block_size ? block_size : IMGSTAT_LADDER_BLOCK_DEFAULT;
  if (kernel != IMGSTAT_KERNEL_FAST && !block_ok(block))
    return cudaErrorInvalidValue;
  int sms = 0;
  cudaError_t e = sm_count(&sms);
  if (e != cudaSuccess)
    return e;
  Plan plan;
  auto grid_of = [&](int pass, uint64_t items) -> unsigned {
    if (f32)
      return pass == 0
                 ? ist_f32_grid(items, channels, sms, shift.sample_stride <= 1)
                 : ist_fold_grid(items);
    if (kernel == IMGSTAT_KERNEL_FAST)
      return pass == 0 ? ist_fast_grid(items * item_bytes, channels, sms)
                       : ist_fold_grid(items);
    return ist_ladder_grid(kernel, block, items, sms);
  };
  e = make_plan(n, channels, result_bytes, grid_of, f32 ? ist_f32_chunks(n) : 0,
                &plan);
  if (e != cudaSuccess)
    return e;
  /* f32 planes whose K is not given: theirs, picked before pass 1 */
  const bool pick_k = f32 && !shift.k_given;
  const size_t bytes_k = pick_k ? ist_align256(channels * sizeof(double)) : 0;
  size_t need = plan.bytes_a + plan.bytes_b + bytes_k;
  if (!d_scratch) {
    *scratch_bytes = need ? need : 256;
    return cudaSuccess;
  }
  if (*scratch_bytes < need || !d_out || (n > 0 && !d_in))
    return cudaErrorInvalidValue;
  if (n > 0 && ((uintptr_t)d_in % (uintptr_t)align) != 0)
    return cudaErrorMisalignedAddress;
  auto first_pass = [&](const ist_pass *p) { return first(block, p); };
  auto later_pass = [&](const ist_pass *p) { return later(block, p); };
  ist_pass with_k = shift;
  if (pick_k) {
    double *d_k = reinterpret_cast<double *>(
        static_cast<unsigned char *>(d_scratch) + plan.bytes_a + plan.bytes_b);
    ist_pass q = shift;
    q.planes = d_in;
    q.plane_stride = in_stride;
    q.plane_n = n;
    q.channels = channels;
    e = ist_f32_shifts(&q, d_k, stream);
    if (e != cudaSuccess)
      return e;
    with_k.k_dev = d_k;
  }
  return run_plan(plan, d_in, n, in_stride, channels, first_index, d_scratch,
                  result_bytes, with_k, d_out, first_pass, later_pass);
}

} // namespace

cudaError_t ist_reduce_sum_i32(int kernel, const int *d_in, uint64_t n,
                               int block_size, void *d_scratch,
                               size_t *scratch_bytes, long long *d_out,
                               cudaStream_t stream) {
  auto first = [&](int block, const ist_pass *p) {
    return kernel == IMGSTAT_KERNEL_FAST
               ? ist_fast_sum_i32(p, stream)
               : ist_ladder_sum_i32(kernel, block, p, stream);
  };
  auto later = [&](int block, const ist_pass *p) {
    return kernel == IMGSTAT_KERNEL_FAST
               ? ist_fold_sum_i64(p, stream)
               : ist_ladder_sum_i64(kernel, block, p, stream);
  };
  const ist_pass no_shift{};
  return reduce(kernel, block_size, false, d_in, n, n, 4, 1, 1, 0,
                sizeof(long long), d_scratch, scratch_bytes, no_shift, d_out,
                first, later, stream);
}

namespace {

/* ist_reduce_stats with the f32 shift's origin (shift.k, k_given, add_k). */
cudaError_t reduce_stats(int kernel, int block_size, const void *d_planes,
                         uint64_t plane_stride, imgstat_sample sample,
                         uint64_t n, uint32_t channels, uint64_t first_index,
                         void *d_scratch, size_t *scratch_bytes,
                         const ist_pass &shift, imgstat_partial *d_out,
                         cudaStream_t stream) {
  if (sample != IMGSTAT_U8 && sample != IMGSTAT_U16 && sample != IMGSTAT_F32)
    return cudaErrorInvalidValue;
  /* f32: the canonical order whatever the kernel (the ladder is for
   * integer samples and the benchmark's sums). */
  const bool f32 = sample == IMGSTAT_F32;
  auto first = [&](int block, const ist_pass *p) {
    return kernel == IMGSTAT_KERNEL_FAST || f32
               ? ist_fast_stats(sample, p, stream)
               : ist_ladder_stats(kernel, block, sample, 0, p, stream);
  };
  auto later = [&](int block, const ist_pass *p) {
    return kernel == IMGSTAT_KERNEL_FAST || f32
               ? ist_fold_stats(sample, p, stream)
               : ist_ladder_stats(kernel, block, sample, 1, p, stream);
  };
  return reduce(kernel, block_size, f32, d_planes, n, plane_stride,
                (size_t)sample, (size_t)sample, channels, first_index,
                sizeof(imgstat_partial), d_scratch, scratch_bytes, shift, d_out,
                first, later, stream);
}

} // namespace

cudaError_t ist_reduce_stats(int kernel, int block_size, const void *d_planes,
                             imgstat_sample sample, uint64_t n,
                             uint32_t channels, uint64_t first_index,
                             void *d_scratch, size_t *scratch_bytes,
                             imgstat_partial *d_out, cudaStream_t stream) {
  ist_pass shift{};
  shift.add_k = 1; /* K read from each plane, added back */
  return reduce_stats(kernel, block_size, d_planes, n, sample, n, channels,
                      first_index, d_scratch, scratch_bytes, shift, d_out,
                      stream);
}

cudaError_t ist_reduce_stats_pitched(
    int kernel, const void *d_planes, uint64_t plane_stride,
    imgstat_sample sample, uint64_t n, uint32_t channels, void *d_scratch,
    size_t *scratch_bytes, imgstat_partial *d_out, cudaStream_t stream) {
  if (channels > 1 && plane_stride < n)
    return cudaErrorInvalidValue;
  ist_pass shift{};
  shift.add_k = 1;
  return reduce_stats(kernel, 0, d_planes, plane_stride, sample, n, channels, 0,
                      d_scratch, scratch_bytes, shift, d_out, stream);
}

bool ist_hwc_kernel_fits(const void *d_data, imgstat_sample sample,
                         uint32_t channels) {
  if (channels < 2 || channels > 4)
    return false;
  if (sample == IMGSTAT_F32)
    return (uintptr_t)d_data % 4 == 0;
  return (sample == IMGSTAT_U8 || sample == IMGSTAT_U16) &&
         (uintptr_t)d_data % 16 == 0;
}

cudaError_t ist_reduce_stats_hwc(const void *d_data, imgstat_sample sample,
                                 uint64_t npix, uint32_t channels,
                                 void *d_scratch, size_t *scratch_bytes,
                                 imgstat_partial *d_out, cudaStream_t stream) {
  if (!scratch_bytes ||
      (d_scratch && !ist_hwc_kernel_fits(d_data, sample, channels)))
    return cudaErrorInvalidValue;
  if (sample == IMGSTAT_F32) { /* channel c: the plane from sample c */
    if (channels < 2 || channels > 4)
      return cudaErrorInvalidValue;
    ist_pass shift{};
    shift.add_k = 1;
    shift.sample_stride = channels;
    return reduce_stats(IMGSTAT_KERNEL_FAST, 0, d_data, 1, sample, npix,
                        channels, 0, d_scratch, scratch_bytes, shift, d_out,
                        stream);
  }
  int sms = 0;
  cudaError_t e = sm_count(&sms);
  if (e != cudaSuccess)
    return e;
  const uint64_t bytes = npix * channels * (uint64_t)sample;
  Plan plan;
  auto grid_of = [&](int pass, uint64_t items) -> unsigned {
    return pass == 0 ? ist_hwc_grid(sample, bytes, channels, sms)
                     : ist_fold_grid(items);
  };
  e = make_plan(npix, channels, sizeof(imgstat_partial), grid_of, 0, &plan);
  if (e != cudaSuccess)
    return e;
  if (!d_scratch) {
    size_t need = plan.bytes_a + plan.bytes_b;
    *scratch_bytes = need ? need : 256;
    return cudaSuccess;
  }
  if (*scratch_bytes < plan.bytes_a + plan.bytes_b || !d_out ||
      (npix > 0 && !d_data))
    return cudaErrorInvalidValue;
  const ist_pass no_shift{};
  return run_plan(
      plan, d_data, npix, 0, channels, 0, d_scratch, sizeof(imgstat_partial),
      no_shift, d_out,
      [&](const ist_pass *p) { return ist_hwc_stats(sample, p, stream); },
      [&](const ist_pass *p) { return ist_fold_stats(sample, p, stream); });
}

cudaError_t ist_reduce_stats_f32_range(const float *d_plane, uint64_t n,
                                       uint64_t first_index, double k,
                                       void *d_scratch, size_t *scratch_bytes,
                                       imgstat_partial *d_out,
                                       cudaStream_t stream) {
  ist_pass shift{};
  shift.k = k;
  shift.k_given = 1; /* the whole plane's K; the caller adds it back */
  return reduce_stats(IMGSTAT_KERNEL_FAST, 0, d_plane, n, IMGSTAT_F32, n, 1,
                      first_index, d_scratch, scratch_bytes, shift, d_out,
                      stream);
}
