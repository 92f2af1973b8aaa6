/*
 * Histograms and percentiles on the device.
 *
 * Counting is integer work, so any order of atomic additions gives the same
 * counts: the GPU histogram equals the CPU's exactly, by construction.
 *  - u8: each block keeps private bins in shared memory (one copy per warp,
 *    so warps do not contend with each other), reads 16 bytes per load, and
 *    adds its bins to the global 64-bit counters once at the end.
 *  - u16 and f32: 65536 (or more) 32-bit bins do not fit a block's shared
 *    memory, so samples go straight to the global counters, but a warp first
 *    groups equal bins (__match_any_sync) and sends one atomic per distinct
 *    bin: a flat region costs one atomic per warp, not 32.
 * Percentiles: CUB's DeviceScan::InclusiveSum of the counts, then one thread
 * per requested rank binary-searches the cumulative counts; the host turns
 * (bin, count before, count in bin) into the value with the CPU's own
 * imgstat_percentile_value.
 */
#include "hist_range.h"
#include "norm_internal.cuh"
#include "reduce.cuh"
#include "warp.cuh"

#include <cub/device/device_scan.cuh>

#include <math.h>
#include <stdlib.h>
#include <string.h>

namespace ist_norm_gpu {

namespace {

constexpr int kHistBlock = 256;
constexpr int kHistWarps = kHistBlock / 32;

/* u8, a block's part: its warps' private bins in shared memory, zeroed;
 * thread t of `threads` counts samples t, t + threads, ... of in (16 at a
 * time from a 16-byte boundary, byte by byte otherwise); then the block adds
 * its bins to the 64-bit counters at bins once. Shared by the one-plane and
 * the batched kernels, so that both count alike. */
__device__ __forceinline__ void
hist_u8_block(const uint8_t *__restrict__ in, uint64_t n, uint64_t t,
              uint64_t threads, unsigned long long *__restrict__ bins) {
  __shared__ unsigned int s_bins[kHistWarps][256];
  for (int i = threadIdx.x; i < kHistWarps * 256; i += blockDim.x)
    (&s_bins[0][0])[i] = 0;
  __syncthreads();
  unsigned int *mine = s_bins[threadIdx.x / 32];
  const uint64_t nvec = ((uintptr_t)in & 15) ? 0 : n / 16;
  const uint4 *vin = reinterpret_cast<const uint4 *>(in);
  for (uint64_t v = t; v < nvec; v += threads) {
    uint4 q = __ldg(vin + v);
    unsigned int w[4] = {q.x, q.y, q.z, q.w};
#pragma unroll
    for (int k = 0; k < 4; ++k) {
      atomicAdd(&mine[w[k] & 0xff], 1u);
      atomicAdd(&mine[(w[k] >> 8) & 0xff], 1u);
      atomicAdd(&mine[(w[k] >> 16) & 0xff], 1u);
      atomicAdd(&mine[w[k] >> 24], 1u);
    }
  }
  for (uint64_t i = nvec * 16 + t; i < n; i += threads)
    atomicAdd(&mine[in[i]], 1u);
  __syncthreads();
  /* A block sees at most its share of n samples: 32-bit shared counters
   * cannot overflow below 2^32 samples per block, which the grid sizes
   * guarantee (hist_grid). */
  for (int b = threadIdx.x; b < 256; b += blockDim.x) {
    unsigned long long total = 0;
#pragma unroll
    for (int w = 0; w < kHistWarps; ++w)
      total += s_bins[w][b];
    if (total)
      atomicAdd(&bins[b], total);
  }
}

/* u8: per-warp shared bins, 16 samples per load. */
__global__ void hist_u8_kernel(const uint8_t *__restrict__ in, uint64_t n,
                               unsigned long long *__restrict__ bins) {
  hist_u8_block(in, n, ist_grid_thread(), ist_grid_threads(), bins);
}

/* u8, batched: the planes of many images in one launch. Segment k (one
 * plane) has its own nblocks blocks and its own 256 counters at bins +
 * 256 k; its blocks count it as hist_u8_kernel's grid counts one plane.
 * Counts are integers: any split of a plane among blocks gives the same. */
__global__ void hist_u8_segments_kernel(const ist_segment *__restrict__ seg,
                                        int nseg,
                                        unsigned long long *__restrict__ bins) {
  const int k = ist_segment_of(seg, nseg, blockIdx.x);
  const ist_segment S = seg[k];
  const uint64_t local = blockIdx.x - S.first_block;
  hist_u8_block(static_cast<const uint8_t *>(S.plane), S.n,
                local * blockDim.x + threadIdx.x, S.nblocks * blockDim.x,
                bins + (size_t)256 * k);
}

/* The bin of a float sample: the CPU's expression (histogram.c), evaluated
 * in double; returns -1 for NaN, -2 for +-Inf. */
__device__ __forceinline__ int float_bin(float x, double lo, double scale,
                                         uint32_t last) {
  if (isnan(x))
    return -1;
  if (isinf(x))
    return -2;
  double t = ((double)x - lo) * scale;
  return (int)(t <= 0.0 ? 0u : (t >= (double)last ? last : (uint32_t)t));
}

/* u16 / f32: warp-aggregated global atomics. The loop bound is the same for
 * every lane of a warp (it depends on the block only), so the whole warp
 * reaches each __match_any_sync. */
template <typename T>
__global__ void hist_wide_kernel(const T *__restrict__ in, uint64_t n,
                                 uint32_t bins, double lo, double scale,
                                 unsigned long long *__restrict__ d_bins,
                                 unsigned long long *__restrict__ special) {
  __shared__ unsigned long long s_special[2];
  if (threadIdx.x < 2)
    s_special[threadIdx.x] = 0;
  __syncthreads();
  const uint64_t stride = ist_grid_threads();
  for (uint64_t base = (uint64_t)blockIdx.x * blockDim.x; base < n;
       base += stride) {
    uint64_t i = base + threadIdx.x;
    int key = -3; /* no sample */
    if (i < n) {
      if (sizeof(T) == 1)
        key = (int)(uint32_t)__ldg(reinterpret_cast<const uint8_t *>(in) + i);
      else if (sizeof(T) == 2)
        key = (int)(uint32_t)__ldg(reinterpret_cast<const uint16_t *>(in) + i);
      else
        key = float_bin(__ldg(reinterpret_cast<const float *>(in) + i), lo,
                        scale, bins - 1);
    }
    const unsigned long long cnt = ist_warp_group_count(key);
    if (cnt) {
      if (key >= 0)
        atomicAdd(&d_bins[key], cnt);
      else if (key == -1)
        atomicAdd(&s_special[0], cnt);
      else if (key == -2)
        atomicAdd(&s_special[1], cnt);
    }
  }
  __syncthreads();
  if (special && threadIdx.x < 2 && s_special[threadIdx.x])
    atomicAdd(&special[threadIdx.x], s_special[threadIdx.x]);
}

/* One thread per rank: the first bin whose cumulative count reaches it. */
__global__ void find_ranks_kernel(const unsigned long long *__restrict__ cum,
                                  uint32_t bins,
                                  const unsigned long long *__restrict__ ranks,
                                  int nr, RankHit *__restrict__ hits) {
  int r = blockIdx.x * blockDim.x + threadIdx.x;
  if (r >= nr)
    return;
  unsigned long long k = ranks[r];
  uint32_t lo = 0, hi = bins - 1;
  while (lo < hi) {
    uint32_t mid = lo + (hi - lo) / 2;
    if (cum[mid] >= k)
      hi = mid;
    else
      lo = mid + 1;
  }
  RankHit h;
  h.bin = lo;
  h.pad = 0;
  h.cum_before = lo ? cum[lo - 1] : 0ull;
  h.count = cum[lo] - h.cum_before;
  hits[r] = h;
}

/* Blocks for a plane of n samples, `per_block` samples a block wanted:
 * enough to fill the device several times over (at most 8 a
 * multiprocessor), and enough that no block counts 2^31 samples into its
 * 32-bit shared bins. */
uint64_t hist_grid(uint64_t n, uint64_t per_block, int sm_count) {
  uint64_t want = (n + per_block - 1) / per_block;
  uint64_t cap = (uint64_t)(sm_count > 0 ? sm_count : 1) * 8;
  uint64_t min_blocks = n / (UINT64_C(1) << 31) + 1;
  uint64_t grid = want < cap ? want : cap;
  if (grid < min_blocks)
    grid = min_blocks;
  return grid < 1 ? 1 : grid;
}

} // namespace

uint64_t hist_u8_segment_blocks(uint64_t n, int sm_count) {
  /* a batch fills the device with its many planes: 64 Ki samples a block
   * (16 vector loads a thread) keep each block's zeroing and flush of its
   * bins small beside its counting */
  return hist_grid(n, (uint64_t)kHistBlock * 16 * 16, sm_count);
}

cudaError_t hist_u8_segments_launch(const ist_segment *d_seg, int nseg,
                                    uint64_t total_blocks,
                                    unsigned long long *d_bins,
                                    cudaStream_t stream) {
  if (nseg <= 0 || total_blocks == 0 || total_blocks > 0x7fffffffu)
    return cudaErrorInvalidValue;
  cudaError_t e = ist_cuda_launch_gate();
  if (e != cudaSuccess)
    return e;
  hist_u8_segments_kernel<<<(unsigned)total_blocks, kHistBlock, 0, stream>>>(
      d_seg, nseg, d_bins);
  return cudaGetLastError();
}

cudaError_t hist_launch(const void *d_plane, imgstat_sample sample, uint64_t n,
                        uint32_t bins, double lo, double scale,
                        unsigned long long *d_bins,
                        unsigned long long *d_special, int sm_count,
                        cudaStream_t stream) {
  if (n == 0)
    return cudaSuccess;
  uint64_t grid = hist_grid(n, kHistBlock * 16, sm_count);
  if (sample != IMGSTAT_U8 && sample != IMGSTAT_U16 && sample != IMGSTAT_F32)
    return cudaErrorInvalidValue;
  cudaError_t e = ist_cuda_launch_gate();
  if (e != cudaSuccess)
    return e;
  switch (sample) {
  case IMGSTAT_U8:
    hist_u8_kernel<<<(unsigned)grid, kHistBlock, 0, stream>>>(
        static_cast<const uint8_t *>(d_plane), n, d_bins);
    break;
  case IMGSTAT_U16:
    hist_wide_kernel<uint16_t><<<(unsigned)grid, kHistBlock, 0, stream>>>(
        static_cast<const uint16_t *>(d_plane), n, bins, 0.0, 0.0, d_bins,
        nullptr);
    break;
  case IMGSTAT_F32:
    hist_wide_kernel<float><<<(unsigned)grid, kHistBlock, 0, stream>>>(
        static_cast<const float *>(d_plane), n, bins, lo, scale, d_bins,
        d_special);
    break;
  default:
    return cudaErrorInvalidValue;
  }
  return cudaGetLastError();
}

cudaError_t hist_launch_u8_atomics(const uint8_t *d_plane, uint64_t n,
                                   unsigned long long *d_bins, int sm_count,
                                   cudaStream_t stream) {
  if (n == 0)
    return cudaSuccess;
  uint64_t want = (n + kHistBlock - 1) / kHistBlock;
  uint64_t cap = (uint64_t)sm_count * 8;
  unsigned grid = (unsigned)(want < cap ? want : cap);
  cudaError_t e = ist_cuda_launch_gate();
  if (e != cudaSuccess)
    return e;
  hist_wide_kernel<uint8_t><<<grid, kHistBlock, 0, stream>>>(
      d_plane, n, 256, 0.0, 0.0, d_bins, nullptr);
  return cudaGetLastError();
}

static size_t cub_scan_bytes(uint32_t bins) {
  size_t bytes = 0;
  (void)cub::DeviceScan::InclusiveSum(
      nullptr, bytes, static_cast<const unsigned long long *>(nullptr),
      static_cast<unsigned long long *>(nullptr), (int)bins);
  return bytes;
}

size_t hist_ranks_scratch(uint32_t bins) {
  return ist_align256(cub_scan_bytes(bins)) +
         ist_align256((size_t)bins * sizeof(unsigned long long));
}

cudaError_t hist_ranks(const unsigned long long *d_bins, uint32_t bins,
                       const unsigned long long *d_ranks, int nr,
                       RankHit *d_hits, void *d_scratch, cudaStream_t stream) {
  size_t temp = cub_scan_bytes(bins);
  unsigned char *base = static_cast<unsigned char *>(d_scratch);
  unsigned long long *d_cum =
      reinterpret_cast<unsigned long long *>(base + ist_align256(temp));
  cudaError_t e = ist_cuda_launch_gate();
  if (e != cudaSuccess)
    return e;
  e = cub::DeviceScan::InclusiveSum(base, temp, d_bins, d_cum, (int)bins,
                                    stream);
  if (e != cudaSuccess)
    return e;
  if (nr > 0) {
    if ((e = ist_cuda_launch_gate()) != cudaSuccess)
      return e;
    find_ranks_kernel<<<(nr + 63) / 64, 64, 0, stream>>>(d_cum, bins, d_ranks,
                                                         nr, d_hits);
    e = cudaGetLastError();
  }
  return e;
}

/* The slot's hist_small buffer: NaN/Inf counts, ranks and their hits. */
constexpr size_t kSpecialAt = 0, kRanksAt = 256, kHitsAt = 512;
constexpr int kMaxRanks = 32;
constexpr size_t kSmallBytes = kHitsAt + kMaxRanks * sizeof(RankHit);

imgstat_status hist_percentiles(ist_slot *s, int sm_count,
                                const void *const *d_planes, int nplanes,
                                uint64_t n, imgstat_histogram *h,
                                int want_counts, const double *p, int np,
                                double *values, int *has_values,
                                imgstat_error *err) {
  *has_values = 0;
  if (np > IMGSTAT_MAX_PERCENTILES + 2 || np > kMaxRanks)
    return imgstat_error_set(err, IMGSTAT_ERR_ARG, "too many percentiles");
  const size_t bin_bytes = (size_t)h->bins * sizeof(unsigned long long);
  IST_CUDA_TRY(s->hist_bins.reserve(bin_bytes), "cudaMalloc (histogram)");
  IST_CUDA_TRY(s->hist_small.reserve(kSmallBytes), "cudaMalloc (histogram)");
  IST_CUDA_TRY(s->hist_scan.reserve(hist_ranks_scratch(h->bins)),
               "cudaMalloc (histogram)");
  unsigned long long *d_bins = s->hist_bins.as<unsigned long long>();
  unsigned long long *d_special =
      s->hist_small.as<unsigned long long>(kSpecialAt);
  unsigned long long *d_ranks = s->hist_small.as<unsigned long long>(kRanksAt);
  RankHit *d_hits = s->hist_small.as<RankHit>(kHitsAt);
  IST_CUDA_TRY(cudaMemsetAsync(d_bins, 0, bin_bytes, s->stream),
               "cudaMemset (histogram)");
  IST_CUDA_TRY(
      cudaMemsetAsync(d_special, 0, 2 * sizeof(unsigned long long), s->stream),
      "cudaMemset (histogram)");
  /* The CPU's scale, the CPU's expression (histogram.c, hist_f32). */
  double scale = h->hi > h->lo ? (double)h->bins / (h->hi - h->lo) : 0.0;
  for (int k = 0; k < nplanes; ++k)
    IST_CUDA_TRY(hist_launch(d_planes[k], h->sample, n, h->bins, h->lo, scale,
                             d_bins, d_special, sm_count, s->stream),
                 "histogram kernel");
  unsigned long long special[2] = {0, 0};
  IST_CUDA_TRY(cudaMemcpyAsync(special, d_special, sizeof special,
                               cudaMemcpyDeviceToHost, s->stream),
               "histogram kernel");
  if (want_counts)
    IST_CUDA_TRY(cudaMemcpyAsync(h->counts, d_bins, bin_bytes,
                                 cudaMemcpyDeviceToHost, s->stream),
                 "cudaMemcpy (histogram)");
  IST_CUDA_TRY(cudaStreamSynchronize(s->stream), "histogram kernel");
  uint64_t all = n * (uint64_t)nplanes;
  h->nan_count = special[0];
  h->inf_count = special[1];
  h->total = all - special[0] - special[1];
  if (np <= 0 || h->total == 0)
    return IMGSTAT_OK;
  unsigned long long ranks[kMaxRanks];
  for (int i = 0; i < np; ++i)
    ranks[i] = imgstat_percentile_rank(h->total, p[i]);
  RankHit hits[kMaxRanks];
  IST_CUDA_TRY(cudaMemcpyAsync(d_ranks, ranks, np * sizeof *ranks,
                               cudaMemcpyHostToDevice, s->stream),
               "percentile scan");
  IST_CUDA_TRY(hist_ranks(d_bins, h->bins, d_ranks, np, d_hits, s->hist_scan.p,
                          s->stream),
               "percentile scan");
  IST_CUDA_TRY(cudaMemcpyAsync(hits, d_hits, np * sizeof *hits,
                               cudaMemcpyDeviceToHost, s->stream),
               "percentile scan");
  IST_CUDA_TRY(cudaStreamSynchronize(s->stream), "percentile scan");
  for (int i = 0; i < np; ++i)
    values[i] = imgstat_percentile_value(h, ranks[i], hits[i].bin,
                                         hits[i].cum_before, hits[i].count);
  *has_values = 1;
  return IMGSTAT_OK;
}

} // namespace ist_norm_gpu

