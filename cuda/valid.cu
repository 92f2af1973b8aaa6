/*
 * Valid samples on the device (imgstat_gpu_valid_stats, imgstat/cuda.h):
 * the CPU's reduction of a channel's valid samples (src/core/valid.c)
 * done the same way, by one of two paths.
 *
 * Integer samples (8- and 16-bit, int16 as stored): one fused pass
 * (valid_fused). Every figure of an integer partial and every histogram
 * count is independent of the order of the samples (valid_acc.h), so one
 * kernel reads each channel's plane once beside the mask and each pixel's
 * label, and gathers the figures of every region at once: the image under
 * its mask (region 0) and each label (region k + 1), for every channel,
 * with their histograms. A block works on one channel; each thread keeps
 * a run of the image's region and one of the label it is in (handed to the
 * block's accumulators in shared memory when the label changes, the runs
 * of a warp that leave one label added up first), and the block adds its
 * accumulators to the global ones at its end. Histograms go
 * to global 32-bit bins, one atomic per distinct bin of a warp. One upload
 * of the image, the mask and the labels, one launch and one copy back of
 * every region's figures and bins, one synchronization (per group of
 * channels, when the bins of all would exceed kFusedHistBudget). The
 * environment variable IMGSTAT_GPU_VALID_COMPACT (set, any value) keeps
 * integer samples on the compaction path below, to compare the two.
 *
 * Float samples (and integer ones with more labels than the fused
 * accumulators hold): each channel's samples inside the mask that are not
 * its nodata value are compacted in raster order (cub::DeviceSelect::
 * Flagged, which keeps the order) into a plane of their own, with the
 * raster index of each beside it; that plane is reduced by the ordinary
 * statistics of a plane of that many samples (ist_stats_planes), so its
 * partial is the CPU's partial of imgstat_valid_compact's plane to the bit
 * (the float order of docs/float-order.md over that sequence), and the
 * positions of its extrema are mapped back through the indices.
 * A label image's labels go the same way, one label at a time, from one
 * upload of the image and of each pixel's label: the flags of label k are
 * its pixels that are not nodata, in raster order as the CPU's pixel list
 * of label k. With histograms (integer samples on this path) each
 * compacted plane is also binned by the plain histogram kernel
 * (hist_percentiles, histogram.cu): integer counts, so the CPU's
 * imgstat_histogram_compute of that plane to the count.
 */
#include "context.cuh"
#include "norm_internal.cuh"
#include "valid_acc.h"
#include "valid_batch.h"

#include <cub/device/device_select.cuh>
#include <thrust/iterator/counting_iterator.h>

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

