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
 * one vector load and writes its outputs with 4- to 16-byte vector stores
 * (planes not at 16-byte boundaries, which only wrapped device images can
 * have, go sample by sample); blockIdx.y is the output channel, so all
 * planes go in one launch. 8-bit tables live in shared memory; 16-bit tables
 * (64-256 KB) are read through the read-only cache. Everything runs on the
 * device image's slot (context.cuh): its stream, its output and table
 * buffers, and its pinned staging buffers for the tables on their way up
 * (in turns of as many tables as half a buffer holds).
 */
#include "norm_internal.cuh"
#include "norm_map.h"
#include "reduce.cuh"
#include "warp.cuh"

#include <algorithm>
#include <math.h>
#include <string.h>

namespace ist_norm_gpu {

namespace {

constexpr int kApplyBlock = 256;

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
    apply_kernel(const ApplyGroup p) {
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
  const uint64_t nvec = p.vectors ? n / kItems : 0;
  const uint64_t stride = ist_grid_threads();
  const uint64_t first = ist_grid_thread();
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
    ist_store_vec<kItems *(int)sizeof(Out)>(out + v * kItems, dst.y);
  }
  for (uint64_t i = nvec * kItems + first; i < n; i += stride)
    out[i] = map_one<In, Out>(in[i], lut, kind, a, b, p.out_max);
}

template <typename In, typename Out>
cudaError_t launch_apply(const ApplyGroup &p, int channels, int sm_count,
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

uint32_t sample_max(imgstat_sample s) {
  return s == IMGSTAT_U8 ? 255u : (s == IMGSTAT_U16 ? 65535u : 1u);
}

/* Packs the lookup tables of output channels [first, first + count) of
 * the plan, narrowed to the output type, into `to` (lut_slot bytes each),
 * through `wide` (one table of 32-bit entries). */
void pack_tables(const imgstat_norm_plan *plan, int first, int count,
                 size_t entries, size_t lut_slot, uint32_t *wide,
                 unsigned char *to) {
  for (int k = 0; k < count; ++k) {
    imgstat_norm_plan_lut(plan, first + k, wide);
    unsigned char *dst = to + lut_slot * k;
    for (size_t x = 0; x < entries; ++x) {
      if (plan->out_sample == IMGSTAT_U8) {
        dst[x] = (unsigned char)wide[x];
      } else if (plan->out_sample == IMGSTAT_U16) {
        uint16_t v = (uint16_t)wide[x];
        memcpy(dst + 2 * x, &v, 2);
      } else {
        memcpy(dst + 4 * x, &wide[x], 4);
      }
    }
  }
}

/* The host's exact tables of every output channel of plan (entries each)
 * sent up into the slot's norm_lut, lut_slot bytes apart: packed in turns
 * of as many tables as half a staging buffer holds (at least one: a table
 * is at most 256 KiB, the 32-bit table beside them at most as much), the
 * two staging buffers used in turn, so any number of channels goes. */
cudaError_t upload_tables(ist_slot *s, const imgstat_norm_plan *plan,
                          size_t entries, size_t lut_slot) {
  const size_t half = kIstStagingBytes / 2;
  static_assert(kIstStagingBytes / 2 >= (size_t)65536 * 4,
                "half a staging buffer holds a 16-bit input's table");
  const int per_turn = (int)(half / lut_slot);
  cudaError_t e = s->norm_lut.reserve(lut_slot * (size_t)plan->channels_out);
  for (int first = 0; e == cudaSuccess && first < plan->channels_out;
       first += per_turn) {
    const int count = std::min(per_turn, plan->channels_out - first);
    unsigned k = 0;
    unsigned char *stage = nullptr;
    if ((e = ist_slot_staging(s, &k, &stage)) != cudaSuccess)
      break;
    pack_tables(plan, first, count, entries, lut_slot,
                reinterpret_cast<uint32_t *>(stage + half), stage);
    e = cudaMemcpyAsync(s->norm_lut.as<unsigned char>(lut_slot * first), stage,
                        lut_slot * (size_t)count, cudaMemcpyHostToDevice,
                        s->stream);
    if (e == cudaSuccess)
      e = ist_slot_staged(s, k);
  }
  return e;
}

/* Applies plan to the device image d into a new host image *out, on d's
 * slot: the output planes in the slot's norm_out, then copied back. */
/* The fused pass of plan over d into outs[0..channels_out-1] (device
 * planes of width * height output samples), queued on the slot's stream:
 * the lookup tables sent up, the kernel launched. */
imgstat_status apply_into(imgstat_gpu *gpu, const imgstat_gpu_image *d,
                          const imgstat_norm_plan *plan, void *const outs[],
                          imgstat_error *err) {
  ist_slot *s = d->slot;
  cudaError_t e = cudaSuccess;
  ApplyParams p;
  memset(&p, 0, sizeof p);
  p.n = (uint64_t)d->width * d->height;
  p.out_max = sample_max(plan->out_sample);
  const size_t entries =
      d->sample == IMGSTAT_F32 ? 0 : (size_t)sample_max(d->sample) + 1;
  if (entries) {
    const size_t lut_slot = ist_align256(entries * plan->out_sample);
    if ((e = upload_tables(s, plan, entries, lut_slot)) != cudaSuccess)
      return ist_cuda_fail(err, e, "lookup tables");
    for (int o = 0; o < plan->channels_out; ++o)
      p.lut[o] = s->norm_lut.as<unsigned char>(lut_slot * o);
  }
  for (int o = 0; o < plan->channels_out; ++o) {
    p.in[o] = d->planes[plan->source[o]];
    p.out[o] = outs[o];
    p.kind[o] = (int)plan->map[o].kind;
    p.a[o] = plan->map[o].a;
    p.b[o] = plan->map[o].b;
  }
  if (p.n > 0) {
    e = apply_launch(p, d->sample, plan->out_sample, plan->channels_out,
                     gpu->sm_count, s->stream);
    if (e != cudaSuccess)
      return ist_cuda_fail(err, e, "normalize kernel");
  }
  return IMGSTAT_OK;
}

/* The output planes of plan over d in the slot's norm_out buffer. */
imgstat_status reserve_out(const imgstat_gpu_image *d,
                           const imgstat_norm_plan *plan, void **outs,
                           imgstat_error *err) {
  ist_slot *s = d->slot;
  const uint64_t n = (uint64_t)d->width * d->height;
  const size_t out_slot = ist_align256((size_t)n * plan->out_sample);
  cudaError_t e = s->norm_out.reserve(out_slot * plan->channels_out);
  if (e != cudaSuccess)
    return ist_cuda_fail(err, e, "cudaMalloc (output)");
  for (int o = 0; o < plan->channels_out; ++o)
    outs[o] = s->norm_out.as<unsigned char>(out_slot * o);
  return IMGSTAT_OK;
}

imgstat_status apply_device(imgstat_gpu *gpu, const imgstat_gpu_image *d,
                            const imgstat_norm_plan *plan, imgstat_image *out,
                            imgstat_error *err) {
  ist_slot *s = d->slot;
  imgstat_status st =
      ist_norm_out_alloc(plan, d->width, d->height, d->format, out, err);
  if (st != IMGSTAT_OK)
    return st;
  const size_t row_bytes = (size_t)d->width * plan->out_sample;
  void *outs[IMGSTAT_MAX_CHANNELS] = {nullptr};
  st = reserve_out(d, plan, outs, err);
  if (st == IMGSTAT_OK)
    st = apply_into(gpu, d, plan, outs, err);
  if (st != IMGSTAT_OK) {
    imgstat_image_free(out);
    return st;
  }
  cudaError_t e = cudaSuccess;
  for (int o = 0; o < plan->channels_out && e == cudaSuccess; ++o)
    e = ist_slot_download(s, out->planes[o], out->stride, outs[o], row_bytes,
                          d->height);
  if (e == cudaSuccess)
    e = cudaStreamSynchronize(s->stream);
  if (e != cudaSuccess) {
    imgstat_image_free(out);
    return ist_cuda_fail(err, e, "normalize (copy back)");
  }
  return IMGSTAT_OK;
}

/* The pass into caller's device memory: planes back to back (written by
 * the pass itself) or interleaved (the pass into norm_out, then one
 * interleaving copy); returns when the output is complete. */
imgstat_status apply_to_device(imgstat_gpu *gpu, const imgstat_gpu_image *d,
                               const imgstat_norm_plan *plan, void *d_out,
                               int interleaved, imgstat_error *err) {
  ist_slot *s = d->slot;
  const uint64_t n = (uint64_t)d->width * d->height;
  void *outs[IMGSTAT_MAX_CHANNELS] = {nullptr};
  imgstat_status st = IMGSTAT_OK;
  if (interleaved && plan->channels_out > 1) {
    st = reserve_out(d, plan, outs, err);
  } else {
    for (int o = 0; o < plan->channels_out; ++o)
      outs[o] = static_cast<unsigned char *>(d_out) +
                (size_t)n * plan->out_sample * (size_t)o;
  }
  if (st == IMGSTAT_OK)
    st = apply_into(gpu, d, plan, outs, err);
  if (st == IMGSTAT_OK && interleaved && plan->channels_out > 1) {
    cudaError_t e =
        ist_interleave(outs, d_out, plan->channels_out, plan->out_sample, n,
                       gpu->sm_count, s->stream);
    if (e != cudaSuccess)
      st = ist_cuda_fail(err, e, "interleaving kernel");
  }
  if (st == IMGSTAT_OK) {
    cudaError_t e = cudaStreamSynchronize(s->stream);
    if (e != cudaSuccess)
      st = ist_cuda_fail(err, e, "normalize");
  }
  return st;
}

bool is_alpha(int channels, int c) {
  return imgstat_channel_is_alpha(channels, c) != 0;
}

/* The measurements of imgstat_norm_measure_cpu, from the device planes. */
imgstat_status measure_device(imgstat_gpu *gpu, const imgstat_gpu_image *d,
                              const imgstat_norm_options *o,
                              imgstat_norm_measure *m, imgstat_error *err) {
  memset(m, 0, sizeof *m);
  const uint64_t n = (uint64_t)d->width * d->height;
  const int channels = d->channels;
  imgstat_status st;
  if (o->mode == IMGSTAT_NORM_GIVEN || o->mode == IMGSTAT_NORM_RANGE)
    return IMGSTAT_OK;
  const bool f32 = d->sample == IMGSTAT_F32;
  imgstat_partial part[IMGSTAT_MAX_CHANNELS];
  if (o->mode == IMGSTAT_NORM_MINMAX || o->mode == IMGSTAT_NORM_ZSCORE || f32) {
    st = ist_stats_planes(d->slot, d->planes, channels, d->sample, n,
                          IMGSTAT_KERNEL_FAST, part, err);
    if (st != IMGSTAT_OK)
      return st;
  }
  if (o->mode == IMGSTAT_NORM_MINMAX || o->mode == IMGSTAT_NORM_ZSCORE) {
    ist_norm_measure_from_partials(part, channels, d->sample, d->width, o, m);
    return IMGSTAT_OK;
  }
  /* clip: the CPU's measure_clip (normalize.c), step for step; float
   * histograms span each channel's finite range */
  double range_lo[IMGSTAT_MAX_CHANNELS] = {0},
         range_hi[IMGSTAT_MAX_CHANNELS] = {0};
  int range_any[IMGSTAT_MAX_CHANNELS] = {0};
  for (int c = 0; c < channels && f32; ++c) {
    range_any[c] = part[c].count > 0;
    range_lo[c] = range_any[c] ? part[c].min : 0.0;
    range_hi[c] = range_any[c] ? part[c].max : 0.0;
  }
  const double p[2] = {o->clip_low, o->clip_high};
  double v[2];
  int has = 0;
  if (o->linked) {
    double lo = 0, hi = 0;
    int any = 0;
    const void *planes[IMGSTAT_MAX_CHANNELS];
    int np = 0;
    for (int c = 0; c < channels; ++c) {
      if (is_alpha(channels, c))
        continue;
      planes[np++] = d->planes[c];
      if (f32 && range_any[c]) {
        lo = any ? fmin(lo, range_lo[c]) : range_lo[c];
        hi = any ? fmax(hi, range_hi[c]) : range_hi[c];
        any = 1;
      }
    }
    imgstat_histogram h;
    st = imgstat_histogram_alloc(&h, d->sample, o->float_bins, lo, hi, err);
    if (st != IMGSTAT_OK)
      return st;
    st = hist_percentiles(d->slot, gpu->sm_count, planes, np, n, &h, 0, p, 2, v,
                          &has, err);
    imgstat_histogram_free(&h);
    if (st != IMGSTAT_OK)
      return st;
    for (int c = 0; c < channels; ++c) {
      if (is_alpha(channels, c))
        continue;
      m->has_values[c] = has;
      m->lo[c] = has ? v[0] : 0;
      m->hi[c] = has ? v[1] : 0;
    }
  }
  for (int c = 0; c < channels; ++c) {
    bool alpha = is_alpha(channels, c);
    if (alpha && o->alpha != IMGSTAT_ALPHA_NORMALIZE)
      continue;
    if (o->linked && !alpha)
      continue;
    imgstat_histogram h;
    st = imgstat_histogram_alloc(&h, d->sample, o->float_bins, range_lo[c],
                                 range_hi[c], err);
    if (st != IMGSTAT_OK)
      return st;
    st = hist_percentiles(d->slot, gpu->sm_count, &d->planes[c], 1, n, &h, 0, p,
                          2, v, &has, err);
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

/* Measure and plan: what normalize_device applies. */
imgstat_status plan_device(imgstat_gpu *gpu, const imgstat_gpu_image *d,
                           const imgstat_norm_options *opts,
                           imgstat_norm_measure *m_out, imgstat_norm_plan *plan,
                           imgstat_error *err) {
  const imgstat_image shape = ist_gpu_image_shape(d);
  imgstat_norm_measure m;
  imgstat_status st = measure_device(gpu, d, opts, &m, err);
  if (st != IMGSTAT_OK)
    return st;
  if ((st = imgstat_norm_plan_make(&shape, opts, &m, plan, err)) != IMGSTAT_OK)
    return st;
  if (m_out)
    *m_out = m;
  return IMGSTAT_OK;
}

/* Measure, plan, apply: the normalization of a device image. */
imgstat_status normalize_device(imgstat_gpu *gpu, const imgstat_gpu_image *d,
                                const imgstat_norm_options *opts,
                                imgstat_norm_measure *m_out,
                                imgstat_norm_plan *plan_out, imgstat_image *out,
                                imgstat_error *err) {
  imgstat_norm_plan plan;
  imgstat_status st = plan_device(gpu, d, opts, m_out, &plan, err);
  if (st != IMGSTAT_OK)
    return st;
  if (plan_out)
    *plan_out = plan;
  return apply_device(gpu, d, &plan, out, err);
}

/* The first checks of the forms on a host image (out cleared). */
imgstat_status check_input(imgstat_gpu *gpu, const imgstat_image *img,
                           imgstat_image *out, imgstat_error *err) {
  if (out)
    memset(out, 0, sizeof *out);
  if (!gpu)
    return imgstat_error_set(err, IMGSTAT_ERR_ARG, "no GPU context");
  /* planes, not data: a view (--as's conversion) borrows another image's */
  if (!img || img->channels < 1 || img->channels > IMGSTAT_MAX_CHANNELS ||
      img->width == 0 || img->height == 0)
    return imgstat_error_set(err, IMGSTAT_ERR_ARG, "no image");
  for (int c = 0; c < img->channels; c++)
    if (!img->planes[c])
      return imgstat_error_set(err, IMGSTAT_ERR_ARG, "no image");
  return ist_gpu_check_image(img, err);
}

/* The same of the forms on a device image: the handle, and an image that
 * is not empty. */
imgstat_status check_device_input(imgstat_gpu *gpu, imgstat_gpu_image *dimg,
                                  imgstat_image *out, imgstat_error *err) {
  if (out)
    memset(out, 0, sizeof *out);
  imgstat_status st = ist_gpu_image_check(gpu, dimg, err);
  if (st == IMGSTAT_OK && (dimg->width == 0 || dimg->height == 0))
    st = imgstat_error_set(err, IMGSTAT_ERR_ARG, "no image");
  if (st == IMGSTAT_OK) { /* the forms read planes */
    dimg->quiet = false;
    cudaError_t e = ist_gpu_enter(gpu);
    st = e != cudaSuccess ? ist_cuda_fail(err, e, "cudaSetDevice")
                          : ist_gpu_image_planes(gpu, dimg, err);
  }
  return st;
}

/* The checks of the forms with options on a device image: the handle, an
 * image that is not empty, the options (and has_out: an output). */
imgstat_status check_device_options(imgstat_gpu *gpu, imgstat_gpu_image *dimg,
                                    const imgstat_norm_options *opts,
                                    bool has_out, imgstat_image *out,
                                    imgstat_error *err) {
  imgstat_status st = check_device_input(gpu, dimg, out, err);
  if (st == IMGSTAT_OK && (!opts || !has_out))
    st = imgstat_error_set(err, IMGSTAT_ERR_ARG, "no options or output");
  if (st == IMGSTAT_OK) {
    const imgstat_image shape = ist_gpu_image_shape(dimg);
    st = imgstat_norm_options_check(&shape, opts, err);
  }
  return st;
}

imgstat_status check_plan(const imgstat_norm_plan *plan,
                          const imgstat_image *out, imgstat_sample in,
                          int channels, imgstat_error *err) {
  bool fits = plan && out && plan->in_sample == in && plan->channels_out >= 1 &&
              plan->channels_out <= IMGSTAT_MAX_CHANNELS;
  for (int o = 0; fits && o < plan->channels_out; ++o)
    fits = plan->source[o] >= 0 && plan->source[o] < channels;
  return fits ? IMGSTAT_OK
              : imgstat_error_set(err, IMGSTAT_ERR_ARG,
                                  "the plan does not fit the image");
}

/* Runs op on a device image of img (uploaded here, released after). */
template <typename Op>
imgstat_status on_upload(imgstat_gpu *gpu, const imgstat_image *img, Op op,
                         imgstat_error *err) {
  IST_CUDA_TRY(ist_gpu_enter(gpu), "cudaSetDevice");
  imgstat_gpu_image *d = nullptr;
  imgstat_status st = ist_gpu_image_upload(gpu, img, &d, err);
  if (st != IMGSTAT_OK)
    return st;
  st = op(d);
  imgstat_gpu_image_release(gpu, d);
  return st;
}

/* Runs op on a device image the caller holds; after a failure its slot is
 * drained, so the handle stays usable. */
template <typename Op>
imgstat_status on_device(imgstat_gpu *gpu, imgstat_gpu_image *d, Op op,
                         imgstat_error *err) {
  IST_CUDA_TRY(ist_gpu_enter(gpu), "cudaSetDevice");
  imgstat_status st = op(d);
  if (st != IMGSTAT_OK)
    ist_slot_drain(d->slot);
  return st;
}

} // namespace

static cudaError_t apply_group(const ApplyGroup &p, imgstat_sample in,
                               imgstat_sample out, int channels, int sm_count,
                               cudaStream_t s);

cudaError_t apply_launch(const ApplyParams &params, imgstat_sample in,
                         imgstat_sample out, int channels, int sm_count,
                         cudaStream_t s) {
  int vectors = 1;
  for (int o = 0; o < channels; ++o)
    if (((uintptr_t)params.in[o] | (uintptr_t)params.out[o]) & 15)
      vectors = 0;
  for (int g = 0; g < channels; g += IST_APPLY_GROUP) {
    const int n =
        channels - g < IST_APPLY_GROUP ? channels - g : IST_APPLY_GROUP;
    ApplyGroup p;
    memset(&p, 0, sizeof p);
    for (int o = 0; o < n; ++o) {
      p.in[o] = params.in[g + o];
      p.out[o] = params.out[g + o];
      p.lut[o] = params.lut[g + o];
      p.kind[o] = params.kind[g + o];
      p.a[o] = params.a[g + o];
      p.b[o] = params.b[g + o];
    }
    p.n = params.n;
    p.out_max = params.out_max;
    p.vectors = vectors;
    cudaError_t e = apply_group(p, in, out, n, sm_count, s);
    if (e != cudaSuccess)
      return e;
  }
  return cudaSuccess;
}

/* One launch of the pass over the n channels of p. */
static cudaError_t apply_group(const ApplyGroup &p, imgstat_sample in,
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

} // namespace ist_norm_gpu

using namespace ist_norm_gpu;

extern "C" {

imgstat_status imgstat_gpu_normalize(imgstat_gpu *gpu, const imgstat_image *img,
                                     const imgstat_norm_options *opts,
                                     imgstat_norm_measure *m_out,
                                     imgstat_norm_plan *plan_out,
                                     imgstat_image *out, imgstat_error *err) {
  imgstat_status st = check_input(gpu, img, out, err);
  if (st == IMGSTAT_OK && (!opts || !out))
    st = imgstat_error_set(err, IMGSTAT_ERR_ARG, "no options or output");
  if (st == IMGSTAT_OK)
    st = imgstat_norm_options_check(img, opts, err);
  if (st != IMGSTAT_OK)
    return st;
  return on_upload(
      gpu, img,
      [&](imgstat_gpu_image *d) {
        return normalize_device(gpu, d, opts, m_out, plan_out, out, err);
      },
      err);
}

imgstat_status imgstat_gpu_norm_apply(imgstat_gpu *gpu, const imgstat_image *in,
                                      const imgstat_norm_plan *plan,
                                      imgstat_image *out, imgstat_error *err) {
  imgstat_status st = check_input(gpu, in, out, err);
  if (st == IMGSTAT_OK)
    st = check_plan(plan, out, in->sample, in->channels, err);
  if (st != IMGSTAT_OK)
    return st;
  return on_upload(
      gpu, in,
      [&](imgstat_gpu_image *d) {
        return apply_device(gpu, d, plan, out, err);
      },
      err);
}

imgstat_status imgstat_gpu_image_normalize(
    imgstat_gpu *gpu, imgstat_gpu_image *dimg, const imgstat_norm_options *opts,
    imgstat_norm_measure *m_out, imgstat_norm_plan *plan_out,
    imgstat_image *out, imgstat_error *err) {
  imgstat_status st =
      check_device_options(gpu, dimg, opts, out != nullptr, out, err);
  if (st != IMGSTAT_OK)
    return st;
  return on_device(
      gpu, dimg,
      [&](imgstat_gpu_image *d) {
        return normalize_device(gpu, d, opts, m_out, plan_out, out, err);
      },
      err);
}

imgstat_status imgstat_gpu_image_norm_apply(imgstat_gpu *gpu,
                                            imgstat_gpu_image *dimg,
                                            const imgstat_norm_plan *plan,
                                            imgstat_image *out,
                                            imgstat_error *err) {
  imgstat_status st = check_device_input(gpu, dimg, out, err);
  if (st == IMGSTAT_OK)
    st = check_plan(plan, out, dimg->sample, dimg->channels, err);
  if (st != IMGSTAT_OK)
    return st;
  return on_device(
      gpu, dimg,
      [&](imgstat_gpu_image *d) {
        return apply_device(gpu, d, plan, out, err);
      },
      err);
}

imgstat_status imgstat_gpu_image_norm_plan(
    imgstat_gpu *gpu, imgstat_gpu_image *dimg, const imgstat_norm_options *opts,
    imgstat_norm_measure *m, imgstat_norm_plan *plan, imgstat_error *err) {
  imgstat_status st =
      check_device_options(gpu, dimg, opts, plan != nullptr, nullptr, err);
  if (st != IMGSTAT_OK)
    return st;
  return on_device(
      gpu, dimg,
      [&](imgstat_gpu_image *d) {
        return plan_device(gpu, d, opts, m, plan, err);
      },
      err);
}

imgstat_status
imgstat_gpu_image_norm_apply_device(imgstat_gpu *gpu, imgstat_gpu_image *dimg,
                                    const imgstat_norm_plan *plan, void *d_out,
                                    int interleaved, imgstat_error *err) {
  imgstat_status st = check_device_input(gpu, dimg, nullptr, err);
  imgstat_image shape;
  memset(&shape, 0, sizeof shape);
  if (st == IMGSTAT_OK) /* check_plan wants an output: any will do */
    st = check_plan(plan, &shape, dimg->sample, dimg->channels, err);
  if (st == IMGSTAT_OK && !d_out)
    st = imgstat_error_set(err, IMGSTAT_ERR_ARG, "no output");
  if (st == IMGSTAT_OK) {
    IST_CUDA_TRY(ist_gpu_enter(gpu), "cudaSetDevice");
    if (!ist_gpu_memory(gpu, d_out))
      st = imgstat_error_set(err, IMGSTAT_ERR_ARG,
                             "the output is not memory of CUDA device %d",
                             gpu->device);
  }
  if (st != IMGSTAT_OK)
    return st;
  return on_device(
      gpu, dimg,
      [&](imgstat_gpu_image *d) {
        return apply_to_device(gpu, d, plan, d_out, interleaved, err);
      },
      err);
}

} /* extern "C" */