using namespace ist_norm_gpu;

namespace {

imgstat_status check_request(int np, const double *p, const double *values,
                             imgstat_error *err) {
  if (np < 0 || np > IMGSTAT_MAX_PERCENTILES + 2 || (np && (!p || !values)))
    return imgstat_error_set(err, IMGSTAT_ERR_ARG, "too many percentiles");
  return IMGSTAT_OK;
}

/* The histogram of channel c of a device image (checked by the caller). */
imgstat_status image_histogram(imgstat_gpu *gpu, imgstat_gpu_image *d, int c,
                               const imgstat_hist_options *opts,
                               const double *p, int np, double *values,
                               imgstat_histogram *h, imgstat_error *err) {
  const uint64_t n = (uint64_t)d->width * d->height;
  double lo, hi;
  uint32_t bins;
  if (ist_hist_range(opts, d->sample, &bins, &lo, &hi)) {
    /* the finite range by the statistics reduction, as exact as the CPU's
     * scan (min and max are selections, not sums) */
    imgstat_partial part;
    imgstat_status st = ist_stats_planes(d->slot, &d->planes[c], 1, d->sample,
                                         n, IMGSTAT_KERNEL_FAST, &part, err);
    if (st != IMGSTAT_OK)
      return st;
    if (part.count > 0) {
      lo = part.min;
      hi = part.max;
    }
  }
  imgstat_status st = imgstat_histogram_alloc(h, d->sample, bins, lo, hi, err);
  if (st != IMGSTAT_OK)
    return st;
  int has = 0;
  st = hist_percentiles(d->slot, gpu->sm_count, &d->planes[c], 1, n, h, 1, p,
                        np, values, &has, err);
  if (st != IMGSTAT_OK)
    imgstat_histogram_free(h);
  return st;
}

} // namespace

