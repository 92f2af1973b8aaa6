/*
 * Normalization on the device: measure (statistics reduction or histograms
 * with a device scan), make the plan on the host with the CPU's own
 * imgstat_norm_plan_make, then one fused read-transform-write pass.
 *
 * Why the output equals the CPU's byte for byte: for 8/16-bit input the pass
 * applies the lookup table the host built with exact integer arithmetic
 * (imgstat_norm_plan_lut), the same table the CPU applies; for float input
 * it evaluates the formulas of src/norm_map.h, which are single IEEE double
 * operations and rint, correctly rounded on both sides.
 *
 * The pass: each thread reads 16 bytes (16 u8, 8 u16 or 4 f32 samples) with
 * one vector load and writes its outputs with 4- to 16-byte vector stores;
 * blockIdx.y is the output channel, so all planes go in one launch. 8-bit
 * tables live in shared memory; 16-bit tables (64-256 KB) are read through
 * the read-only cache.
 */
#include "norm_internal.cuh"
#include "norm_map.h"

#include <algorithm>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <vector>

namespace ist_norm_gpu {

namespace {

constexpr int kApplyBlock = 256;

struct ApplyParams {
  const void *in[IMGSTAT_MAX_CHANNELS];
  void *out[IMGSTAT_MAX_CHANNELS];
  const void *lut[IMGSTAT_MAX_CHANNELS];
  int kind[IMGSTAT_MAX_CHANNELS];
  double a[IMGSTAT_MAX_CHANNELS];
  double b[IMGSTAT_MAX_CHANNELS];
  uint64_t n;
  uint32_t out_max;
};

/* Stores BYTES bytes (4, 8, 16, 32 or 64) from registers with the widest
 * aligned vector stores. */
template <int BYTES>
__device__ __forceinline__ void store_vec(void *dst, const void *src) {
  if constexpr (BYTES >= 16) {
#pragma unroll
    for (int k = 0; k < BYTES / 16; ++k)
      reinterpret_cast<uint4 *>(dst)[k] =
          reinterpret_cast<const uint4 *>(src)[k];
  } else if constexpr (BYTES == 8) {
    *reinterpret_cast<uint2 *>(dst) = *reinterpret_cast<const uint2 *>(src);
  } else {
    *reinterpret_cast<unsigned int *>(dst) =
        *reinterpret_cast<const unsigned int *>(src);
  }
}

template <typename In, typename Out>
__device__ __forceinline__ Out map_one(In x, const Out *lut, int kind, double a,
                                       double b, uint32_t out_max) {
  if constexpr (sizeof(In) == 4) {
    if constexpr (sizeof(Out) == 4)
      return ist_map_f32_f32(x, kind, a, b);
    else
      return (Out)ist_map_f32_int(x, kind, a, b, out_max);
  } else if constexpr (sizeof(In) == 1) {
    return lut[x]; /* shared memory */
  } else {
    return __ldg(lut + x);
  }
}

template <typename In, typename Out>
__global__ void __launch_bounds__(kApplyBlock)
    apply_kernel(const ApplyParams p) {
  constexpr int kItems = 16 / (int)sizeof(In);
  __shared__ Out s_lut[256];
  const int o = blockIdx.y;
  const In *__restrict__ in = static_cast<const In *>(p.in[o]);
  Out *__restrict__ out = static_cast<Out *>(p.out[o]);
  const Out *lut = static_cast<const Out *>(p.lut[o]);
  if constexpr (sizeof(In) == 1) {
    for (int i = threadIdx.x; i < 256; i += blockDim.x)
      s_lut[i] = lut[i];
    __syncthreads();
    lut = s_lut;
  }
  const int kind = p.kind[o];
  const double a = p.a[o], b = p.b[o];
  const uint64_t n = p.n;
  const uint64_t nvec = n / kItems;
  const uint64_t stride = (uint64_t)gridDim.x * blockDim.x;
  const uint64_t first = (uint64_t)blockIdx.x * blockDim.x + threadIdx.x;
  for (uint64_t v = first; v < nvec; v += stride) {
    union {
      uint4 raw;
      In x[kItems];
    } src;
    src.raw = __ldg(reinterpret_cast<const uint4 *>(in) + v);
    union {
      Out y[kItems];
      uint4 align[(kItems * sizeof(Out) + 15) / 16];
    } dst;
#pragma unroll
    for (int j = 0; j < kItems; ++j)
      dst.y[j] = map_one<In, Out>(src.x[j], lut, kind, a, b, p.out_max);
    store_vec<kItems *(int)sizeof(Out)>(out + v * kItems, dst.y);
  }
  for (uint64_t i = nvec * kItems + first; i < n; i += stride)
    out[i] = map_one<In, Out>(in[i], lut, kind, a, b, p.out_max);
}

template <typename In, typename Out>
cudaError_t launch_apply(const ApplyParams &p, int channels, int sm_count,
                         cudaStream_t stream) {
  const uint64_t items = 16 / sizeof(In);
  uint64_t want = (p.n / items + kApplyBlock - 1) / kApplyBlock;
  uint64_t cap = (uint64_t)sm_count * 16 / (uint64_t)channels + 1;
  unsigned grid = (unsigned)std::max<uint64_t>(1, std::min(want, cap));
  dim3 g(grid, (unsigned)channels);
  cudaError_t e = ist_cuda_launch_gate();
  if (e != cudaSuccess)
    return e;
  apply_kernel<In, Out><<<g, kApplyBlock, 0, stream>>>(p);
  return cudaGetLastError();
}

cudaError_t launch_apply_any(const ApplyParams &p, imgstat_sample in,
                             imgstat_sample out, int channels, int sm_count,
                             cudaStream_t s) {
#define IMGSTAT_APPLY_CASE(SI, TI, SO, TO)                                     \
  if (in == SI && out == SO)                                                   \
    return launch_apply<TI, TO>(p, channels, sm_count, s);
  IMGSTAT_APPLY_CASE(IMGSTAT_U8, uint8_t, IMGSTAT_U8, uint8_t)
  IMGSTAT_APPLY_CASE(IMGSTAT_U8, uint8_t, IMGSTAT_U16, uint16_t)
  IMGSTAT_APPLY_CASE(IMGSTAT_U8, uint8_t, IMGSTAT_F32, float)
  IMGSTAT_APPLY_CASE(IMGSTAT_U16, uint16_t, IMGSTAT_U8, uint8_t)
  IMGSTAT_APPLY_CASE(IMGSTAT_U16, uint16_t, IMGSTAT_U16, uint16_t)
  IMGSTAT_APPLY_CASE(IMGSTAT_U16, uint16_t, IMGSTAT_F32, float)
  IMGSTAT_APPLY_CASE(IMGSTAT_F32, float, IMGSTAT_U8, uint8_t)
  IMGSTAT_APPLY_CASE(IMGSTAT_F32, float, IMGSTAT_U16, uint16_t)
  IMGSTAT_APPLY_CASE(IMGSTAT_F32, float, IMGSTAT_F32, float)
#undef IMGSTAT_APPLY_CASE
  return cudaErrorInvalidValue;
}

/* The image's planes on the device, each at a 256-byte boundary. */
struct DevImage {
  DevBuf buf;
  size_t slot = 0;
  int channels = 0;
  void *plane(int c) const {
    return static_cast<unsigned char *>(buf.p) + slot * (size_t)c;
  }
};

imgstat_status upload(const imgstat_image *img, DevImage *d,
                      cudaStream_t stream, imgstat_error *err) {
  const size_t bytes = (size_t)img->width * img->height * img->sample;
  d->slot = plane_slot(bytes);
  d->channels = img->channels;
  cudaError_t e = d->buf.alloc(d->slot * img->channels);
  if (e != cudaSuccess)
    return ist_cuda_fail(err, e, "cudaMalloc (image)");
  for (int c = 0; c < img->channels; ++c)
    if ((e = cudaMemcpyAsync(d->plane(c), img->planes[c], bytes,
                             cudaMemcpyHostToDevice, stream)) != cudaSuccess)
      return ist_cuda_fail(err, e, "cudaMemcpy (image)");
  return IMGSTAT_OK;
}

uint32_t sample_max(imgstat_sample s) {
  return s == IMGSTAT_U8 ? 255u : (s == IMGSTAT_U16 ? 65535u : 1u);
}

/* Applies plan to the device image din into a new host image *out. */
imgstat_status apply_device(const imgstat_image *in, const DevImage &din,
                            const imgstat_norm_plan *plan, imgstat_image *out,
                            int sm_count, cudaStream_t stream,
                            imgstat_error *err) {
  const uint64_t n = (uint64_t)in->width * in->height;
  imgstat_status st =
      imgstat_image_alloc(out, in->width, in->height, plan->channels_out,
                          plan->out_sample, IMGSTAT_MAX_PIXELS_LIMIT, err);
  if (st != IMGSTAT_OK)
    return st;
  out->format = in->format;
  const size_t out_bytes = (size_t)n * plan->out_sample;
  DevImage dout;
  dout.slot = plane_slot(out_bytes);
  dout.channels = plan->channels_out;
  cudaError_t e = dout.buf.alloc(dout.slot * plan->channels_out);
  if (e != cudaSuccess) {
    imgstat_image_free(out);
    return ist_cuda_fail(err, e, "cudaMalloc (output)");
  }
  ApplyParams p;
  memset(&p, 0, sizeof p);
  p.n = n;
  p.out_max = sample_max(plan->out_sample);
  DevBuf d_lut;
  const size_t entries =
      in->sample == IMGSTAT_F32 ? 0 : (size_t)sample_max(in->sample) + 1;
  if (entries) {
    /* the host's exact table, narrowed to the output type */
    const size_t lut_bytes = entries * plan->out_sample;
    const size_t lut_slot = plane_slot(lut_bytes);
    std::vector<uint32_t> lut(entries);
    std::vector<unsigned char> packed(lut_slot * plan->channels_out);
    for (int o = 0; o < plan->channels_out; ++o) {
      imgstat_norm_plan_lut(plan, o, lut.data());
      unsigned char *dst = packed.data() + lut_slot * o;
      for (size_t x = 0; x < entries; ++x) {
        if (plan->out_sample == IMGSTAT_U8) {
          dst[x] = (unsigned char)lut[x];
        } else if (plan->out_sample == IMGSTAT_U16) {
          uint16_t v = (uint16_t)lut[x];
          memcpy(dst + 2 * x, &v, 2);
        } else {
          memcpy(dst + 4 * x, &lut[x], 4);
        }
      }
    }
    if ((e = d_lut.alloc(packed.size())) != cudaSuccess ||
        (e = cudaMemcpyAsync(d_lut.p, packed.data(), packed.size(),
                             cudaMemcpyHostToDevice, stream)) != cudaSuccess) {
      imgstat_image_free(out);
      return ist_cuda_fail(err, e, "lookup tables");
    }
    for (int o = 0; o < plan->channels_out; ++o)
      p.lut[o] = d_lut.as<unsigned char>() + lut_slot * o;
  }
  for (int o = 0; o < plan->channels_out; ++o) {
    p.in[o] = din.plane(plan->source[o]);
    p.out[o] = dout.plane(o);
    p.kind[o] = (int)plan->map[o].kind;
    p.a[o] = plan->map[o].a;
    p.b[o] = plan->map[o].b;
  }
  if (n > 0) {
    e = launch_apply_any(p, in->sample, plan->out_sample, plan->channels_out,
                         sm_count, stream);
    if (e != cudaSuccess) {
      imgstat_image_free(out);
      return ist_cuda_fail(err, e, "normalize kernel");
    }
  }
  for (int o = 0; o < plan->channels_out && e == cudaSuccess; ++o)
    e = cudaMemcpyAsync(out->planes[o], dout.plane(o), out_bytes,
                        cudaMemcpyDeviceToHost, stream);
  if (e == cudaSuccess)
    e = cudaStreamSynchronize(stream);
  if (e != cudaSuccess) {
    imgstat_image_free(out);
    return ist_cuda_fail(err, e, "normalize (copy back)");
  }
  return IMGSTAT_OK;
}

bool is_alpha(int channels, int c) {
  return imgstat_channel_is_alpha(channels, c) != 0;
}

/* The measurements of imgstat_norm_measure_cpu, from the device planes. */
imgstat_status measure_device(const imgstat_image *img, const DevImage &d,
                              const imgstat_norm_options *o,
                              imgstat_norm_measure *m, int sm_count,
                              cudaStream_t stream, imgstat_error *err) {
  memset(m, 0, sizeof *m);
  const uint64_t n = (uint64_t)img->width * img->height;
  imgstat_status st;
  if (o->mode == IMGSTAT_NORM_GIVEN)
    return IMGSTAT_OK;
  if (o->mode == IMGSTAT_NORM_MINMAX || o->mode == IMGSTAT_NORM_ZSCORE) {
    for (int c = 0; c < img->channels; ++c) {
      imgstat_partial part;
      st = device_stats(d.plane(c), img->sample, n, &part, stream, err);
      if (st != IMGSTAT_OK)
        return st;
      imgstat_figures f;
      imgstat_figures_compute(&part, img->sample, img->width, 0, &f);
      m->has_values[c] = f.has_values;
      m->lo[c] = f.has_values ? f.min : 0;
      m->hi[c] = f.has_values ? f.max : 0;
      m->mean[c] = f.has_values ? f.mean : 0;
      m->std[c] = f.has_std ? f.std : 0;
    }
    if (o->mode == IMGSTAT_NORM_MINMAX && o->linked)
      imgstat_norm_measure_link(img->channels, m);
    return IMGSTAT_OK;
  }
  /* clip: the CPU's measure_clip (normalize.c), step for step */
  const bool f32 = img->sample == IMGSTAT_F32;
  double range_lo[IMGSTAT_MAX_CHANNELS] = {0},
         range_hi[IMGSTAT_MAX_CHANNELS] = {0};
  int range_any[IMGSTAT_MAX_CHANNELS] = {0};
  if (f32) {
    for (int c = 0; c < img->channels; ++c) {
      imgstat_partial part;
      st = device_stats(d.plane(c), img->sample, n, &part, stream, err);
      if (st != IMGSTAT_OK)
        return st;
      range_any[c] = part.count > 0;
      range_lo[c] = range_any[c] ? part.min : 0.0;
      range_hi[c] = range_any[c] ? part.max : 0.0;
    }
  }
  const double p[2] = {o->clip_low, o->clip_high};
  double v[2];
  int has = 0;
  if (o->linked) {
    double lo = 0, hi = 0;
    int any = 0;
    const void *planes[IMGSTAT_MAX_CHANNELS];
    int np = 0;
    for (int c = 0; c < img->channels; ++c) {
      if (is_alpha(img->channels, c))
        continue;
      planes[np++] = d.plane(c);
      if (f32 && range_any[c]) {
        lo = any ? fmin(lo, range_lo[c]) : range_lo[c];
        hi = any ? fmax(hi, range_hi[c]) : range_hi[c];
        any = 1;
      }
    }
    imgstat_histogram h;
    st = imgstat_histogram_alloc(&h, img->sample, o->float_bins, lo, hi, err);
    if (st != IMGSTAT_OK)
      return st;
    st = hist_percentiles(planes, np, n, &h, 0, p, 2, v, &has, sm_count, stream,
                          err);
    imgstat_histogram_free(&h);
    if (st != IMGSTAT_OK)
      return st;
    for (int c = 0; c < img->channels; ++c) {
      if (is_alpha(img->channels, c))
        continue;
      m->has_values[c] = has;
      m->lo[c] = has ? v[0] : 0;
      m->hi[c] = has ? v[1] : 0;
    }
  }
  for (int c = 0; c < img->channels; ++c) {
    bool alpha = is_alpha(img->channels, c);
    if (alpha && o->alpha != IMGSTAT_ALPHA_NORMALIZE)
      continue;
    if (o->linked && !alpha)
      continue;
    imgstat_histogram h;
    st = imgstat_histogram_alloc(&h, img->sample, o->float_bins, range_lo[c],
                                 range_hi[c], err);
    if (st != IMGSTAT_OK)
      return st;
    const void *planes[1] = {d.plane(c)};
    st = hist_percentiles(planes, 1, n, &h, 0, p, 2, v, &has, sm_count, stream,
                          err);
    imgstat_histogram_free(&h);
    if (st != IMGSTAT_OK)
      return st;
    m->has_values[c] = has;
    if (has) {
      m->lo[c] = v[0];
      m->hi[c] = v[1];
    }
  }
  return IMGSTAT_OK;
}

imgstat_status check_input(imgstat_gpu *gpu, const imgstat_image *img,
                           imgstat_error *err) {
  if (!gpu)
    return imgstat_error_set(err, IMGSTAT_ERR_ARG, "no GPU context");
  if (!img || !img->data || img->channels < 1 ||
      img->channels > IMGSTAT_MAX_CHANNELS || img->width == 0 ||
      img->height == 0)
    return imgstat_error_set(err, IMGSTAT_ERR_ARG, "no image");
  return IMGSTAT_OK;
}

} // namespace

} // namespace ist_norm_gpu