namespace {

/* Samples compacted by one call of CUB (its count is an int). */
constexpr uint64_t kValidChunk = (uint64_t)1 << 30;
constexpr int kValidBlock = 256;

/* flags[i] = 1 where sample i is valid: inside the mask (none: every
 * pixel), of label place `want` when labels is not NULL, and not the
 * nodata value, compared in the sample type as the CPU does (NaN equals
 * nothing; -0 equals +0). */
template <typename T>
__global__ void
valid_flags_kernel(const T *plane, const uint8_t *mask, const uint32_t *labels,
                   uint32_t want, uint64_t n, int has, T nodv, uint8_t *flags) {
  const uint64_t step = (uint64_t)gridDim.x * blockDim.x;
  for (uint64_t i = (uint64_t)blockIdx.x * blockDim.x + threadIdx.x; i < n;
       i += step) {
    uint8_t on = mask ? (uint8_t)(mask[i] != 0) : (uint8_t)1;
    if (labels && labels[i] != want)
      on = 0;
    if (on && has && plane[i] == nodv)
      on = 0;
    flags[i] = on;
  }
}

template <typename T>
cudaError_t launch_flags(const void *plane, const uint8_t *mask,
                         const uint32_t *labels, uint32_t label, uint64_t n,
                         int has, double ndv, uint8_t *flags, int sm_count,
                         cudaStream_t s) {
  uint64_t want = (n + kValidBlock - 1) / kValidBlock;
  uint64_t cap = (uint64_t)(sm_count > 0 ? sm_count : 1) * 8;
  unsigned grid = (unsigned)(want < cap ? want : cap);
  if (grid == 0)
    grid = 1;
  cudaError_t e = ist_cuda_launch_gate();
  if (e != cudaSuccess)
    return e;
  valid_flags_kernel<T>
      <<<grid, kValidBlock, 0, s>>>(static_cast<const T *>(plane), mask, labels,
                                    label, n, has, has ? (T)ndv : (T)0, flags);
  return cudaGetLastError();
}

/* CUB's temporary bytes for a chunk of samples of type T and for the
 * indices. */
template <typename T> size_t select_bytes() {
  size_t a = 0, b = 0;
  (void)cub::DeviceSelect::Flagged(
      nullptr, a, static_cast<const T *>(nullptr),
      static_cast<const uint8_t *>(nullptr), static_cast<T *>(nullptr),
      static_cast<int *>(nullptr), (int)kValidChunk);
  (void)cub::DeviceSelect::Flagged(
      nullptr, b, thrust::counting_iterator<uint32_t>(0),
      static_cast<const uint8_t *>(nullptr), static_cast<uint32_t *>(nullptr),
      static_cast<int *>(nullptr), (int)kValidChunk);
  return a > b ? a : b;
}

/* Compacts the n samples of d_plane flagged in d_flags (and their raster
 * indices) into the slot's valid_vals / valid_idx; *kept: how many. */
template <typename T>
imgstat_status compact(ist_slot *s, const void *d_plane, const uint8_t *flags,
                       uint64_t n, uint64_t *kept, imgstat_error *err) {
  size_t temp = select_bytes<T>();
  IST_CUDA_TRY(s->valid_temp.reserve(ist_align256(temp) + sizeof(int)),
               "cudaMalloc");
  int *d_num = s->valid_temp.as<int>(ist_align256(temp));
  const T *in = static_cast<const T *>(d_plane);
  T *vals = s->valid_vals.as<T>();
  uint32_t *idx = s->valid_idx.as<uint32_t>();
  uint64_t total = 0;
  for (uint64_t off = 0; off < n; off += kValidChunk) {
    int len = (int)(n - off < kValidChunk ? n - off : kValidChunk);
    size_t bytes = temp;
    IST_CUDA_TRY(ist_cuda_launch_gate(), "valid samples");
    IST_CUDA_TRY(cub::DeviceSelect::Flagged(s->valid_temp.p, bytes, in + off,
                                            flags + off, vals + total, d_num,
                                            len, s->stream),
                 "valid samples");
    bytes = temp;
    IST_CUDA_TRY(ist_cuda_launch_gate(), "valid samples");
    IST_CUDA_TRY(cub::DeviceSelect::Flagged(
                     s->valid_temp.p, bytes,
                     thrust::counting_iterator<uint32_t>((uint32_t)off),
                     flags + off, idx + total, d_num, len, s->stream),
                 "valid samples");
    int num = 0;
    IST_CUDA_TRY(cudaMemcpyAsync(&num, d_num, sizeof num,
                                 cudaMemcpyDeviceToHost, s->stream),
                 "cudaMemcpy");
    IST_CUDA_TRY(cudaStreamSynchronize(s->stream), "valid samples");
    total += (uint64_t)num;
  }
  *kept = total;
  return IMGSTAT_OK;
}

/* The raster index of compacted sample k (UINT64_MAX stays UINT64_MAX). */
imgstat_status raster_index(ist_slot *s, uint64_t kept, uint64_t *k,
                            imgstat_error *err) {
  if (*k == UINT64_MAX || *k >= kept)
    return IMGSTAT_OK;
  uint32_t i = 0;
  IST_CUDA_TRY(cudaMemcpyAsync(&i, s->valid_idx.as<uint32_t>() + *k, sizeof i,
                               cudaMemcpyDeviceToHost, s->stream),
               "cudaMemcpy");
  IST_CUDA_TRY(cudaStreamSynchronize(s->stream), "cudaMemcpy");
  *k = i;
  return IMGSTAT_OK;
}

/* The histogram of the slot's `kept` compacted samples into *h (allocated
 * here as imgstat_histogram_compute does for an integer plane; freed on
 * failure). */
imgstat_status valid_histogram(imgstat_gpu *gpu, ist_slot *s,
                               imgstat_sample sample, uint64_t kept,
                               imgstat_histogram *h, imgstat_error *err) {
  imgstat_status st = imgstat_histogram_alloc(h, sample, 0, 0.0, 0.0, err);
  if (st != IMGSTAT_OK)
    return st;
  const void *plane = s->valid_vals.p;
  int has = 0;
  st = ist_norm_gpu::hist_percentiles(s, gpu->sm_count, &plane, 1, kept, h, 1,
                                      nullptr, 0, nullptr, &has, err);
  if (st != IMGSTAT_OK)
    imgstat_histogram_free(h);
  return st;
}

/* Channel c of the device image: its valid partial and nodata count
 * (inside: the pixels of the mask, or of label place want when d_labels is
 * not NULL), and when h is not NULL the histogram of its valid samples. */
imgstat_status valid_channel(imgstat_gpu *gpu, imgstat_gpu_image *d, int c,
                             const imgstat_valid *v, const uint8_t *d_mask,
                             const uint32_t *d_labels, uint32_t want,
                             uint64_t inside, int kernel, imgstat_partial *out,
                             uint64_t *nodata, imgstat_histogram *h,
                             imgstat_error *err) {
  ist_slot *s = d->slot;
  const uint64_t n = (uint64_t)d->width * d->height;
  const int has = v && c < IMGSTAT_MAX_CHANNELS && v->has_nodata[c];
  const double ndv = has ? v->nodata[c] : 0.0;
  uint8_t *flags = s->valid_flags.as<uint8_t>();
  cudaError_t e = cudaSuccess;
  switch (d->sample) {
  case IMGSTAT_U8:
    e = launch_flags<uint8_t>(d->planes[c], d_mask, d_labels, want, n, has, ndv,
                              flags, gpu->sm_count, s->stream);
    break;
  case IMGSTAT_U16:
    e = launch_flags<uint16_t>(d->planes[c], d_mask, d_labels, want, n, has,
                               ndv, flags, gpu->sm_count, s->stream);
    break;
  case IMGSTAT_F32:
    e = launch_flags<float>(d->planes[c], d_mask, d_labels, want, n, has, ndv,
                            flags, gpu->sm_count, s->stream);
    break;
  }
  IST_CUDA_TRY(e, "valid samples");
  uint64_t kept = 0;
  imgstat_status st = IMGSTAT_OK;
  switch (d->sample) {
  case IMGSTAT_U8:
    st = compact<uint8_t>(s, d->planes[c], flags, n, &kept, err);
    break;
  case IMGSTAT_U16:
    st = compact<uint16_t>(s, d->planes[c], flags, n, &kept, err);
    break;
  case IMGSTAT_F32:
    st = compact<float>(s, d->planes[c], flags, n, &kept, err);
    break;
  }
  if (st != IMGSTAT_OK)
    return st;
  *nodata = inside - kept;
  /* the compacted plane, reduced as any plane of `kept` samples */
  const void *plane = s->valid_vals.p;
  st = ist_stats_planes(s, &plane, 1, d->sample, kept, kernel, out, err);
  if (st == IMGSTAT_OK)
    st = raster_index(s, kept, &out->min_index, err);
  if (st == IMGSTAT_OK)
    st = raster_index(s, kept, &out->max_index, err);
  if (st == IMGSTAT_OK && h)
    st = valid_histogram(gpu, s, d->sample, kept, h, err);
  return st;
}

/* ---- the fused pass over integer samples ------------------------------ */

constexpr int kFusedBlock = 256;
constexpr int kFusedWarps = kFusedBlock / 32;
/* samples each lane takes of a warp's tile (32 * kFusedSteps pixels) */
constexpr int kFusedSteps = 8;
/* regions whose accumulators a block keeps in shared memory (48 bytes
 * each); more go to the global ones directly */
constexpr uint32_t kFusedSharedRegions = 512;
/* bytes of bins and of accumulators a launch may use: the channels go in
 * groups within them; a single channel beyond them takes the compaction
 * path */
constexpr size_t kFusedHistBudget = (size_t)256 << 20;
constexpr size_t kFusedAccBudget = (size_t)64 << 20;
constexpr uint32_t kNoBin = 0xFFFFFFFFu;

/* What the fused kernel reads and writes, for one group of channels. */
struct fused_args {
  const void *plane0;  /* the group's first channel's plane */
  size_t plane_step;   /* samples from one plane to the next */
  const uint8_t *mask; /* region 0's pixels (NULL: every pixel) */
  const void *labels;  /* NULL, or each pixel's label place + 1 (0: none) */
  /* per channel of the group: bit 16 set when it has a nodata value, the
   * value (as the planes store it) in the low 16 bits */
  const uint32_t *nodata;
  uint64_t n;       /* pixels */
  uint32_t regions; /* accumulators per channel: 1 + labels */
  int whole;        /* region 0 wanted */
  uint32_t bins;    /* per histogram; 0: none */
  /* [channel][region][IST_VACC_WORDS] */
  unsigned long long *acc;
  /* [channel][region - !whole][bins] */
  unsigned int *hist;
};

/* Folds each lane's run r into acc's region reg (when has, and the run
 * holds anything) with one fold per distinct region of the warp: the runs
 * of a region added (maxima of the keys) across the warp by shuffles, lane
 * 0 folding the total. Every lane of the warp calls it. */
__device__ __forceinline__ void fused_warp_fold(unsigned long long *acc,
                                                bool has, uint32_t reg,
                                                const ist_vrun &r) {
  constexpr unsigned kAll = 0xFFFFFFFFu;
  bool pending = has && (r.count || r.nodata);
  unsigned todo = __ballot_sync(kAll, pending);
  while (todo) {
    const uint32_t pick = __shfl_sync(kAll, reg, __ffs(todo) - 1);
    const bool mine = pending && reg == pick;
    unsigned long long w[IST_VACC_WORDS] = {0, 0, 0, 0, 0, 0};
    if (mine) {
      w[0] = r.count;
      w[1] = r.nodata;
      w[2] = r.sum;
      w[3] = r.sumsq;
      if (r.count) {
        w[4] = ist_vrun_min_key(&r);
        w[5] = ist_vrun_max_key(&r);
      }
    }
#pragma unroll
    for (int o = 16; o > 0; o >>= 1) {
#pragma unroll
      for (int k = 0; k < 4; k++)
        w[k] += __shfl_xor_sync(kAll, w[k], o);
#pragma unroll
      for (int k = 4; k < IST_VACC_WORDS; k++) {
        const unsigned long long y = __shfl_xor_sync(kAll, w[k], o);
        w[k] = y > w[k] ? y : w[k];
      }
    }
    if ((threadIdx.x & 31) == 0) {
      unsigned long long *a = &acc[(size_t)pick * IST_VACC_WORDS];
      for (int k = 0; k < 4; k++)
        if (w[k])
          atomicAdd(&a[k], w[k]);
      if (w[0]) {
        atomicMax(&a[4], w[4]);
        atomicMax(&a[5], w[5]);
      }
    }
    pending = pending && !mine;
    todo = __ballot_sync(kAll, pending);
  }
}

/* One count into bin `key` of hist for each lane (kNoBin: none), one
 * atomic per distinct bin of the warp; every lane of the warp calls it. */
__device__ __forceinline__ void fused_bin(unsigned int *hist, uint32_t key) {
  const unsigned peers = __match_any_sync(0xFFFFFFFFu, key);
  if (key != kNoBin && (int)(threadIdx.x & 31) == __ffs(peers) - 1)
    atomicAdd(&hist[key], (unsigned int)__popc(peers));
}

/* One block's share of one channel: block bx of gx reduces tiles of the
 * n pixels of plane x (mask, labels: as fused_args; word: the channel's
 * nodata word) into gacc (the channel's regions' accumulators; through
 * s_acc when kShared) and hist (the channel's first bin, or NULL): each
 * warp takes tiles of 32 * kFusedSteps pixels, a lane pixels lane, lane +
 * 32, ... of each (its samples in increasing raster order). */
template <typename T, typename L, bool kShared>
__device__ __forceinline__ void
fused_block(const T *x, const uint8_t *mask, const L *lab, uint32_t word,
            uint64_t n, uint32_t regions, int whole, uint32_t bins,
            unsigned long long *gacc, unsigned int *hist, uint64_t bx,
            uint64_t gx, unsigned long long *s_acc) {
  const bool has = (word >> 16) & 1u;
  const uint32_t nodv = word & 0xFFFFu;
  unsigned long long *acc = kShared ? s_acc : gacc;
  if (kShared) {
    for (uint32_t i = threadIdx.x; i < regions * IST_VACC_WORDS;
         i += blockDim.x)
      s_acc[i] = 0;
    __syncthreads();
  }
  const uint32_t skip = whole ? 0u : 1u; /* region k's histogram: k - skip */
  const uint32_t lane = threadIdx.x & 31;
  const uint64_t tile = 32 * kFusedSteps;
  const uint64_t warps = gx * kFusedWarps;
  ist_vthread th;
  ist_vthread_init(&th);
  for (uint64_t base = (bx * kFusedWarps + threadIdx.x / 32) * tile; base < n;
       base += warps * tile) { /* the same for the warp's lanes */
#pragma unroll
    for (int j = 0; j < kFusedSteps; j++) {
      const uint64_t i = base + (uint64_t)j * 32 + lane;
      uint32_t v = 0, t = 0;
      bool inside = false, nd = false;
      if (i < n) {
        v = x[i];
        nd = has && v == nodv;
        inside = whole && (!mask || mask[i]);
        t = lab ? (uint32_t)lab[i] : 0u;
      }
      const uint32_t left = ist_vthread_leaving(&th, t);
      fused_warp_fold(acc, left != 0, left, th.label);
      ist_vthread_take(&th, v, (uint32_t)i, inside, nd, t);
      if (hist) {
        fused_bin(hist, inside && !nd ? v : kNoBin);
        fused_bin(hist, t && !nd ? (t - skip) * bins + v : kNoBin);
      }
    }
  }
  fused_warp_fold(acc, whole != 0, 0, th.whole);
  fused_warp_fold(acc, th.cur != 0, th.cur, th.label);
  if (kShared) {
    __syncthreads();
    for (uint32_t r = threadIdx.x; r < regions; r += blockDim.x) {
      const unsigned long long *s = &s_acc[(size_t)r * IST_VACC_WORDS];
      unsigned long long *g = &gacc[(size_t)r * IST_VACC_WORDS];
      if (s[0] == 0 && s[1] == 0)
        continue;
      for (int w = 0; w < 4; w++)
        if (s[w])
          atomicAdd(&g[w], s[w]);
      if (s[0]) {
        atomicMax(&g[4], s[4]);
        atomicMax(&g[5], s[5]);
      }
    }
  }
}

/* Block (x, y) reduces its share of channel y of the group. */
template <typename T, typename L, bool kShared>
__global__ void __launch_bounds__(kFusedBlock) fused_kernel(fused_args a) {
  extern __shared__ unsigned long long s_acc[];
  const uint32_t cg = blockIdx.y;
  const uint32_t skip = a.whole ? 0u : 1u;
  fused_block<T, L, kShared>(
      static_cast<const T *>(a.plane0) + (size_t)cg * a.plane_step, a.mask,
      static_cast<const L *>(a.labels), a.nodata[cg], a.n, a.regions, a.whole,
      a.bins, a.acc + (size_t)cg * a.regions * IST_VACC_WORDS,
      a.bins ? a.hist + (size_t)cg * (a.regions - skip) * a.bins : nullptr,
      blockIdx.x, gridDim.x, s_acc);
}

template <typename T, typename L>
cudaError_t launch_fused(const fused_args &a, uint32_t channels, int sm_count,
                         cudaStream_t s) {
  const uint64_t per_block = (uint64_t)kFusedWarps * 32 * kFusedSteps;
  uint64_t want = (a.n + per_block - 1) / per_block;
  uint64_t cap = (uint64_t)(sm_count > 0 ? sm_count : 1) * 8 / channels;
  if (cap == 0)
    cap = 1;
  dim3 grid((unsigned)(want < cap ? (want ? want : 1) : cap), channels);
  cudaError_t e = ist_cuda_launch_gate();
  if (e != cudaSuccess)
    return e;
  if (a.regions <= kFusedSharedRegions)
    fused_kernel<T, L, true>
        <<<grid, kFusedBlock,
           (size_t)a.regions * IST_VACC_WORDS * sizeof(unsigned long long),
           s>>>(a);
  else
    fused_kernel<T, L, false><<<grid, kFusedBlock, 0, s>>>(a);
  return cudaGetLastError();
}

template <typename T>
cudaError_t launch_fused_t(const fused_args &a, int label_bytes,
                           uint32_t channels, int sm_count, cudaStream_t s) {
  switch (label_bytes) {
  case 1:
    return launch_fused<T, uint8_t>(a, channels, sm_count, s);
  case 2:
    return launch_fused<T, uint16_t>(a, channels, sm_count, s);
  default:
    return launch_fused<T, uint32_t>(a, channels, sm_count, s);
  }
}

/* Channels per launch of the fused pass for `regions` regions (`hregions`
 * of them with histograms of `bins` bins): 0 when one channel's
 * accumulators or bins exceed the budgets. */
uint32_t fused_group(uint32_t channels, uint64_t regions, uint64_t hregions,
                     uint32_t bins) {
  const uint64_t acc = regions * IST_VACC_WORDS * sizeof(uint64_t);
  const uint64_t hist = hregions * bins * sizeof(uint32_t);
  if (acc > kFusedAccBudget || hist > kFusedHistBudget)
    return 0;
  uint64_t g = kFusedAccBudget / acc;
  if (hist && kFusedHistBudget / hist < g)
    g = kFusedHistBudget / hist;
  return (uint32_t)(g < channels ? g : channels);
}

/* Integer samples take the fused pass unless the environment says
 * otherwise (IMGSTAT_GPU_VALID_COMPACT: the compaction path, to compare). */
bool fused_wanted(const imgstat_image *img) {
  return img->sample != IMGSTAT_F32 && !getenv("IMGSTAT_GPU_VALID_COMPACT");
}

/* Bytes of each pixel's label place + 1 (0: none) for `regions`
 * regions: the fewest that hold them. */
int fused_label_bytes(uint32_t regions) {
  return regions <= 0xFFu ? 1 : regions <= 0xFFFFu ? 2 : 4;
}

/* Each pixel's label place + 1 (0: none), label_bytes each, into *lab
 * (allocated here; NULL when there are no labels or no pixels). */
imgstat_status label_places(uint32_t nlabels, const uint32_t *pixels,
                            const uint64_t *start, const uint64_t *count,
                            uint64_t n, int label_bytes, void **lab,
                            imgstat_error *err) {
  *lab = nullptr;
  if (nlabels == 0 || n == 0)
    return IMGSTAT_OK;
  void *p = calloc(n, (size_t)label_bytes);
  if (!p)
    return imgstat_error_set(err, IMGSTAT_ERR_NOMEM, "out of memory");
  for (uint32_t k = 0; k < nlabels; k++)
    for (uint64_t j = 0; j < count[k]; j++) {
      const uint32_t at = pixels[start[k] + j];
      if (label_bytes == 1)
        static_cast<uint8_t *>(p)[at] = (uint8_t)(k + 1);
      else if (label_bytes == 2)
        static_cast<uint16_t *>(p)[at] = (uint16_t)(k + 1);
      else
        static_cast<uint32_t *>(p)[at] = k + 1;
    }
  *lab = p;
  return IMGSTAT_OK;
}

/* valid_run's work by the fused pass, its arguments checked: region 0
 * (out, nodata, hist; out NULL: not wanted) and the labels' regions (lout,
 * lnodata, lhist at k * channels + c) of every channel; *fused = false
 * (and nothing done) when the regions exceed the pass's budgets. */
imgstat_status
valid_fused(imgstat_gpu *gpu, const imgstat_image *img, const imgstat_valid *v,
            imgstat_partial *out, uint64_t *nodata, imgstat_histogram *hist,
            uint32_t nlabels, const uint32_t *pixels, const uint64_t *start,
            const uint64_t *count, imgstat_partial *lout, uint64_t *lnodata,
            imgstat_histogram *lhist, bool *fused, imgstat_error *err) {
  const uint32_t channels = (uint32_t)img->channels;
  const int whole = out != nullptr;
  const uint32_t regions = nlabels + 1;
  const uint32_t hregions = regions - (whole ? 0 : 1);
  const bool with_hist = hist || lhist;
  const uint32_t bins =
      with_hist ? (img->sample == IMGSTAT_U8 ? 256u : 65536u) : 0u;
  const uint32_t group = fused_group(channels, regions, hregions, bins);
  *fused = group > 0;
  if (!*fused)
    return IMGSTAT_OK;
  const uint64_t n = (uint64_t)img->width * img->height;
  const int label_bytes = fused_label_bytes(regions);
  void *lab = nullptr;
  imgstat_status lst =
      label_places(nlabels, pixels, start, count, n, label_bytes, &lab, err);
  if (lst != IMGSTAT_OK)
    return lst;
  cudaError_t ge = ist_gpu_enter(gpu);
  if (ge != cudaSuccess) {
    free(lab);
    return ist_cuda_fail(err, ge, "cudaSetDevice");
  }
  imgstat_gpu_image *d = nullptr;
  imgstat_status st = ist_gpu_image_upload(gpu, img, &d, err);
  if (st != IMGSTAT_OK) {
    free(lab);
    return st;
  }
  ist_slot *s = d->slot;
  const uint8_t *mask = v && whole ? v->mask : nullptr;
  /* the device buffer (valid_temp): the group's nodata words, then its
   * accumulators, then its bins; the pinned one (h_out) the same */
  const size_t words_bytes = ist_align256((size_t)group * sizeof(uint32_t));
  const size_t acc_bytes =
      ist_align256((size_t)group * regions * IST_VACC_WORDS * sizeof(uint64_t));
  const size_t hist_bytes = (size_t)group * hregions * bins * sizeof(uint32_t);
  const size_t plane_step =
      ist_align256(n * (size_t)img->sample) / (size_t)img->sample;
  cudaError_t e = s->valid_temp.reserve(words_bytes + acc_bytes + hist_bytes);
  if (e == cudaSuccess)
    e = s->h_out.reserve(words_bytes + acc_bytes + hist_bytes);
  if (e == cudaSuccess && mask && n > 0) {
    e = s->valid_mask.reserve(n);
    if (e == cudaSuccess)
      e = ist_slot_upload(s, s->valid_mask.p, mask, img->width, 0, 0, n);
  }
  if (e == cudaSuccess && lab) {
    e = s->valid_labels.reserve(n * (size_t)label_bytes);
    if (e == cudaSuccess)
      e = ist_slot_upload(s, s->valid_labels.p, lab,
                          (size_t)img->width * label_bytes, 0, 0,
                          n * (size_t)label_bytes);
  }
  if (e != cudaSuccess)
    st = ist_cuda_fail(err, e, "valid samples");
  for (int c = 1; st == IMGSTAT_OK && n > 0 && c < img->channels; c++)
    if (d->planes[c] != static_cast<const char *>(d->planes[0]) +
                            (size_t)c * plane_step * (size_t)img->sample)
      st = imgstat_error_set(err, IMGSTAT_ERR_DEVICE,
                             "the device planes are not evenly spaced");
  for (uint32_t c0 = 0; c0 < channels && st == IMGSTAT_OK; c0 += group) {
    const uint32_t g = channels - c0 < group ? channels - c0 : group;
    uint32_t *h_words = s->h_out.as<uint32_t>();
    for (uint32_t k = 0; k < g; k++) {
      const uint32_t c = c0 + k;
      const int has = v && c < IMGSTAT_MAX_CHANNELS && v->has_nodata[c];
      h_words[k] = has ? (1u << 16) | (uint32_t)v->nodata[c] : 0u;
    }
    unsigned char *dev = s->valid_temp.as<unsigned char>();
    const size_t used = acc_bytes + (size_t)g * hregions * bins * 4;
    fused_args a;
    a.plane0 = n > 0 ? d->planes[c0] : nullptr;
    a.plane_step = plane_step;
    a.mask = mask && n > 0 ? s->valid_mask.as<uint8_t>() : nullptr;
    a.labels = lab ? s->valid_labels.p : nullptr;
    a.nodata = reinterpret_cast<const uint32_t *>(dev);
    a.n = n;
    a.regions = regions;
    a.whole = whole;
    a.bins = bins;
    a.acc = reinterpret_cast<unsigned long long *>(dev + words_bytes);
    a.hist = reinterpret_cast<unsigned int *>(dev + words_bytes + acc_bytes);
    e = cudaMemcpyAsync(dev, h_words, (size_t)g * sizeof(uint32_t),
                        cudaMemcpyHostToDevice, s->stream);
    if (e == cudaSuccess)
      e = cudaMemsetAsync(dev + words_bytes, 0, used, s->stream);
    if (e == cudaSuccess)
      e = img->sample == IMGSTAT_U8
              ? launch_fused_t<uint8_t>(a, label_bytes, g, gpu->sm_count,
                                        s->stream)
              : launch_fused_t<uint16_t>(a, label_bytes, g, gpu->sm_count,
                                         s->stream);
    if (e == cudaSuccess)
      e = cudaMemcpyAsync(s->h_out.as<unsigned char>(words_bytes),
                          dev + words_bytes, used, cudaMemcpyDeviceToHost,
                          s->stream);
    if (e == cudaSuccess)
      e = cudaStreamSynchronize(s->stream);
    if (e != cudaSuccess) {
      st = ist_cuda_fail(err, e, "valid samples");
      break;
    }
    const uint64_t *h_acc = s->h_out.as<uint64_t>(words_bytes);
    const uint32_t *h_bins = s->h_out.as<uint32_t>(words_bytes + acc_bytes);
    for (uint32_t k = 0; k < g && st == IMGSTAT_OK; k++)
      for (uint32_t r = whole ? 0 : 1; r < regions && st == IMGSTAT_OK; r++) {
        const uint64_t *w = h_acc + ((size_t)k * regions + r) * IST_VACC_WORDS;
        ist_vacc acc = {w[0], w[1], w[2], w[3], w[4], w[5]};
        const uint32_t c = c0 + k;
        const size_t at = r ? (size_t)(r - 1) * channels + c : c;
        imgstat_histogram *h =
            r ? (lhist ? &lhist[at] : nullptr) : (hist ? &hist[at] : nullptr);
        if (r) {
          lout[at] = ist_vacc_partial(&acc);
          lnodata[at] = acc.nodata;
        } else {
          out[at] = ist_vacc_partial(&acc);
          nodata[at] = acc.nodata;
        }
        if (!h)
          continue;
        st = imgstat_histogram_alloc(h, img->sample, 0, 0.0, 0.0, err);
        if (st != IMGSTAT_OK)
          break;
        const uint32_t *b =
            h_bins + ((size_t)k * hregions + (r - (whole ? 0 : 1))) * bins;
        for (uint32_t i = 0; i < bins; i++)
          h->counts[i] = b[i];
        h->total = acc.count;
      }
  }
  if (st != IMGSTAT_OK)
    ist_slot_drain(s);
  imgstat_gpu_image_release(gpu, d);
  free(lab);
  return st;
}

/* valid_run's checks of its arguments (the histograms cleared first). */
imgstat_status valid_check(const imgstat_image *img, const imgstat_valid *v,
                           imgstat_histogram *hist, uint32_t nlabels,
                           imgstat_histogram *lhist, imgstat_error *err) {
  imgstat_status st = ist_gpu_check_image(img, err);
  if (st != IMGSTAT_OK)
    return st;
  const size_t channels = (size_t)img->channels;
  if (hist)
    memset(hist, 0, channels * sizeof *hist);
  if (lhist)
    memset(lhist, 0, (size_t)nlabels * channels * sizeof *lhist);
  if ((hist || lhist) && img->sample == IMGSTAT_F32)
    return imgstat_error_set(err, IMGSTAT_ERR_UNSUPPORTED,
                             "the histograms of float samples' valid samples "
                             "are made on the CPU");
  if (v && v->npixels)
    return imgstat_error_set(err, IMGSTAT_ERR_ARG,
                             "a pixel list (a label's region) is not "
                             "reduced on the device");
  for (int c = 0; v && c < img->channels && c < IMGSTAT_MAX_CHANNELS; c++)
    if (v->has_nodata[c] && (st = imgstat_valid_check_nodata(
                                 v->nodata[c], img->sample, err)) != IMGSTAT_OK)
      return st;
  const uint64_t n = (uint64_t)img->width * img->height;
  if (n > UINT32_MAX)
    return imgstat_error_set(err, IMGSTAT_ERR_LIMIT,
                             "%llu samples in one channel (at most %u)",
                             (unsigned long long)n, UINT32_MAX);
  return IMGSTAT_OK;
}

/* The valid samples of img under v on the device: each channel's partial
 * and nodata count into out and nodata (NULL: not asked), and with
 * nlabels > 0 each label's (its pixels: pixels[start[k], start[k] +
 * count[k]), inside the mask already) into lout[k * channels + c] and
 * lnodata alike; with hist (lhist) not NULL, the histograms beside them in
 * the same places (integer samples only; none kept on failure); one upload
 * of the image. */
imgstat_status
valid_run(imgstat_gpu *gpu, const imgstat_image *img, const imgstat_valid *v,
          int kernel, imgstat_partial *out, uint64_t *nodata,
          imgstat_histogram *hist, uint32_t nlabels, const uint32_t *pixels,
          const uint64_t *start, const uint64_t *count, imgstat_partial *lout,
          uint64_t *lnodata, imgstat_histogram *lhist, imgstat_error *err) {
  imgstat_status st = valid_check(img, v, hist, nlabels, lhist, err);
  if (st != IMGSTAT_OK)
    return st;
  const size_t channels = (size_t)img->channels;
  const uint64_t n = (uint64_t)img->width * img->height;
  if (fused_wanted(img)) {
    bool fused = false;
    st = valid_fused(gpu, img, v, out, nodata, hist, nlabels, pixels, start,
                     count, lout, lnodata, lhist, &fused, err);
    if (fused || st != IMGSTAT_OK) {
      if (st != IMGSTAT_OK) {
        for (size_t c = 0; hist && c < channels; c++)
          imgstat_histogram_free(&hist[c]);
        for (size_t i = 0; lhist && i < (size_t)nlabels * channels; i++)
          imgstat_histogram_free(&lhist[i]);
      }
      return st;
    }
  }
  /* the pixels inside the mask: the valid and the nodata samples */
  const uint8_t *mask = v ? v->mask : nullptr;
  uint64_t inside = n;
  if (mask) {
    inside = 0;
    for (uint64_t i = 0; i < n; i++)
      inside += mask[i] != 0;
  }
  /* each pixel's label place + 1 (0: none), on the host first */
  uint32_t *lab = nullptr;
  if (nlabels > 0 && n > 0) {
    lab = static_cast<uint32_t *>(calloc(n, sizeof *lab));
    if (!lab)
      return imgstat_error_set(err, IMGSTAT_ERR_NOMEM, "out of memory");
    for (uint32_t k = 0; k < nlabels; k++)
      for (uint64_t j = 0; j < count[k]; j++)
        lab[pixels[start[k] + j]] = k + 1;
  }
  cudaError_t ge = ist_gpu_enter(gpu);
  if (ge != cudaSuccess) {
    free(lab);
    return ist_cuda_fail(err, ge, "cudaSetDevice");
  }
  imgstat_gpu_image *d = nullptr;
  st = ist_gpu_image_upload(gpu, img, &d, err);
  if (st != IMGSTAT_OK) {
    free(lab);
    return st;
  }
  ist_slot *s = d->slot;
  cudaError_t e = cudaSuccess;
  const uint8_t *d_mask = nullptr;
  const uint32_t *d_lab = nullptr;
  if (n > 0) {
    e = s->valid_flags.reserve(n);
    if (e == cudaSuccess)
      e = s->valid_vals.reserve(n * (size_t)img->sample);
    if (e == cudaSuccess)
      e = s->valid_idx.reserve(n * sizeof(uint32_t));
    if (e == cudaSuccess && mask && out) {
      e = s->valid_mask.reserve(n);
      if (e == cudaSuccess)
        e = ist_slot_upload(s, s->valid_mask.p, mask, img->width, 0, 0, n);
      d_mask = s->valid_mask.as<uint8_t>();
    }
    if (e == cudaSuccess && lab) {
      e = s->valid_labels.reserve(n * sizeof(uint32_t));
      if (e == cudaSuccess)
        e = ist_slot_upload(s, s->valid_labels.p, lab,
                            img->width * sizeof(uint32_t), 0, 0,
                            n * sizeof(uint32_t));
      d_lab = s->valid_labels.as<uint32_t>();
    }
    if (e != cudaSuccess)
      st = ist_cuda_fail(err, e, "valid samples");
  }
  for (int c = 0; out && c < img->channels && st == IMGSTAT_OK; c++) {
    imgstat_histogram *h = hist ? &hist[c] : nullptr;
    if (n == 0) {
      nodata[c] = 0;
      st =
          ist_stats_planes(s, nullptr, 1, img->sample, 0, kernel, &out[c], err);
      if (st == IMGSTAT_OK && h)
        st = valid_histogram(gpu, s, img->sample, 0, h, err);
      continue;
    }
    st = valid_channel(gpu, d, c, v, d_mask, nullptr, 0, inside, kernel,
                       &out[c], &nodata[c], h, err);
  }
  for (uint32_t k = 0; k < nlabels && st == IMGSTAT_OK; k++)
    for (int c = 0; c < img->channels && st == IMGSTAT_OK; c++) {
      const size_t at = (size_t)k * channels + (size_t)c;
      imgstat_partial *lp = &lout[at];
      uint64_t *ln = &lnodata[at];
      imgstat_histogram *h = lhist ? &lhist[at] : nullptr;
      if (n == 0) {
        *ln = 0;
        st = ist_stats_planes(s, nullptr, 1, img->sample, 0, kernel, lp, err);
        if (st == IMGSTAT_OK && h)
          st = valid_histogram(gpu, s, img->sample, 0, h, err);
        continue;
      }
      st = valid_channel(gpu, d, c, v, nullptr, d_lab, k + 1, count[k], kernel,
                         lp, ln, h, err);
    }
  if (st != IMGSTAT_OK) {
    ist_slot_drain(s);
    for (size_t c = 0; hist && c < channels; c++)
      imgstat_histogram_free(&hist[c]);
    for (size_t i = 0; lhist && i < (size_t)nlabels * channels; i++)
      imgstat_histogram_free(&lhist[i]);
  }
  /* (the staged uploads have left the host buffers once the slot's work
   * is done: valid_channel synchronizes its stream) */
  imgstat_gpu_image_release(gpu, d);
  free(lab);
  return st;
}

/* ---- batches of images on the fused pass ------------------------------ */

/* What the batch kernel reads: the data buffer, the table of images and
 * of pairs (valid_batch.h), the batch's accumulators and bins. */
struct batch_args {
  const unsigned char *data;
  const ist_vbatch_image *images;
  const ist_vbatch_pair *pairs;
  unsigned long long *acc;
  unsigned int *hist;
};

/* Bytes of images' data a launch of the batch kernel takes (an image
 * larger goes alone) and pairs (one row of blocks each). */
constexpr uint64_t kBatchDataBudget = (uint64_t)512 << 20;
constexpr uint32_t kBatchPairs = 65535;

template <typename T, bool kShared>
__device__ __forceinline__ void
batch_pair(const batch_args &a, const ist_vbatch_image &im,
           const ist_vbatch_pair &p, unsigned long long *s_acc) {
  const T *x =
      reinterpret_cast<const T *>(ist_vbatch_plane(a.data, &im, p.channel));
  const uint8_t *mask = im.mask == IST_VBATCH_NONE ? nullptr : a.data + im.mask;
  const void *lab = im.labels == IST_VBATCH_NONE ? nullptr : a.data + im.labels;
  unsigned long long *gacc = a.acc + ist_vbatch_acc(&im, p.channel);
  unsigned int *hist =
      im.bins ? a.hist + ist_vbatch_hist(&im, p.channel) : nullptr;
  switch (im.label_bytes) {
  case 2:
    fused_block<T, uint16_t, kShared>(
        x, mask, static_cast<const uint16_t *>(lab), p.nodata, im.n, im.regions,
        (int)im.whole, im.bins, gacc, hist, blockIdx.x, gridDim.x, s_acc);
    break;
  case 4:
    fused_block<T, uint32_t, kShared>(
        x, mask, static_cast<const uint32_t *>(lab), p.nodata, im.n, im.regions,
        (int)im.whole, im.bins, gacc, hist, blockIdx.x, gridDim.x, s_acc);
    break;
  default: /* 1, or no labels */
    fused_block<T, uint8_t, kShared>(
        x, mask, static_cast<const uint8_t *>(lab), p.nodata, im.n, im.regions,
        (int)im.whole, im.bins, gacc, hist, blockIdx.x, gridDim.x, s_acc);
    break;
  }
}

/* Block (x, y) reduces its share of pair y's channel of its image. */
template <bool kShared>
__global__ void __launch_bounds__(kFusedBlock) batch_kernel(batch_args a) {
  extern __shared__ unsigned long long s_acc[];
  const ist_vbatch_pair p = a.pairs[blockIdx.y];
  const ist_vbatch_image im = a.images[p.image];
  if (im.sample == 1)
    batch_pair<uint8_t, kShared>(a, im, p, s_acc);
  else
    batch_pair<uint16_t, kShared>(a, im, p, s_acc);
}

/* One item of a batch, as the batch sees it. */
struct batch_item {
  imgstat_gpu_valid_item *it;
  uint32_t regions, hregions, bins;
  int label_bytes;
  uint64_t bytes, words, nbins; /* what it adds to a batch */
};

/* The item's place in a batch when the fused pass takes it whole (its
 * arguments checked): false for the one-by-one path. */
bool batch_fits(imgstat_gpu_valid_item *it, batch_item *b) {
  const imgstat_image *img = it->img;
  if (!fused_wanted(img))
    return false;
  const uint32_t channels = (uint32_t)img->channels;
  const int whole = it->out != nullptr;
  b->it = it;
  b->regions = it->nlabels + 1;
  b->hregions = b->regions - (whole ? 0 : 1);
  b->bins =
      it->hist || it->lhist ? (img->sample == IMGSTAT_U8 ? 256u : 65536u) : 0u;
  if (fused_group(channels, b->regions, b->hregions, b->bins) < channels)
    return false;
  b->label_bytes = it->nlabels ? fused_label_bytes(b->regions) : 0;
  const uint64_t n = (uint64_t)img->width * img->height;
  const int has_mask = whole && it->v && it->v->mask && n > 0;
  ist_vbatch_need(n, channels, (uint32_t)img->sample, has_mask,
                  (uint32_t)b->label_bytes, b->regions, whole, b->bins,
                  &b->bytes, &b->words, &b->nbins);
  return channels <= kBatchPairs;
}

/* The batch's figures of item b (laid out as im) from the copy back. */
imgstat_status batch_unpack(const batch_item &b, const ist_vbatch_image &im,
                            const uint64_t *h_acc, const uint32_t *h_bins,
                            imgstat_error *err) {
  imgstat_gpu_valid_item *it = b.it;
  const uint32_t channels = im.channels;
  imgstat_status st = IMGSTAT_OK;
  for (uint32_t c = 0; c < channels && st == IMGSTAT_OK; c++)
    for (uint32_t r = im.whole ? 0 : 1; r < im.regions && st == IMGSTAT_OK;
         r++) {
      const uint64_t *w =
          h_acc + ist_vbatch_acc(&im, c) + (uint64_t)r * IST_VACC_WORDS;
      ist_vacc acc = {w[0], w[1], w[2], w[3], w[4], w[5]};
      const size_t at = r ? (size_t)(r - 1) * channels + c : c;
      imgstat_histogram *h = r ? (it->lhist ? &it->lhist[at] : nullptr)
                               : (it->hist ? &it->hist[at] : nullptr);
      if (r) {
        it->lout[at] = ist_vacc_partial(&acc);
        it->lnodata[at] = acc.nodata;
      } else {
        it->out[at] = ist_vacc_partial(&acc);
        it->nodata[at] = acc.nodata;
      }
      if (!h)
        continue;
      st = imgstat_histogram_alloc(h, it->img->sample, 0, 0.0, 0.0, err);
      if (st != IMGSTAT_OK)
        break;
      const uint32_t *bins = h_bins + ist_vbatch_region_hist(&im, c, r);
      for (uint32_t i = 0; i < im.bins; i++)
        h->counts[i] = bins[i];
      h->total = acc.count;
    }
  return st;
}

/* Frees an item's histograms (none kept on failure). */
void item_free_histograms(imgstat_gpu_valid_item *it) {
  const size_t channels = (size_t)it->img->channels;
  for (size_t c = 0; it->hist && c < channels; c++)
    imgstat_histogram_free(&it->hist[c]);
  for (size_t i = 0; it->lhist && i < (size_t)it->nlabels * channels; i++)
    imgstat_histogram_free(&it->lhist[i]);
}

/* The items b[0..m) in one launch on one slot: their data uploaded into
 * the slot's planes buffer (ist_slot_upload_pieces), the tables and then the
 * accumulators and bins in valid_temp (the pinned h_out the same), one memset,
 * one launch, one copy back, one synchronization; each item's figures unpacked
 * into it (an item's own failure, a histogram's allocation, its alone). A
 * failure of the batch's device work is returned (the items untouched but their
 * cleared histograms). */
imgstat_status batch_launch(imgstat_gpu *gpu, batch_item *b, uint32_t m,
                            imgstat_error *err) {
  ist_vbatch_totals t;
  memset(&t, 0, sizeof t);
  ist_vbatch_image *images =
      static_cast<ist_vbatch_image *>(calloc(m, sizeof *images));
  void **labs = static_cast<void **>(calloc(m, sizeof *labs));
  uint32_t max_regions = 1;
  uint64_t max_n = 0;
  imgstat_status st = IMGSTAT_OK;
  if (!images || !labs)
    st = imgstat_error_set(err, IMGSTAT_ERR_NOMEM, "out of memory");
  for (uint32_t k = 0; k < m && st == IMGSTAT_OK; k++) {
    imgstat_gpu_valid_item *it = b[k].it;
    const imgstat_image *img = it->img;
    const uint64_t n = (uint64_t)img->width * img->height;
    const int whole = it->out != nullptr;
    const int has_mask = whole && it->v && it->v->mask && n > 0;
    ist_vbatch_place(&t, &images[k], n, (uint32_t)img->channels,
                     (uint32_t)img->sample, has_mask,
                     (uint32_t)(n > 0 ? b[k].label_bytes : 0), b[k].regions,
                     whole, b[k].bins);
    if (b[k].regions > max_regions)
      max_regions = b[k].regions;
    if (n > max_n)
      max_n = n;
    st = label_places(it->nlabels, it->pixels, it->start, it->count, n,
                      b[k].label_bytes, &labs[k], err);
  }
  ist_vbatch_pair *pairs = nullptr;
  if (st == IMGSTAT_OK) {
    pairs = static_cast<ist_vbatch_pair *>(
        calloc(t.pairs ? t.pairs : 1, sizeof *pairs));
    if (!pairs)
      st = imgstat_error_set(err, IMGSTAT_ERR_NOMEM, "out of memory");
  }
  for (uint32_t k = 0, p = 0; k < m && st == IMGSTAT_OK; k++) {
    const imgstat_valid *v = b[k].it->v;
    for (uint32_t c = 0; c < images[k].channels; c++, p++) {
      const int has = v && c < IMGSTAT_MAX_CHANNELS && v->has_nodata[c];
      pairs[p].image = k;
      pairs[p].channel = c;
      pairs[p].nodata =
          ist_vbatch_nodata_word(has, has ? (uint32_t)v->nodata[c] : 0u);
    }
  }
  ist_slot *s = nullptr;
  if (st == IMGSTAT_OK) {
    cudaError_t ge = ist_gpu_enter(gpu);
    if (ge != cudaSuccess)
      st = ist_cuda_fail(err, ge, "cudaSetDevice");
  }
  if (st == IMGSTAT_OK)
    st = ist_slot_take(gpu, &s, err);
  /* valid_temp and h_out: the images' table, the pairs', the accumulators,
   * the bins */
  const size_t images_bytes = ist_align256((size_t)m * sizeof *images);
  const size_t pairs_bytes =
      ist_align256((size_t)(t.pairs ? t.pairs : 1) * sizeof *pairs);
  const size_t acc_bytes = ist_align256(t.acc_words * sizeof(uint64_t));
  const size_t used = acc_bytes + t.hist_bins * sizeof(uint32_t);
  const size_t tables = images_bytes + pairs_bytes;
  cudaError_t e = cudaSuccess;
  if (st == IMGSTAT_OK) {
    e = s->planes.reserve(t.data_bytes);
    if (e == cudaSuccess)
      e = s->valid_temp.reserve(tables + used);
    if (e == cudaSuccess)
      e = s->h_out.reserve(tables + used);
    /* every image's planes, mask and label places: one stream of copies
     * through the staging buffers */
    ist_upload_piece *pieces = nullptr;
    size_t np = 0;
    if (e == cudaSuccess) {
      pieces = static_cast<ist_upload_piece *>(
          calloc((size_t)t.pairs + 2 * (size_t)m + 1, sizeof *pieces));
      if (!pieces)
        e = cudaErrorMemoryAllocation;
    }
    for (uint32_t k = 0; k < m && e == cudaSuccess; k++) {
      const imgstat_gpu_valid_item *it = b[k].it;
      const imgstat_image *img = it->img;
      const ist_vbatch_image &im = images[k];
      if (im.n == 0)
        continue;
      const size_t row_bytes = (size_t)img->width * img->sample;
      for (uint32_t c = 0; c < im.channels; c++)
        pieces[np++] = {im.plane + (uint64_t)c * im.plane_step, img->planes[c],
                        row_bytes, img->stride, im.n * img->sample};
      if (im.mask != IST_VBATCH_NONE)
        pieces[np++] = {im.mask, it->v->mask, img->width, 0, im.n};
      if (im.labels != IST_VBATCH_NONE)
        pieces[np++] = {im.labels, labs[k], (size_t)img->width * im.label_bytes,
                        0, im.n * im.label_bytes};
    }
    if (e == cudaSuccess)
      e = ist_slot_upload_pieces(s, s->planes.p, t.data_bytes, pieces, np);
    free(pieces);
    if (e == cudaSuccess) {
      memcpy(s->h_out.p, images, (size_t)m * sizeof *images);
      memcpy(s->h_out.as<unsigned char>(images_bytes), pairs,
             (size_t)t.pairs * sizeof *pairs);
      e = cudaMemcpyAsync(s->valid_temp.p, s->h_out.p, tables,
                          cudaMemcpyHostToDevice, s->stream);
    }
    unsigned char *dev = s->valid_temp.as<unsigned char>();
    if (e == cudaSuccess)
      e = cudaMemsetAsync(dev + tables, 0, used, s->stream);
    if (e == cudaSuccess && t.pairs > 0) {
      batch_args a;
      a.data = s->planes.as<unsigned char>();
      a.images = reinterpret_cast<const ist_vbatch_image *>(dev);
      a.pairs = reinterpret_cast<const ist_vbatch_pair *>(dev + images_bytes);
      a.acc = reinterpret_cast<unsigned long long *>(dev + tables);
      a.hist = reinterpret_cast<unsigned int *>(dev + tables + acc_bytes);
      const uint64_t per_block = (uint64_t)kFusedWarps * 32 * kFusedSteps;
      const uint64_t want = (max_n + per_block - 1) / per_block;
      uint64_t cap =
          (uint64_t)(gpu->sm_count > 0 ? gpu->sm_count : 1) * 8 / t.pairs;
      if (cap == 0)
        cap = 1;
      dim3 grid((unsigned)(want < cap ? (want ? want : 1) : cap), t.pairs);
      e = ist_cuda_launch_gate();
      if (e == cudaSuccess) {
        if (max_regions <= kFusedSharedRegions)
          batch_kernel<true><<<grid, kFusedBlock,
                               (size_t)max_regions * IST_VACC_WORDS *
                                   sizeof(unsigned long long),
                               s->stream>>>(a);
        else
          batch_kernel<false><<<grid, kFusedBlock, 0, s->stream>>>(a);
        e = cudaGetLastError();
      }
    }
    if (e == cudaSuccess)
      e = cudaMemcpyAsync(s->h_out.as<unsigned char>(tables), dev + tables,
                          used, cudaMemcpyDeviceToHost, s->stream);
    if (e == cudaSuccess)
      e = cudaStreamSynchronize(s->stream);
    if (e != cudaSuccess)
      st = ist_cuda_fail(err, e, "valid samples (a batch of images)");
  }
  if (st == IMGSTAT_OK) {
    const uint64_t *h_acc = s->h_out.as<uint64_t>(tables);
    const uint32_t *h_bins = s->h_out.as<uint32_t>(tables + acc_bytes);
    for (uint32_t k = 0; k < m; k++) {
      imgstat_gpu_valid_item *it = b[k].it;
      it->status = batch_unpack(b[k], images[k], h_acc, h_bins, &it->err);
      it->batched = 1;
      if (it->status != IMGSTAT_OK)
        item_free_histograms(it);
    }
  }
  if (s) {
    if (st != IMGSTAT_OK)
      ist_slot_drain(s);
    ist_slot_give(gpu, s);
  }
  for (uint32_t k = 0; labs && k < m; k++)
    free(labs[k]);
  free(labs);
  free(pairs);
  free(images);
  return st;
}

/* The items of b[0..m) in launches within the budgets; the items of a
 * launch whose device work failed one by one (valid_run: each its own
 * outcome). */
void batch_run(imgstat_gpu *gpu, int kernel, batch_item *b, uint32_t m) {
  uint32_t first = 0;
  while (first < m) {
    uint64_t bytes = 0, words = 0, nbins = 0;
    uint32_t pairs = 0, k = first;
    for (; k < m; k++) {
      const uint32_t c = (uint32_t)b[k].it->img->channels;
      if (k > first &&
          (bytes + b[k].bytes > kBatchDataBudget ||
           (words + b[k].words) * sizeof(uint64_t) > kFusedAccBudget ||
           (nbins + b[k].nbins) * sizeof(uint32_t) > kFusedHistBudget ||
           pairs + c > kBatchPairs))
        break;
      bytes += b[k].bytes;
      words += b[k].words;
      nbins += b[k].nbins;
      pairs += c;
    }
    imgstat_error err;
    memset(&err, 0, sizeof err);
    if (batch_launch(gpu, b + first, k - first, &err) != IMGSTAT_OK)
      for (uint32_t j = first; j < k; j++) {
        imgstat_gpu_valid_item *it = b[j].it;
        memset(&it->err, 0, sizeof it->err);
        it->batched = 0;
        it->status =
            valid_run(gpu, it->img, it->v, kernel, it->out, it->nodata,
                      it->hist, it->nlabels, it->pixels, it->start, it->count,
                      it->lout, it->lnodata, it->lhist, &it->err);
      }
    first = k;
  }
}

} /* namespace */

