/*
 * `imgstat bench`, the images: for each kind (RGB8, RGBA8, RGB16, RGB float,
 * RGB8 over the full range) the fused statistics of the whole image against
 * cub::DeviceReduce::Sum over the same bytes, the ladder on its first u8
 * plane, and NPP's statistics of the RGB8 image. The method: bench.cu.
 */
#include "bench_harness.cuh"

#include <cub/device/device_reduce.cuh>

#ifdef IMGSTAT_HAVE_NPP
#include <nppdefs.h>
#include <nppi_statistics_functions.h>
#endif

#include <climits>
#include <cstdio>
#include <type_traits>

namespace ist_bench {

namespace {

/* ---- 3. fused statistics vs CUB, 4. NPP --------------------------------- */

/* cub::DeviceReduce::Sum of n items of T into one Acc, with 32-bit item
 * counts where they fit (CUB's fastest dispatch). */
template <typename T, typename Acc>
cudaError_t cub_sum(void *d_temp, size_t &temp_bytes, const T *d_in, Acc *d_out,
                    uint64_t n, cudaStream_t s) {
  if (d_temp) { /* a run, not the size query */
    cudaError_t e = ist_cuda_launch_gate();
    if (e != cudaSuccess)
      return e;
  }
  if (n <= (uint64_t)INT_MAX)
    return cub::DeviceReduce::Sum(d_temp, temp_bytes, d_in, d_out, (int)n, s);
  return cub::DeviceReduce::Sum(d_temp, temp_bytes, d_in, d_out, (long long)n,
                                s);
}

/* Times CUB's Sum over n items of T at d_in and checks it against `expect`
 * (exact for integers, 1e-9 relative for the double sum of floats: CUB is
 * not imgstat and sums in its own order). */
template <typename T, typename Acc>
imgstat_status bench_cub_row(bench *b, const char *table, const char *name,
                             const char *note, const T *d_in, uint64_t n,
                             Acc expect, imgstat_bench_row **out_row) {
  size_t temp_bytes = 0;
  BENCH_CUDA((cub_sum<T, Acc>(nullptr, temp_bytes, d_in, (Acc *)nullptr, n,
                              b->stream)),
             "sizing CUB's scratch");
  ist_devbuf temp, out;
  BENCH_CUDA(temp.reserve(temp_bytes), "allocating CUB's scratch");
  BENCH_CUDA(out.reserve(sizeof(Acc)), "allocating CUB's result");
  imgstat_bench_row *row = nullptr;
  BENCH_TRY(add_row(b, IMGSTAT_BENCH_CUB, table, name, &row));
  row->elements = n;
  copy_text(row->note, "%s", note);
  timing t = timing();
  BENCH_TRY(time_runs(
      b, 1, name,
      [&](int) {
        size_t tb = temp_bytes;
        return cub_sum<T, Acc>(temp.p, tb, d_in, out.as<Acc>(), n, b->stream);
      },
      &t));
  set_timing(b, row, t, n * sizeof(T));
  Acc got;
  BENCH_CUDA(cudaMemcpy(&got, out.p, sizeof got, cudaMemcpyDeviceToHost),
             "reading CUB's sum");
  bool ok = (double)got == (double)expect ||
            (std::is_floating_point<Acc>::value &&
             close_rel((double)got, (double)expect, 1e-9));
  set_check(b, row, ok, "sum %.17g, host %.17g", (double)got, (double)expect);
  *out_row = row;
  return IMGSTAT_OK;
}

#ifdef IMGSTAT_HAVE_NPP
/* NPP's minimum and maximum of the interleaved RGB8 image, then its mean and
 * standard deviation channel by channel, against our fused statistics. */
imgstat_status bench_npp(bench *b, const unsigned char *h_planes, uint32_t w,
                         uint32_t h, const imgstat_partial host[3],
                         double fused_ms, const char *table) {
  size_t n = (size_t)w * h;
  host_buffer hi;
  if (!hi.alloc(3 * n))
    return imgstat_error_set(b->err, IMGSTAT_ERR_NOMEM, "out of host memory");
  unsigned char *p = hi.as<unsigned char>();
  for (size_t i = 0; i < n; i++)
    for (int c = 0; c < 3; c++)
      p[3 * i + c] = h_planes[c * n + i];
  ist_devbuf img;
  BENCH_CUDA(img.reserve(3 * n), "allocating NPP's image");
  BENCH_CUDA(cudaMemcpy(img.p, p, 3 * n, cudaMemcpyHostToDevice),
             "uploading NPP's image");

  cudaDeviceProp prop;
  int dev = 0;
  BENCH_CUDA(cudaGetDevice(&dev), "cudaGetDevice");
  BENCH_CUDA(cudaGetDeviceProperties(&prop, dev), "cudaGetDeviceProperties");
  NppStreamContext ctx;
  memset(&ctx, 0, sizeof ctx);
  ctx.hStream = b->stream;
  ctx.nCudaDeviceId = dev;
  ctx.nMultiProcessorCount = prop.multiProcessorCount;
  ctx.nMaxThreadsPerMultiProcessor = prop.maxThreadsPerMultiProcessor;
  ctx.nMaxThreadsPerBlock = prop.maxThreadsPerBlock;
  ctx.nSharedMemPerBlock = prop.sharedMemPerBlock;
  ctx.nCudaDevAttrComputeCapabilityMajor = prop.major;
  ctx.nCudaDevAttrComputeCapabilityMinor = prop.minor;
  BENCH_CUDA(cudaStreamGetFlags(b->stream, &ctx.nStreamFlags),
             "cudaStreamGetFlags");

  NppiSize roi = {(int)w, (int)h};
  int step = (int)(3 * w);
  size_t minmax_bytes = 0, meanstd_bytes = 0;
  NppStatus ns =
      nppiMinMaxGetBufferHostSize_8u_C3R_Ctx(roi, &minmax_bytes, ctx);
  if (ns == NPP_SUCCESS)
    ns = nppiMeanStdDevGetBufferHostSize_8u_C3CR_Ctx(roi, &meanstd_bytes, ctx);
  if (ns != NPP_SUCCESS)
    return imgstat_error_set(b->err, IMGSTAT_ERR_DEVICE,
                             "NPP buffer size query failed (NppStatus %d)",
                             (int)ns);
  ist_devbuf buf, res;
  BENCH_CUDA(buf.reserve(std::max(minmax_bytes, meanstd_bytes)),
             "allocating NPP's scratch");
  /* Results in device memory: 3 min, 3 max (bytes), then 3 means and 3
   * standard deviations (doubles). */
  BENCH_CUDA(res.reserve(64 + 6 * sizeof(double)), "allocating NPP's results");
  Npp8u *d_min = res.as<Npp8u>(), *d_max = d_min + 8;
  Npp64f *d_mean = reinterpret_cast<Npp64f *>(res.as<unsigned char>() + 64);
  Npp64f *d_std = d_mean + 3;

  imgstat_bench_row *row = nullptr;
  BENCH_TRY(add_row(b, IMGSTAT_BENCH_NPP, table,
                    "NPP MinMax_8u_C3R + 3 x Mean_StdDev_8u_C3CR", &row));
  row->elements = 3 * n;
  copy_text(row->note, "interleaved RGB8, 4 calls (_Ctx), same pixels");
  NppStatus last = NPP_SUCCESS;
  timing t = timing();
  BENCH_TRY(time_runs(
      b, 1, "NPP statistics",
      [&](int) -> cudaError_t {
        last = nppiMinMax_8u_C3R_Ctx(img.as<Npp8u>(), step, roi, d_min, d_max,
                                     buf.as<Npp8u>(), ctx);
        for (int c = 1; c <= 3 && last == NPP_SUCCESS; c++)
          last = nppiMean_StdDev_8u_C3CR_Ctx(img.as<Npp8u>(), step, roi, c,
                                             buf.as<Npp8u>(), d_mean + c - 1,
                                             d_std + c - 1, ctx);
        return last == NPP_SUCCESS ? cudaGetLastError() : cudaErrorUnknown;
      },
      &t));
  if (last != NPP_SUCCESS)
    return imgstat_error_set(b->err, IMGSTAT_ERR_DEVICE,
                             "NPP statistics failed (NppStatus %d)", (int)last);
  set_timing(b, row, t, 3 * n);
  row->ratio = fused_ms > 0 ? t.median_ms / fused_ms : 0;
  set_goal(row, 10.0, row->ratio >= 10.0, "NPP time >= 10 x fused RGB8");

  unsigned char mn[8], mx[8];
  double mean[3], sd[3];
  BENCH_CUDA(cudaMemcpy(mn, d_min, 8, cudaMemcpyDeviceToHost), "NPP results");
  BENCH_CUDA(cudaMemcpy(mx, d_max, 8, cudaMemcpyDeviceToHost), "NPP results");
  BENCH_CUDA(cudaMemcpy(mean, d_mean, sizeof mean, cudaMemcpyDeviceToHost),
             "NPP results");
  BENCH_CUDA(cudaMemcpy(sd, d_std, sizeof sd, cudaMemcpyDeviceToHost),
             "NPP results");
  /* NPP is not imgstat: its mean and deviation round its own way, so they
   * agree with the host's to a tolerance, not to the bit
   * (imgstat_partial_same is the rule between imgstat's backends). */
  const double npp_mean_tol = 1e-6, npp_std_tol = 1e-4;
  for (int c = 0; c < 3; c++) {
    imgstat_figures f;
    imgstat_figures_compute(&host[c], IMGSTAT_U8, w, 0, &f);
    bool ok = mn[c] == host[c].min && mx[c] == host[c].max &&
              close_rel(mean[c], f.mean, npp_mean_tol) &&
              close_rel(sd[c], f.std, npp_std_tol);
    if (!ok) {
      set_check(b, row, false,
                "channel %d: min %d max %d mean %.9g std %.9g vs host %g %g "
                "%.9g %.9g",
                c, mn[c], mx[c], mean[c], sd[c], host[c].min, host[c].max,
                f.mean, f.std);
      return IMGSTAT_OK;
    }
  }
  set_check(b, row, true, "min, max, mean, std (population) match the host");
  return IMGSTAT_OK;
}
#endif

struct image_kind {
  const char *name;
  int channels;
  imgstat_sample sample;
  bool full_range; /* integer samples may take the type's bounds */
};

/*
 * Integer samples in 1 .. max-1: random, yet no thread ever holds both
 * bounds of the type, so a kernel that stops tracking min/max once they are
 * reached (a shortcut real photos rarely allow everywhere) is timed doing the
 * whole job. The full-range row shows what that shortcut gains.
 */
void avoid_bounds(void *p, size_t bytes, imgstat_sample sample) {
  if (sample == IMGSTAT_U8) {
    unsigned char *q = static_cast<unsigned char *>(p);
    for (size_t i = 0; i < bytes; i++)
      q[i] = (unsigned char)(1 + q[i] % 254);
  } else if (sample == IMGSTAT_U16) {
    uint16_t *q = static_cast<uint16_t *>(p);
    for (size_t i = 0; i < bytes / 2; i++)
      q[i] = (uint16_t)(1 + q[i] % 65534);
  }
}

} // namespace

imgstat_status bench_images(bench *b) {
  static const image_kind kinds[] = {{"RGB8", 3, IMGSTAT_U8, false},
                                     {"RGBA8", 4, IMGSTAT_U8, false},
                                     {"RGB16", 3, IMGSTAT_U16, false},
                                     {"RGB float", 3, IMGSTAT_F32, false},
                                     {"RGB8", 3, IMGSTAT_U8, true}};
  uint32_t w = b->width, h = b->height;
  uint64_t n = (uint64_t)w * h;
  char mp[32];
  imgstat_number_snprintf(mp, sizeof mp, "%.0f MP", (double)n / (1 << 20));

  for (const image_kind &kind : kinds) {
    size_t ss = (size_t)kind.sample;
    size_t bytes = (size_t)kind.channels * n * ss;
    host_buffer hb;
    if (!hb.alloc(bytes))
      return imgstat_error_set(b->err, IMGSTAT_ERR_NOMEM, "out of host memory");
    if (kind.sample == IMGSTAT_F32)
      fill_random_floats(hb.as<float>(), bytes / 4, 0xF10A7 + n);
    else
      fill_random_bytes(hb.p, bytes, 0xB17E5 + 31 * kind.channels + ss + n);
    if (!kind.full_range)
      avoid_bounds(hb.p, bytes, kind.sample);
    imgstat_partial host[IMGSTAT_MAX_CHANNELS];
    BENCH_TRY(host_partials(b, hb.p, w, h, kind.channels, kind.sample, host));

    ist_devbuf img;
    BENCH_CUDA(img.reserve(bytes), "allocating the image");
    BENCH_CUDA(cudaMemcpy(img.p, hb.p, bytes, cudaMemcpyHostToDevice),
               "uploading the image");

    char size_text[32], table[IMGSTAT_BENCH_TEXT];
    mib_text(size_text, sizeof size_text, bytes);

    /* The ladder through the fused statistics, on the first u8 plane. */
    if (kind.sample == IMGSTAT_U8 && kind.channels == 3 && !kind.full_range) {
      char plane_text[32];
      mib_text(plane_text, sizeof plane_text, n);
      copy_text(table, "ladder: fused statistics of a %u x %u u8 plane (%s)", w,
                h, plane_text);
      BENCH_TRY(bench_ladder_plane(b, img.p, n, host[0], table));
    }

    const char *range = kind.sample == IMGSTAT_F32 ? "floats in [0, 1)"
                        : kind.full_range          ? "samples 0..max"
                                                   : "samples 1..max-1";
    copy_text(table, "fused vs cub::DeviceReduce::Sum: %s, %ux%u (%s), %s, %s",
              kind.name, w, h, mp, size_text, range);

    /* CUB first: the fused row's ratio needs its times. */
    imgstat_bench_row *cub_native = nullptr, *cub_words = nullptr;
    uint64_t items = (uint64_t)kind.channels * n;
    if (kind.sample == IMGSTAT_F32) {
      double expect = 0;
      const float *f = hb.as<float>();
      for (uint64_t i = 0; i < items; i++)
        expect += f[i];
      BENCH_TRY(bench_cub_row<float, double>(
          b, table, "cub Sum float -> double",
          "the same bytes as float items, double accumulator", img.as<float>(),
          items, expect, &cub_native));
    } else {
      unsigned long long expect = 0;
      for (int c = 0; c < kind.channels; c++)
        expect += host[c].sum;
      if (kind.sample == IMGSTAT_U8)
        BENCH_TRY(bench_cub_row<unsigned char, unsigned long long>(
            b, table, "cub Sum u8 -> u64",
            "the same bytes as uint8 items, uint64 accumulator",
            img.as<unsigned char>(), items, expect, &cub_native));
      else
        BENCH_TRY(bench_cub_row<unsigned short, unsigned long long>(
            b, table, "cub Sum u16 -> u64",
            "the same bytes as uint16 items, uint64 accumulator",
            img.as<unsigned short>(), items, expect, &cub_native));
    }
    {
      unsigned long long expect = 0;
      const uint32_t *words = hb.as<uint32_t>();
      for (size_t i = 0; i < bytes / 4; i++)
        expect += words[i];
      BENCH_TRY(bench_cub_row<uint32_t, unsigned long long>(
          b, table, "cub Sum u32 words -> u64",
          "the same bytes as uint32 items, uint64 accumulator",
          img.as<uint32_t>(), bytes / 4, expect, &cub_words));
    }

    size_t scratch_bytes = 0;
    BENCH_CUDA(ist_reduce_stats(IMGSTAT_KERNEL_FAST, 0, nullptr, kind.sample, n,
                                (uint32_t)kind.channels, 0, nullptr,
                                &scratch_bytes, nullptr, b->stream),
               "sizing the statistics' scratch");
    ist_devbuf scratch, out;
    BENCH_CUDA(scratch.reserve(scratch_bytes), "allocating scratch");
    BENCH_CUDA(out.reserve(IMGSTAT_MAX_CHANNELS * sizeof(imgstat_partial)),
               "allocating the result");
    BENCH_CUDA(cudaMemsetAsync(out.p, 0xA5,
                               IMGSTAT_MAX_CHANNELS * sizeof(imgstat_partial),
                               b->stream),
               "poisoning the result");
    char name[48];
    copy_text(name, "fast (fused statistics)");
    imgstat_bench_row *row = nullptr;
    BENCH_TRY(add_row(b, IMGSTAT_BENCH_FUSED, table, name, &row));
    row->kernel = IMGSTAT_KERNEL_FAST;
    row->block_size = ist_fast_block_size();
    row->elements = items;
    copy_text(row->note, "per plane: count, min, max + first index, %s",
              kind.sample == IMGSTAT_F32 ? "mean, M2, NaN/Inf counts"
                                         : "sum, sum of squares");
    timing t = timing();
    BENCH_TRY(time_runs(
        b, 1, name,
        [&](int) {
          size_t sb = scratch_bytes;
          return ist_reduce_stats(IMGSTAT_KERNEL_FAST, 0, img.p, kind.sample, n,
                                  (uint32_t)kind.channels, 0, scratch.p, &sb,
                                  out.as<imgstat_partial>(), b->stream);
        },
        &t));
    set_timing(b, row, t, bytes);
    double best_cub = std::min(cub_native->median_ms, cub_words->median_ms);
    row->ratio = best_cub > 0 ? t.median_ms / best_cub : 0;
    cub_native->ratio =
        cub_native->median_ms > 0 ? t.median_ms / cub_native->median_ms : 0;
    cub_words->ratio =
        cub_words->median_ms > 0 ? t.median_ms / cub_words->median_ms : 0;
    /* The goal is judged against each CUB row: the same samples (what the
     * issue names), and the same bytes as words (CUB's fastest sum of them,
     * the stricter bar). */
    if (!kind.full_range) {
      set_goal(cub_native, 1.10, cub_native->ratio <= 1.10,
               "fused <= 1.10 x CUB over the same samples");
      set_goal(cub_words, 1.10, cub_words->ratio <= 1.10,
               "fused <= 1.10 x CUB over the same bytes as u32 words");
    }

    imgstat_partial got[IMGSTAT_MAX_CHANNELS];
    BENCH_CUDA(cudaMemcpy(got, out.p, kind.channels * sizeof(imgstat_partial),
                          cudaMemcpyDeviceToHost),
               "reading the statistics");
    bool ok = true;
    char why[IMGSTAT_BENCH_TEXT] = "";
    for (int c = 0; c < kind.channels && ok; c++) {
      char one[IMGSTAT_BENCH_TEXT];
      if (!partials_agree(got[c], host[c], kind.sample, one, sizeof one)) {
        ok = false;
        snprintf(why, sizeof why, "channel %d: %.70s", c, one);
      }
    }
    if (ok)
      set_check(b, row, true, "%d partials equal the host's%s", kind.channels,
                kind.sample == IMGSTAT_F32 ? " (mean, M2 to the bit)" : "");
    else
      set_check(b, row, false, "%s", why);

#ifdef IMGSTAT_HAVE_NPP
    if (kind.sample == IMGSTAT_U8 && kind.channels == 3 && !kind.full_range &&
        !b->skip_npp) {
      copy_text(table, "NPP vs fused statistics: RGB8, %u x %u (%s)", w, h, mp);
      img.release();
      BENCH_TRY(
          bench_npp(b, hb.as<unsigned char>(), w, h, host, t.median_ms, table));
    }
#endif
  }
  return IMGSTAT_OK;
}

} // namespace ist_bench