using namespace ist_norm_gpu;

extern "C" {

imgstat_status imgstat_gpu_normalize(imgstat_gpu *gpu, const imgstat_image *img,
                                     const imgstat_norm_options *opts,
                                     imgstat_norm_measure *m_out,
                                     imgstat_norm_plan *plan_out,
                                     imgstat_image *out, imgstat_error *err) {
  if (out)
    memset(out, 0, sizeof *out);
  imgstat_status st = check_input(gpu, img, err);
  if (st != IMGSTAT_OK)
    return st;
  if (!opts || !out)
    return imgstat_error_set(err, IMGSTAT_ERR_ARG, "no options or output");
  if ((st = imgstat_norm_options_check(img, opts, err)) != IMGSTAT_OK)
    return st;
  const int sms = current_sm_count();
  cudaStream_t stream = 0;
  DevImage d;
  if ((st = upload(img, &d, stream, err)) != IMGSTAT_OK)
    return st;
  imgstat_norm_measure m;
  if ((st = measure_device(img, d, opts, &m, sms, stream, err)) != IMGSTAT_OK)
    return st;
  imgstat_norm_plan plan;
  if ((st = imgstat_norm_plan_make(img, opts, &m, &plan, err)) != IMGSTAT_OK)
    return st;
  if (m_out)
    *m_out = m;
  if (plan_out)
    *plan_out = plan;
  return apply_device(img, d, &plan, out, sms, stream, err);
}

imgstat_status imgstat_gpu_norm_apply(imgstat_gpu *gpu, const imgstat_image *in,
                                      const imgstat_norm_plan *plan,
                                      imgstat_image *out, imgstat_error *err) {
  if (out)
    memset(out, 0, sizeof *out);
  imgstat_status st = check_input(gpu, in, err);
  if (st != IMGSTAT_OK)
    return st;
  if (!plan || !out || plan->in_sample != in->sample ||
      plan->channels_out < 1 || plan->channels_out > IMGSTAT_MAX_CHANNELS)
    return imgstat_error_set(err, IMGSTAT_ERR_ARG,
                             "the plan does not fit the image");
  for (int o = 0; o < plan->channels_out; ++o)
    if (plan->source[o] < 0 || plan->source[o] >= in->channels)
      return imgstat_error_set(err, IMGSTAT_ERR_ARG,
                               "the plan does not fit the image");
  DevImage d;
  if ((st = upload(in, &d, 0, err)) != IMGSTAT_OK)
    return st;
  return apply_device(in, d, plan, out, current_sm_count(), 0, err);
}

static double median_of(std::vector<float> &v) {
  std::sort(v.begin(), v.end());
  size_t k = v.size();
  return k == 0 ? 0.0 : (k % 2 ? v[k / 2] : 0.5 * (v[k / 2 - 1] + v[k / 2]));
}

imgstat_status imgstat_gpu_norm_bench(imgstat_gpu *gpu, uint32_t width,
                                      uint32_t height, int runs,
                                      imgstat_gpu_norm_timing *t,
                                      imgstat_error *err) {
  if (!gpu || !t || width == 0 || height == 0)
    return imgstat_error_set(err, IMGSTAT_ERR_ARG, "invalid bench arguments");
  memset(t, 0, sizeof *t);
  if (runs < 1)
    runs = 20;
  imgstat_image img;
  imgstat_status st = imgstat_image_alloc(&img, width, height, 3, IMGSTAT_U8,
                                          IMGSTAT_MAX_PIXELS_LIMIT, err);
  if (st != IMGSTAT_OK)
    return st;
  const uint64_t n = (uint64_t)width * height;
  uint64_t x = 0x9E3779B97F4A7C15ull;
  for (int c = 0; c < 3; ++c) {
    uint8_t *p = static_cast<uint8_t *>(img.planes[c]);
    for (uint64_t i = 0; i < n; ++i) {
      x ^= x >> 12;
      x ^= x << 25;
      x ^= x >> 27;
      p[i] = (uint8_t)((x * 0x2545F4914F6CDD1Dull) >> 56);
    }
  }
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
  const int sms = current_sm_count();
  cudaStream_t s = 0;
  DevImage d;
  imgstat_image gout, cout;
  memset(&gout, 0, sizeof gout);
  memset(&cout, 0, sizeof cout);
  cudaEvent_t e0 = nullptr, e1 = nullptr;
  std::vector<float> times;
  cudaError_t e = cudaSuccess;
  DevBuf d_bins, d_scratch, d_ranks, d_hits, d_lut;
  DevImage dout;
  ApplyParams p;
  memset(&p, 0, sizeof p);
  if ((st = upload(&img, &d, s, err)) != IMGSTAT_OK)
    goto done;
  /* correctness: the device's bytes against the CPU's on the same plan */
  if ((st = apply_device(&img, d, &plan, &gout, sms, s, err)) != IMGSTAT_OK ||
      (st = imgstat_norm_apply_cpu(&img, &plan, 0, &cout, err)) != IMGSTAT_OK)
    goto done;
  t->checked_ok = 1;
  for (int c = 0; c < 3; ++c)
    t->checked_ok &= memcmp(gout.planes[c], cout.planes[c], n) == 0;
  /* the fused pass alone */
  dout.slot = plane_slot(n);
  if ((e = dout.buf.alloc(dout.slot * 3)) != cudaSuccess ||
      (e = d_lut.alloc(3 * 256)) != cudaSuccess ||
      (e = cudaEventCreate(&e0)) != cudaSuccess ||
      (e = cudaEventCreate(&e1)) != cudaSuccess)
    goto cuda_failed;
  {
    std::vector<uint32_t> lut(256);
    std::vector<uint8_t> packed(3 * 256);
    for (int c = 0; c < 3; ++c) {
      imgstat_norm_plan_lut(&plan, c, lut.data());
      for (int v = 0; v < 256; ++v)
        packed[256 * c + v] = (uint8_t)lut[v];
    }
    if ((e = cudaMemcpy(d_lut.p, packed.data(), packed.size(),
                        cudaMemcpyHostToDevice)) != cudaSuccess)
      goto cuda_failed;
  }
  p.n = n;
  p.out_max = 255;
  for (int c = 0; c < 3; ++c) {
    p.in[c] = d.plane(c);
    p.out[c] = dout.plane(c);
    p.lut[c] = d_lut.as<uint8_t>() + 256 * c;
    p.kind[c] = IMGSTAT_MAP_STRETCH;
  }
  for (int r = 0; r < runs + 3; ++r) {
    if ((e = cudaEventRecord(e0, s)) != cudaSuccess ||
        (e = launch_apply<uint8_t, uint8_t>(p, 3, sms, s)) != cudaSuccess ||
        (e = cudaEventRecord(e1, s)) != cudaSuccess ||
        (e = cudaEventSynchronize(e1)) != cudaSuccess)
      goto cuda_failed;
    float ms = 0;
    cudaEventElapsedTime(&ms, e0, e1);
    if (r >= 3)
      times.push_back(ms);
  }
  t->normalize_ms = median_of(times);
  t->normalize_bytes = 2 * 3 * n;
  /* the histograms of the three planes */
  times.clear();
  if ((e = d_bins.alloc(65536 * sizeof(unsigned long long))) != cudaSuccess)
    goto cuda_failed;
  for (int r = 0; r < runs + 3; ++r) {
    if ((e = cudaMemsetAsync(d_bins.p, 0, 3 * 256 * 8, s)) != cudaSuccess ||
        (e = cudaEventRecord(e0, s)) != cudaSuccess)
      goto cuda_failed;
    for (int c = 0; c < 3 && e == cudaSuccess; ++c)
      e = hist_launch(d.plane(c), IMGSTAT_U8, n, 256, 0, 0,
                      d_bins.as<unsigned long long>() + 256 * c, nullptr, sms,
                      s);
    if (e != cudaSuccess || (e = cudaEventRecord(e1, s)) != cudaSuccess ||
        (e = cudaEventSynchronize(e1)) != cudaSuccess)
      goto cuda_failed;
    float ms = 0;
    cudaEventElapsedTime(&ms, e0, e1);
    if (r >= 3)
      times.push_back(ms);
  }
  t->histogram_ms = median_of(times);
  t->histogram_bytes = 3 * n;
  {
    /* both 8-bit kernels' counts against the CPU's */
    unsigned long long got[3 * 256];
    t->histogram_ok = 1;
    t->histogram_alt_ok = 1;
    for (int variant = 0; variant < 2; ++variant) {
      if (variant == 1) {
        times.clear();
        for (int r = 0; r < runs + 3; ++r) {
          if ((e = cudaMemsetAsync(d_bins.p, 0, 3 * 256 * 8, s)) !=
                  cudaSuccess ||
              (e = cudaEventRecord(e0, s)) != cudaSuccess)
            goto cuda_failed;
          for (int c = 0; c < 3 && e == cudaSuccess; ++c)
            e = hist_launch_u8_atomics(
                static_cast<const uint8_t *>(d.plane(c)), n,
                d_bins.as<unsigned long long>() + 256 * c, sms, s);
          if (e != cudaSuccess || (e = cudaEventRecord(e1, s)) != cudaSuccess ||
              (e = cudaEventSynchronize(e1)) != cudaSuccess)
            goto cuda_failed;
          float ms = 0;
          cudaEventElapsedTime(&ms, e0, e1);
          if (r >= 3)
            times.push_back(ms);
        }
        t->histogram_alt_ms = median_of(times);
      }
      if ((e = cudaMemcpy(got, d_bins.p, sizeof got, cudaMemcpyDeviceToHost)) !=
          cudaSuccess)
        goto cuda_failed;
      for (int c = 0; c < 3; ++c) {
        imgstat_histogram h;
        imgstat_error herr;
        if (imgstat_histogram_compute(&img, c, NULL, &h, &herr) != IMGSTAT_OK) {
          t->histogram_ok = t->histogram_alt_ok = 0;
          continue;
        }
        if (memcmp(h.counts, got + 256 * c, 256 * 8) != 0)
          (variant ? t->histogram_alt_ok : t->histogram_ok) = 0;
        imgstat_histogram_free(&h);
      }
    }
  }
  /* the reference: a device-to-device copy of the three planes */
  times.clear();
  for (int r = 0; r < runs + 3; ++r) {
    if ((e = cudaEventRecord(e0, s)) != cudaSuccess ||
        (e = cudaMemcpyAsync(dout.buf.p, d.buf.p, 3 * dout.slot,
                             cudaMemcpyDeviceToDevice, s)) != cudaSuccess ||
        (e = cudaEventRecord(e1, s)) != cudaSuccess ||
        (e = cudaEventSynchronize(e1)) != cudaSuccess)
      goto cuda_failed;
    float ms = 0;
    cudaEventElapsedTime(&ms, e0, e1);
    if (r >= 3)
      times.push_back(ms);
  }
  t->copy_ms = median_of(times);
  t->copy_bytes = 2 * 3 * dout.slot;
  /* scan + rank search over 65536 bins (a 16-bit channel's histogram) */
  times.clear();
  {
    std::vector<unsigned long long> bins(65536);
    for (size_t i = 0; i < bins.size(); ++i)
      bins[i] = (i * 2654435761u) % 1000;
    unsigned long long ranks[2] = {1, 1000};
    if ((e = d_scratch.alloc(hist_ranks_scratch(65536))) != cudaSuccess ||
        (e = d_ranks.alloc(sizeof ranks)) != cudaSuccess ||
        (e = d_hits.alloc(2 * sizeof(RankHit))) != cudaSuccess ||
        (e = cudaMemcpy(d_bins.p, bins.data(), bins.size() * 8,
                        cudaMemcpyHostToDevice)) != cudaSuccess ||
        (e = cudaMemcpy(d_ranks.p, ranks, sizeof ranks,
                        cudaMemcpyHostToDevice)) != cudaSuccess)
      goto cuda_failed;
    for (int r = 0; r < runs + 3; ++r) {
      if ((e = cudaEventRecord(e0, s)) != cudaSuccess ||
          (e = hist_ranks(d_bins.as<unsigned long long>(), 65536,
                          d_ranks.as<unsigned long long>(), 2,
                          d_hits.as<RankHit>(), d_scratch.p, s)) !=
              cudaSuccess ||
          (e = cudaEventRecord(e1, s)) != cudaSuccess ||
          (e = cudaEventSynchronize(e1)) != cudaSuccess)
        goto cuda_failed;
      float ms = 0;
      cudaEventElapsedTime(&ms, e0, e1);
      if (r >= 3)
        times.push_back(ms);
    }
    t->scan_ms = median_of(times);
  }
  goto done;
cuda_failed:
  st = ist_cuda_fail(err, e, "normalize benchmark");
done:
  if (e0)
    cudaEventDestroy(e0);
  if (e1)
    cudaEventDestroy(e1);
  imgstat_image_free(&gout);
  imgstat_image_free(&cout);
  imgstat_image_free(&img);
  return st;
}

} /* extern "C" */