extern "C" {

imgstat_status imgstat_gpu_histogram(imgstat_gpu *gpu, const imgstat_image *img,
                                     int c, const imgstat_hist_options *opts,
                                     const double *p, int np, double *values,
                                     imgstat_histogram *h, imgstat_error *err) {
  if (h)
    memset(h, 0, sizeof *h);
  if (!gpu || !img || !h || c < 0 || c >= img->channels || !img->planes[c])
    return imgstat_error_set(err, IMGSTAT_ERR_ARG, "no image or channel");
  imgstat_status st = check_request(np, p, values, err);
  if (st != IMGSTAT_OK)
    return st;
  /* channel c alone goes up */
  imgstat_image one = *img;
  one.channels = 1;
  one.planes[0] = img->planes[c];
  if ((st = ist_gpu_check_image(&one, err)) != IMGSTAT_OK)
    return st;
  IST_CUDA_TRY(ist_gpu_enter(gpu), "cudaSetDevice");
  imgstat_gpu_image *d = nullptr;
  if ((st = ist_gpu_image_upload(gpu, &one, &d, err)) != IMGSTAT_OK)
    return st;
  st = image_histogram(gpu, d, 0, opts, p, np, values, h, err);
  imgstat_gpu_image_release(gpu, d);
  return st;
}

imgstat_status imgstat_gpu_image_histogram(imgstat_gpu *gpu,
                                           imgstat_gpu_image *dimg, int c,
                                           const imgstat_hist_options *opts,
                                           const double *p, int np,
                                           double *values, imgstat_histogram *h,
                                           imgstat_error *err) {
  if (h)
    memset(h, 0, sizeof *h);
  imgstat_status st = ist_gpu_image_check(gpu, dimg, err);
  if (st != IMGSTAT_OK)
    return st;
  if (!h || c < 0 || c >= dimg->channels)
    return imgstat_error_set(err, IMGSTAT_ERR_ARG, "no image or channel");
  if ((st = check_request(np, p, values, err)) != IMGSTAT_OK)
    return st;
  IST_CUDA_TRY(ist_gpu_enter(gpu), "cudaSetDevice");
  dimg->quiet = false;
  if ((st = ist_gpu_image_planes(gpu, dimg, err)) != IMGSTAT_OK)
    return st;
  st = image_histogram(gpu, dimg, c, opts, p, np, values, h, err);
  if (st != IMGSTAT_OK)
    ist_slot_drain(dimg->slot);
  return st;
}

} /* extern "C" */