extern "C" {

imgstat_status
imgstat_gpu_valid_stats_hist(imgstat_gpu *gpu, const imgstat_image *img,
                             const imgstat_valid *v, int kernel,
                             imgstat_partial *out, uint64_t *nodata,
                             imgstat_histogram *hist, imgstat_error *err) {
  if (!gpu || !out || !nodata)
    return imgstat_error_set(err, IMGSTAT_ERR_ARG, "no GPU context");
  return valid_run(gpu, img, v, kernel, out, nodata, hist, 0, nullptr, nullptr,
                   nullptr, nullptr, nullptr, nullptr, err);
}

imgstat_status imgstat_gpu_valid_stats(imgstat_gpu *gpu,
                                       const imgstat_image *img,
                                       const imgstat_valid *v, int kernel,
                                       imgstat_partial *out, uint64_t *nodata,
                                       imgstat_error *err) {
  return imgstat_gpu_valid_stats_hist(gpu, img, v, kernel, out, nodata, nullptr,
                                      err);
}

imgstat_status imgstat_gpu_valid_label_stats_hist(
    imgstat_gpu *gpu, const imgstat_image *img, const imgstat_valid *v,
    int kernel, uint32_t nlabels, const uint32_t *pixels, const uint64_t *start,
    const uint64_t *count, imgstat_partial *out, uint64_t *nodata,
    imgstat_histogram *hist, imgstat_error *err) {
  if (!gpu || (nlabels && (!pixels || !start || !count || !out || !nodata)))
    return imgstat_error_set(err, IMGSTAT_ERR_ARG, "no GPU context");
  if (nlabels == 0)
    return IMGSTAT_OK;
  imgstat_valid nv;
  memset(&nv, 0, sizeof nv);
  if (v) { /* the nodata values; the lists are inside the mask already */
    nv = *v;
    nv.mask = nullptr;
    nv.pixels = nullptr;
    nv.npixels = 0;
  }
  return valid_run(gpu, img, v ? &nv : nullptr, kernel, nullptr, nullptr,
                   nullptr, nlabels, pixels, start, count, out, nodata, hist,
                   err);
}

imgstat_status imgstat_gpu_valid_regions_hist(
    imgstat_gpu *gpu, const imgstat_image *img, const imgstat_valid *v,
    int kernel, imgstat_partial *out, uint64_t *nodata, imgstat_histogram *hist,
    uint32_t nlabels, const uint32_t *pixels, const uint64_t *start,
    const uint64_t *count, imgstat_partial *lout, uint64_t *lnodata,
    imgstat_histogram *lhist, imgstat_error *err) {
  if (!gpu || !out || !nodata ||
      (nlabels && (!pixels || !start || !count || !lout || !lnodata)))
    return imgstat_error_set(err, IMGSTAT_ERR_ARG, "no GPU context");
  if (nlabels == 0)
    lhist = nullptr;
  return valid_run(gpu, img, v, kernel, out, nodata, hist, nlabels, pixels,
                   start, count, lout, lnodata, lhist, err);
}

imgstat_status imgstat_gpu_valid_label_stats(
    imgstat_gpu *gpu, const imgstat_image *img, const imgstat_valid *v,
    int kernel, uint32_t nlabels, const uint32_t *pixels, const uint64_t *start,
    const uint64_t *count, imgstat_partial *out, uint64_t *nodata,
    imgstat_error *err) {
  return imgstat_gpu_valid_label_stats_hist(gpu, img, v, kernel, nlabels,
                                            pixels, start, count, out, nodata,
                                            nullptr, err);
}

imgstat_status imgstat_gpu_valid_regions_batch(imgstat_gpu *gpu, int kernel,
                                               imgstat_gpu_valid_item *items,
                                               size_t n, imgstat_error *err) {
  if (!gpu)
    return imgstat_error_set(err, IMGSTAT_ERR_ARG, "no GPU context");
  if (!items && n)
    return imgstat_error_set(err, IMGSTAT_ERR_ARG, "no items");
  batch_item *b = static_cast<batch_item *>(calloc(n ? n : 1, sizeof *b));
  if (!b)
    return imgstat_error_set(err, IMGSTAT_ERR_NOMEM, "out of memory");
  uint32_t m = 0;
  for (size_t k = 0; k < n; k++) {
    imgstat_gpu_valid_item *it = &items[k];
    memset(&it->err, 0, sizeof it->err);
    it->batched = 0;
    if (it->nlabels == 0)
      it->lhist = nullptr;
    if (!it->out || !it->nodata ||
        (it->nlabels && (!it->pixels || !it->start || !it->count || !it->lout ||
                         !it->lnodata))) {
      it->status =
          imgstat_error_set(&it->err, IMGSTAT_ERR_ARG, "no GPU context");
      continue;
    }
    it->status =
        valid_check(it->img, it->v, it->hist, it->nlabels, it->lhist, &it->err);
    if (it->status != IMGSTAT_OK)
      continue;
    if (batch_fits(it, &b[m])) {
      m++;
      continue;
    }
    it->status =
        valid_run(gpu, it->img, it->v, kernel, it->out, it->nodata, it->hist,
                  it->nlabels, it->pixels, it->start, it->count, it->lout,
                  it->lnodata, it->lhist, &it->err);
  }
  batch_run(gpu, kernel, b, m);
  free(b);
  return IMGSTAT_OK;
}

} /* extern "C" */
