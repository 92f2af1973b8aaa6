/*
 * The normalize and histogram rows of `imgstat bench`: kernel
 * timings of a synthetic 8-bit RGB image, uploaded once as a device image
 * of the given context, on that image's slot stream. Part of the program,
 * not of the library: it calls the library's internal launchers
 * (norm_internal.cuh) directly.
 */
#include "bench.h"
#include "context.cuh"
#include "norm_internal.cuh"

#include <algorithm>
#include <string.h>
#include <vector>

using namespace ist_norm_gpu;

namespace {

constexpr int kWarmRuns = 3; /* untimed runs before the timed ones */

/* Owns a device image, released at the end of the scope. */
struct HeldImage {
  imgstat_gpu *gpu;
  imgstat_gpu_image *d = nullptr;
  explicit HeldImage(imgstat_gpu *g) : gpu(g) {}
  HeldImage(const HeldImage &) = delete;
  HeldImage &operator=(const HeldImage &) = delete;
  ~HeldImage() { imgstat_gpu_image_release(gpu, d); }
};

/* Timing state: two events on one stream. */
struct Timer {
  cudaStream_t stream;
  cudaEvent_t start = nullptr, stop = nullptr;
  std::vector<float> times;
  explicit Timer(cudaStream_t s) : stream(s) {}
  Timer(const Timer &) = delete;
  Timer &operator=(const Timer &) = delete;
  ~Timer() {
    if (start)
      cudaEventDestroy(start);
    if (stop)
      cudaEventDestroy(stop);
  }
  cudaError_t init() {
    cudaError_t e = cudaEventCreate(&start);
    return e == cudaSuccess ? cudaEventCreate(&stop) : e;
  }
  /* The median of `runs` timed runs of work() (a cudaError_t), after
   * kWarmRuns untimed ones; before() runs untimed ahead of each. */
  template <typename Before, typename Work>
  cudaError_t median(int runs, double *ms_out, Before before, Work work) {
    times.clear();
    for (int r = 0; r < runs + kWarmRuns; ++r) {
      cudaError_t e = before();
      if (e == cudaSuccess)
        e = cudaEventRecord(start, stream);
      if (e == cudaSuccess)
        e = work();
      if (e == cudaSuccess)
        e = cudaEventRecord(stop, stream);
      if (e == cudaSuccess)
        e = cudaEventSynchronize(stop);
      if (e != cudaSuccess)
        return e;
      float ms = 0;
      cudaEventElapsedTime(&ms, start, stop);
      if (r >= kWarmRuns)
        times.push_back(ms);
    }
    std::sort(times.begin(), times.end());
    size_t k = times.size();
    *ms_out = k == 0 ? 0.0
                     : (k % 2 ? times[k / 2]
                              : 0.5 * (times[k / 2 - 1] + times[k / 2]));
    return cudaSuccess;
  }
  template <typename Work>
  cudaError_t median(int runs, double *ms_out, Work work) {
    return median(
        runs, ms_out, [] { return cudaSuccess; }, work);
  }
};

void fill_random(imgstat_image *img) {
  const uint64_t n = (uint64_t)img->width * img->height;
  uint64_t x = 0x9E3779B97F4A7C15ull;
  for (int c = 0; c < img->channels; ++c) {
    uint8_t *p = static_cast<uint8_t *>(img->planes[c]);
    for (uint64_t i = 0; i < n; ++i) {
      x ^= x >> 12;
      x ^= x << 25;
      x ^= x >> 27;
      p[i] = (uint8_t)((x * 0x2545F4914F6CDD1Dull) >> 56);
    }
  }
}

/* Both 8-bit histogram kernels' counts (bins: 3 x 256 on the device)
 * against the CPU's. */
cudaError_t histograms_agree(const imgstat_image *img,
                             const unsigned long long *d_bins, cudaStream_t s,
                             int *ok) {
  unsigned long long got[3 * 256];
  cudaError_t e =
      cudaMemcpyAsync(got, d_bins, sizeof got, cudaMemcpyDeviceToHost, s);
  if (e == cudaSuccess)
    e = cudaStreamSynchronize(s);
  if (e != cudaSuccess)
    return e;
  *ok = 1;
  for (int c = 0; c < 3; ++c) {
    imgstat_histogram h;
    imgstat_error herr;
    if (imgstat_histogram_compute(img, c, NULL, &h, &herr) != IMGSTAT_OK) {
      *ok = 0;
      continue;
    }
    if (memcmp(h.counts, got + 256 * c, 256 * 8) != 0)
      *ok = 0;
    imgstat_histogram_free(&h);
  }
  return cudaSuccess;
}

/* The timings once the image is up: d on its slot's stream. */
imgstat_status measure(imgstat_gpu *gpu, const imgstat_image *img,
                       const imgstat_gpu_image *d,
                       const imgstat_norm_plan *plan, int runs,
                       imgstat_gpu_norm_timing *t, imgstat_error *err) {
  const uint64_t n = (uint64_t)img->width * img->height;
  const int sms = gpu->sm_count;
  cudaStream_t s = d->slot->stream;
  Timer timer(s);
  ist_devbuf d_out, d_lut, d_bins, d_scratch, d_small;
  const size_t slot = ist_align256(n);
  IST_CUDA_TRY(timer.init(), "cudaEventCreate");
  IST_CUDA_TRY(d_out.reserve(3 * slot), "cudaMalloc");
  IST_CUDA_TRY(d_lut.reserve(3 * 256), "cudaMalloc");
  IST_CUDA_TRY(d_bins.reserve(65536 * sizeof(unsigned long long)),
               "cudaMalloc");

  /* the fused pass alone */
  uint8_t packed[3 * 256];
  uint32_t lut[256];
  for (int c = 0; c < 3; ++c) {
    imgstat_norm_plan_lut(plan, c, lut);
    for (int v = 0; v < 256; ++v)
      packed[256 * c + v] = (uint8_t)lut[v];
  }
  IST_CUDA_TRY(cudaMemcpyAsync(d_lut.p, packed, sizeof packed,
                               cudaMemcpyHostToDevice, s),
               "cudaMemcpy");
  ApplyParams p;
  memset(&p, 0, sizeof p);
  p.n = n;
  p.out_max = 255;
  for (int c = 0; c < 3; ++c) {
    p.in[c] = d->planes[c];
    p.out[c] = d_out.as<unsigned char>(slot * c);
    p.lut[c] = d_lut.as<uint8_t>(256 * c);
    p.kind[c] = IMGSTAT_MAP_STRETCH;
  }
  IST_CUDA_TRY(timer.median(runs, &t->normalize_ms,
                            [&] {
                              return apply_launch(p, IMGSTAT_U8, IMGSTAT_U8, 3,
                                                  sms, s);
                            }),
               "normalize benchmark");
  t->normalize_bytes = 2 * 3 * n;

  /* the histograms of the three planes, with both 8-bit kernels */
  unsigned long long *bins = d_bins.as<unsigned long long>();
  auto clear = [&] { return cudaMemsetAsync(bins, 0, 3 * 256 * 8, s); };
  IST_CUDA_TRY(timer.median(runs, &t->histogram_ms, clear,
                            [&] {
                              cudaError_t e = cudaSuccess;
                              for (int c = 0; c < 3 && e == cudaSuccess; ++c)
                                e = hist_launch(d->planes[c], IMGSTAT_U8, n,
                                                256, 0, 0, bins + 256 * c,
                                                nullptr, sms, s);
                              return e;
                            }),
               "normalize benchmark");
  t->histogram_bytes = 3 * n;
  IST_CUDA_TRY(histograms_agree(img, bins, s, &t->histogram_ok),
               "normalize benchmark");
  IST_CUDA_TRY(timer.median(runs, &t->histogram_alt_ms, clear,
                            [&] {
                              cudaError_t e = cudaSuccess;
                              for (int c = 0; c < 3 && e == cudaSuccess; ++c)
                                e = hist_launch_u8_atomics(
                                    static_cast<const uint8_t *>(d->planes[c]),
                                    n, bins + 256 * c, sms, s);
                              return e;
                            }),
               "normalize benchmark");
  IST_CUDA_TRY(histograms_agree(img, bins, s, &t->histogram_alt_ok),
               "normalize benchmark");

  /* the reference: a device-to-device copy of the three planes */
  IST_CUDA_TRY(timer.median(runs, &t->copy_ms,
                            [&] {
                              return cudaMemcpyAsync(
                                  d_out.p, d->planes[0], 3 * slot,
                                  cudaMemcpyDeviceToDevice, s);
                            }),
               "normalize benchmark");
  t->copy_bytes = 2 * 3 * slot;

  /* scan + rank search over 65536 bins (a 16-bit channel's histogram) */
  std::vector<unsigned long long> counts(65536);
  for (size_t i = 0; i < counts.size(); ++i)
    counts[i] = (i * 2654435761u) % 1000;
  const unsigned long long ranks[2] = {1, 1000};
  IST_CUDA_TRY(d_scratch.reserve(hist_ranks_scratch(65536)), "cudaMalloc");
  IST_CUDA_TRY(d_small.reserve(sizeof ranks + 2 * sizeof(RankHit)),
               "cudaMalloc");
  unsigned long long *d_ranks = d_small.as<unsigned long long>();
  RankHit *d_hits = d_small.as<RankHit>(sizeof ranks);
  IST_CUDA_TRY(cudaMemcpyAsync(bins, counts.data(), counts.size() * 8,
                               cudaMemcpyHostToDevice, s),
               "cudaMemcpy");
  IST_CUDA_TRY(
      cudaMemcpyAsync(d_ranks, ranks, sizeof ranks, cudaMemcpyHostToDevice, s),
      "cudaMemcpy");
  IST_CUDA_TRY(timer.median(runs, &t->scan_ms,
                            [&] {
                              return hist_ranks(bins, 65536, d_ranks, 2, d_hits,
                                                d_scratch.p, s);
                            }),
               "normalize benchmark");
  return IMGSTAT_OK;
}

} // namespace

