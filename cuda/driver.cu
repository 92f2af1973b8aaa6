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
  size_t bytes_a = 0, bytes_b = 0;
};

/* grid_of(pass, items) gives the blocks per channel of a pass over `items`. */
template <typename GridOf>
cudaError_t make_plan(uint64_t n, uint32_t channels, size_t result_bytes,
                      GridOf grid_of, Plan *plan) {
  uint64_t items = n;
  uint64_t max_a = 0, max_b = 0;
  for (int pass = 0;; ++pass) {
    if (pass == kMaxPasses)
      return cudaErrorInvalidValue;
    unsigned g = grid_of(pass, items);
    if (g == 0)
      return cudaErrorInvalidValue;
    plan->grid[pass] = g;
    plan->passes = pass + 1;
    if (g == 1)
      break;
    if (pass % 2 == 0)
      max_a = max_a > g ? max_a : g;
    else
      max_b = max_b > g ? max_b : g;
    if (pass > 0 && g >= items)
      return cudaErrorInvalidValue; /* would never finish */
    items = g;
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
                     void *d_out, First first, Later later) {
  unsigned char *a = static_cast<unsigned char *>(d_scratch);
  unsigned char *b = a + plan.bytes_a;
  ist_pass p;
  p.in = d_in;
  p.n = n;
  p.in_stride = in_stride;
  p.channels = channels;
  p.first_index = first_index;
  p.planes = d_in;
  p.plane_stride = in_stride;
  p.plane_n = n;
  for (int pass = 0; pass < plan.passes; ++pass) {
    bool last = pass == plan.passes - 1;
    p.last = last;
    p.grid = plan.grid[pass];
    p.out = last ? d_out : (pass % 2 == 0 ? (void *)a : (void *)b);
    p.out_stride = last ? 1 : p.grid;
    cudaError_t e = pass == 0 ? first(&p) : later(&p);
    if (e != cudaSuccess)
      return e;
    p.in = p.out;
    p.n = p.grid;
    p.in_stride = p.grid;
    p.first_index = 0;
  }
  (void)result_bytes;
  return cudaSuccess;
}

/*
 * The common frame of the reductions: checks, the plan (the fast kernel's
 * first pass sized by bytes, then folds; the ladder's kernel on every pass),
 * the scratch query, then the passes. first / later launch pass 1 / the
 * others. align: the alignment d_in must have (1: any).
 */
template <typename First, typename Later>
cudaError_t reduce(int kernel, int block_size, const void *d_in, uint64_t n,
                   size_t item_bytes, size_t align, uint32_t channels,
                   uint64_t first_index, size_t result_bytes, void *d_scratch,
                   size_t *scratch_bytes, void *d_out, First first,
                   Later later) {
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
    if (kernel == IMGSTAT_KERNEL_FAST)
      return pass == 0 ? ist_fast_grid(items * item_bytes, channels, sms)
                       : ist_fold_grid(items);
    return ist_ladder_grid(kernel, block, items, sms);
  };
  e = make_plan(n, channels, result_bytes, grid_of, &plan);
  if (e != cudaSuccess)
    return e;
  size_t need = plan.bytes_a + plan.bytes_b;
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
  return run_plan(plan, d_in, n, n, channels, first_index, d_scratch,
                  result_bytes, d_out, first_pass, later_pass);
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
  return reduce(kernel, block_size, d_in, n, 4, 1, 1, 0, sizeof(long long),
                d_scratch, scratch_bytes, d_out, first, later);
}

cudaError_t ist_reduce_stats(int kernel, int block_size, const void *d_planes,
                             imgstat_sample sample, uint64_t n,
                             uint32_t channels, uint64_t first_index,
                             void *d_scratch, size_t *scratch_bytes,
                             imgstat_partial *d_out, cudaStream_t stream) {
  if (sample != IMGSTAT_U8 && sample != IMGSTAT_U16 && sample != IMGSTAT_F32)
    return cudaErrorInvalidValue;
  auto first = [&](int block, const ist_pass *p) {
    return kernel == IMGSTAT_KERNEL_FAST
               ? ist_fast_stats(sample, p, stream)
               : ist_ladder_stats(kernel, block, sample, 0, p, stream);
  };
  auto later = [&](int block, const ist_pass *p) {
    return kernel == IMGSTAT_KERNEL_FAST
               ? ist_fold_stats(sample, p, stream)
               : ist_ladder_stats(kernel, block, sample, 1, p, stream);
  };
  return reduce(kernel, block_size, d_planes, n, (size_t)sample, (size_t)sample,
                channels, first_index, sizeof(imgstat_partial), d_scratch,
                scratch_bytes, d_out, first, later);
}