extern "C" imgstat_status imgstat_gpu_norm_bench(imgstat_gpu *gpu,
                                                 uint32_t width,
                                                 uint32_t height, int runs,
                                                 imgstat_gpu_norm_timing *t,
                                                 imgstat_error *err) {
  if (!gpu || !t || width == 0 || height == 0)
    return imgstat_error_set(err, IMGSTAT_ERR_ARG, "invalid bench arguments");
  memset(t, 0, sizeof *t);
  if (runs < 1)
    runs = 20;
  imgstat_image img, gout, cout;
  memset(&gout, 0, sizeof gout);
  memset(&cout, 0, sizeof cout);
  imgstat_status st = imgstat_image_alloc(&img, width, height, 3, IMGSTAT_U8,
                                          IMGSTAT_MAX_PIXELS_LIMIT, err);
  if (st != IMGSTAT_OK)
    return st;
  fill_random(&img);
  /* a stretch that changes most values: [7, 250] to [0, 255] */
  imgstat_norm_plan plan;
  memset(&plan, 0, sizeof plan);
  plan.in_sample = plan.out_sample = IMGSTAT_U8;
  plan.channels_out = 3;
  for (int c = 0; c < 3; ++c) {
    plan.source[c] = c;
    plan.map[c].kind = IMGSTAT_MAP_STRETCH;
    plan.map[c].a = 7;
    plan.map[c].b = 250;
  }
  {
    HeldImage held(gpu);
    st = imgstat_gpu_image_upload(gpu, &img, &held.d, err);
    /* correctness: the device's bytes against the CPU's on the same plan */
    if (st == IMGSTAT_OK)
      st = imgstat_gpu_image_norm_apply(gpu, held.d, &plan, &gout, err);
    if (st == IMGSTAT_OK)
      st = imgstat_norm_apply_cpu(&img, &plan, 0, &cout, err);
    if (st == IMGSTAT_OK) {
      const uint64_t n = (uint64_t)width * height;
      t->checked_ok = 1;
      for (int c = 0; c < 3; ++c)
        t->checked_ok &= memcmp(gout.planes[c], cout.planes[c], n) == 0;
      cudaError_t e = ist_gpu_enter(gpu);
      st = e == cudaSuccess ? measure(gpu, &img, held.d, &plan, runs, t, err)
                            : ist_cuda_fail(err, e, "cudaSetDevice");
    }
  }
  imgstat_image_free(&gout);
  imgstat_image_free(&cout);
  imgstat_image_free(&img);
  return st;
}
