/*
 * Normalization on the CPU: options -> measurements -> a plan of per-channel
 * maps -> the output image. The plan is the contract between the backends:
 * the GPU measures with its own kernels, makes its plan with the same
 * imgstat_norm_plan_make, and applies the same lookup tables (integer input)
 * or the same formulas from norm_map.h (float input).
 */
#include "imgstat/norm.h"

#include "clip.h"
#include "image_rows.h"
#include "norm_map.h"

#include <math.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

int imgstat_channel_is_alpha(int channels, int c) {
  return (channels == 2 && c == 1) || (channels == 4 && c == 3);
}

/* err given its cause (a setting: value, when it has one); returns s. */
static imgstat_status with_cause(imgstat_error *err, imgstat_cause cause,
                                 uint64_t value, imgstat_status s) {
  imgstat_error_cause(err, cause, 0, value, NULL);
  return s;
}

static uint32_t sample_max(imgstat_sample s) {
  return s == IMGSTAT_U8 ? 255u : (s == IMGSTAT_U16 ? 65535u : 1u);
}

imgstat_status imgstat_norm_options_check(const imgstat_image *img,
                                          const imgstat_norm_options *o,
                                          imgstat_error *err) {
  if (!img || img->channels < 1 || img->channels > IMGSTAT_MAX_CHANNELS)
    return imgstat_error_set(err, IMGSTAT_ERR_ARG, "no image");
  /* the outputs are Y, YA, RGB or RGBA images: CMYK's K is no alpha */
  if (img->colour != IMGSTAT_COLOUR_DEFAULT)
    return imgstat_error_set(
        err, IMGSTAT_ERR_UNSUPPORTED, "a %s image is not normalized",
        imgstat_colour_layout_name(img->colour, img->channels));
  if (o->out_sample != 0 && o->out_sample != IMGSTAT_U8 &&
      o->out_sample != IMGSTAT_U16 && o->out_sample != IMGSTAT_F32)
    return imgstat_error_set(err, IMGSTAT_ERR_ARG, "invalid output depth");
  switch (o->mode) {
  case IMGSTAT_NORM_MINMAX:
    break;
  case IMGSTAT_NORM_CLIP:
    if (!(o->clip_low >= 0.0 && o->clip_low <= o->clip_high &&
          o->clip_high <= 100.0))
      return imgstat_error_set(
          err, IMGSTAT_ERR_ARG,
          "clip needs percentiles 0 <= LOW <= HIGH <= 100 (got %g,%g)",
          o->clip_low, o->clip_high);
    break;
  case IMGSTAT_NORM_RANGE:
    if (!(isfinite(o->range_low) && isfinite(o->range_high) &&
          o->range_low < o->range_high))
      return with_cause(
          err, IMGSTAT_CAUSE_RANGE, 0,
          imgstat_error_set(err, IMGSTAT_ERR_ARG,
                            "range needs finite LOW < HIGH (got %g,%g)",
                            o->range_low, o->range_high));
    break;
  case IMGSTAT_NORM_ZSCORE:
  case IMGSTAT_NORM_GIVEN:
    if (o->out_sample != 0 && o->out_sample != IMGSTAT_F32)
      return with_cause(
          err, IMGSTAT_CAUSE_MEAN_STD, 0,
          imgstat_error_set(err, IMGSTAT_ERR_ARG,
                            "zscore and given mean and std write float32 "
                            "(use .npy or .pfm, depth 32)"));
    if (o->mode == IMGSTAT_NORM_GIVEN) {
      if (o->nstats < 1 || o->nstats > IMGSTAT_MAX_CHANNELS)
        return with_cause(err, IMGSTAT_CAUSE_MEAN_STD, 0,
                          imgstat_error_set(err, IMGSTAT_ERR_ARG,
                                            "no mean and std values given"));
      /* one value for all, or one per channel normalized: the colour
       * channels, and alpha when it is normalized (values for an alpha
       * that is copied or dropped are allowed, unused); any other count is
       * a mistake, never cut or stretched to fit */
      int colour =
          img->channels -
          (imgstat_channel_is_alpha(img->channels, img->channels - 1) ? 1 : 0);
      int normalized =
          o->alpha == IMGSTAT_ALPHA_NORMALIZE ? img->channels : colour;
      if (o->nstats != 1 && o->nstats != normalized &&
          o->nstats != img->channels)
        return with_cause(
            err, IMGSTAT_CAUSE_MEAN_STD, (uint64_t)o->nstats,
            imgstat_error_set(
                err, IMGSTAT_ERR_ARG,
                "%d mean and std values for a %s image (%d channel%s "
                "normalized): give %s%d value%s, or convert it to another "
                "layout",
                o->nstats, imgstat_layout_name(img->channels), normalized,
                normalized == 1 ? "" : "s", normalized == 1 ? "" : "1 or ",
                normalized, normalized == 1 ? "" : "s"));
      for (int i = 0; i < o->nstats; i++) {
        if (!isfinite(o->mean[i]) || !isfinite(o->std[i]) || !(o->std[i] > 0))
          return with_cause(
              err, IMGSTAT_CAUSE_MEAN_STD, 0,
              imgstat_error_set(err, IMGSTAT_ERR_ARG,
                                "mean must be finite and std finite and > 0"));
      }
    }
    break;
  default:
    return imgstat_error_set(err, IMGSTAT_ERR_ARG, "unknown mode");
  }
  return IMGSTAT_OK;
}

/* Which channels take part in the measurement: colour channels, and alpha
 * when it is normalized. Linking never includes alpha. */
static int channel_normalized(const imgstat_image *img,
                              const imgstat_norm_options *o, int c) {
  return !imgstat_channel_is_alpha(img->channels, c) ||
         o->alpha == IMGSTAT_ALPHA_NORMALIZE;
}

int ist_norm_clip_range(const imgstat_histogram *h,
                        const imgstat_norm_options *o, double *lo, double *hi) {
  return imgstat_histogram_percentile(h, o->clip_low, lo) &&
         imgstat_histogram_percentile(h, o->clip_high, hi);
}

/* The percentiles of each normalized channel; with `linked`, of the colour
 * channels' histograms added together (float: over one common range). */
static imgstat_status measure_clip(const imgstat_image *img,
                                   const imgstat_norm_options *o,
                                   imgstat_norm_measure *m,
                                   imgstat_error *err) {
  imgstat_status st = IMGSTAT_OK;
  imgstat_hist_options own = {o->float_bins, 0, 0, 0};
  imgstat_hist_options common = own;
  if (o->linked && img->sample == IMGSTAT_F32) {
    int any = 0;
    for (int c = 0; c < img->channels; c++) {
      double lo, hi;
      if (imgstat_channel_is_alpha(img->channels, c) ||
          !imgstat_image_finite_range(img, c, &lo, &hi))
        continue;
      common.lo = any ? fmin(common.lo, lo) : lo;
      common.hi = any ? fmax(common.hi, hi) : hi;
      any = 1;
    }
    common.have_range = 1;
  }
  imgstat_histogram linked;
  memset(&linked, 0, sizeof linked);
  for (int c = 0; c < img->channels && st == IMGSTAT_OK; c++) {
    if (!channel_normalized(img, o, c))
      continue;
    int link = o->linked && !imgstat_channel_is_alpha(img->channels, c);
    imgstat_histogram h;
    st = imgstat_histogram_compute(img, c, link ? &common : &own, &h, err);
    if (st != IMGSTAT_OK)
      break;
    if (link && !linked.counts) {
      linked = h; /* the first linked channel starts the sum */
      continue;
    }
    if (link) {
      st = imgstat_histogram_add(&linked, &h, err);
    } else {
      m->has_values[c] = ist_norm_clip_range(&h, o, &m->lo[c], &m->hi[c]);
    }
    imgstat_histogram_free(&h);
  }
  if (st == IMGSTAT_OK && linked.counts) {
    double lo = 0, hi = 0;
    int any = ist_norm_clip_range(&linked, o, &lo, &hi);
    for (int c = 0; c < img->channels; c++) {
      if (imgstat_channel_is_alpha(img->channels, c))
        continue;
      m->has_values[c] = any;
      m->lo[c] = lo;
      m->hi[c] = hi;
    }
  }
  imgstat_histogram_free(&linked);
  return st;
}

imgstat_status imgstat_norm_measure_cpu(const imgstat_image *img,
                                        const imgstat_norm_options *o,
                                        int threads, imgstat_norm_measure *m,
                                        imgstat_error *err) {
  memset(m, 0, sizeof *m);
  imgstat_status st = imgstat_norm_options_check(img, o, err);
  if (st != IMGSTAT_OK)
    return st;
  if (o->mode == IMGSTAT_NORM_GIVEN || o->mode == IMGSTAT_NORM_RANGE)
    return IMGSTAT_OK;
  if (o->measured) { /* given: nothing to measure */
    *m = *o->measured;
    return IMGSTAT_OK;
  }
  if (o->mode == IMGSTAT_NORM_CLIP)
    return measure_clip(img, o, m, err);
  imgstat_partial p[IMGSTAT_MAX_CHANNELS];
  st = imgstat_cpu_stats(img, threads, p, err);
  if (st != IMGSTAT_OK)
    return st;
  ist_norm_measure_from_partials(p, img->channels, img->sample, img->width, o,
                                 m);
  return IMGSTAT_OK;
}

imgstat_status ist_norm_out_alloc(const imgstat_norm_plan *plan, uint32_t width,
                                  uint32_t height, const char *format,
                                  imgstat_image *out, imgstat_error *err) {
  imgstat_status st =
      imgstat_image_alloc(out, width, height, plan->channels_out,
                          plan->out_sample, IMGSTAT_MAX_PIXELS_LIMIT, err);
  if (st == IMGSTAT_OK)
    out->format = format;
  return st;
}

void ist_norm_measure_from_partials(const imgstat_partial *p, int channels,
                                    imgstat_sample sample, uint32_t width,
                                    const imgstat_norm_options *o,
                                    imgstat_norm_measure *m) {
  for (int c = 0; c < channels; c++) {
    imgstat_figures f;
    imgstat_figures_compute(&p[c], sample, width, 0, &f);
    m->has_values[c] = f.has_values;
    m->lo[c] = f.has_values ? f.min : 0;
    m->hi[c] = f.has_values ? f.max : 0;
    m->mean[c] = f.has_values ? f.mean : 0;
    m->std[c] = f.has_std ? f.std : 0;
  }
  if (o->mode == IMGSTAT_NORM_MINMAX && o->linked)
    imgstat_norm_measure_link(channels, m);
}

void imgstat_norm_measure_link(int channels, imgstat_norm_measure *m) {
  int any = 0;
  double lo = 0, hi = 0;
  for (int c = 0; c < channels; c++) {
    if (imgstat_channel_is_alpha(channels, c) || !m->has_values[c])
      continue;
    lo = any ? fmin(lo, m->lo[c]) : m->lo[c];
    hi = any ? fmax(hi, m->hi[c]) : m->hi[c];
    any = 1;
  }
  for (int c = 0; c < channels; c++) {
    if (imgstat_channel_is_alpha(channels, c) || !m->has_values[c])
      continue;
    m->lo[c] = lo;
    m->hi[c] = hi;
  }
}

imgstat_status imgstat_norm_plan_make(const imgstat_image *img,
                                      const imgstat_norm_options *o,
                                      const imgstat_norm_measure *m,
                                      imgstat_norm_plan *plan,
                                      imgstat_error *err) {
  memset(plan, 0, sizeof *plan);
  imgstat_status st = imgstat_norm_options_check(img, o, err);
  if (st != IMGSTAT_OK)
    return st;
  if (o->measured)
    m = o->measured;
  if (!m && o->mode != IMGSTAT_NORM_GIVEN && o->mode != IMGSTAT_NORM_RANGE)
    return imgstat_error_set(err, IMGSTAT_ERR_ARG, "no measurements");
  /* the given values' unit: the input's full scale with scale_unit */
  double unit = o->scale_unit ? (double)sample_max(img->sample) : 1.0;
  /* figures given for every image (measured) are in that unit too */
  double mu = 1.0;
  if (o->measured)
    mu = unit;
  plan->in_sample = img->sample;
  if (o->out_sample)
    plan->out_sample = o->out_sample;
  else if (o->mode == IMGSTAT_NORM_MINMAX || o->mode == IMGSTAT_NORM_CLIP ||
           o->mode == IMGSTAT_NORM_RANGE)
    plan->out_sample = img->sample;
  else
    plan->out_sample = IMGSTAT_F32;
  int n = 0;
  for (int c = 0; c < img->channels; c++) {
    int alpha = imgstat_channel_is_alpha(img->channels, c);
    if (alpha && o->alpha == IMGSTAT_ALPHA_DROP)
      continue;
    imgstat_channel_map map = {IMGSTAT_MAP_CONVERT, 0, 0};
    if (!alpha || o->alpha == IMGSTAT_ALPHA_NORMALIZE) {
      switch (o->mode) {
      case IMGSTAT_NORM_MINMAX:
      case IMGSTAT_NORM_CLIP:
        if (m->has_values[c]) {
          map.kind = IMGSTAT_MAP_STRETCH;
          map.a = m->lo[c] * mu;
          map.b = m->hi[c] * mu;
        }
        break;
      case IMGSTAT_NORM_ZSCORE:
        map.kind = IMGSTAT_MAP_STANDARDIZE;
        map.a = m->has_values[c] ? m->mean[c] * mu : 0;
        map.b = m->has_values[c] ? m->std[c] * mu : 0;
        break;
      case IMGSTAT_NORM_GIVEN: {
        int i = o->nstats == 1 ? 0 : c;
        map.kind = IMGSTAT_MAP_STANDARDIZE;
        map.a = o->mean[i] * unit;
        map.b = o->std[i] * unit;
        break;
      }
      case IMGSTAT_NORM_RANGE:
        map.kind = IMGSTAT_MAP_STRETCH;
        map.a = o->range_low * unit;
        map.b = o->range_high * unit;
        break;
      }
    }
    plan->source[n] = c;
    plan->map[n] = map;
    n++;
  }
  if (n == 0)
    return imgstat_error_set(err, IMGSTAT_ERR_ARG, "no channel left");
  plan->channels_out = n;
  return IMGSTAT_OK;
}

/* round(num / den) with halves to even; den > 0. */
static uint64_t div_round_even(uint64_t num, uint64_t den) {
  uint64_t q = num / den, r = num % den;
  if (2 * r > den || (2 * r == den && (q & 1)))
    q++;
  return q;
}

static uint32_t float_bits(float f) {
  uint32_t u;
  memcpy(&u, &f, sizeof u);
  return u;
}

void imgstat_norm_plan_lut(const imgstat_norm_plan *plan, int o,
                           uint32_t *lut) {
  uint32_t in_max = sample_max(plan->in_sample);
  uint32_t out_max = sample_max(plan->out_sample);
  const imgstat_channel_map *mp = &plan->map[o];
  for (uint32_t x = 0; x <= in_max; x++) {
    if (plan->out_sample == IMGSTAT_F32) {
      float y;
      if (mp->kind == IMGSTAT_MAP_CONVERT ||
          (mp->kind == IMGSTAT_MAP_STRETCH && mp->a == mp->b &&
           (double)x == mp->a))
        y = (float)((double)x / (double)in_max);
      else
        y = ist_map_f32_f32((float)x, (int)mp->kind, mp->a, mp->b);
      lut[x] = float_bits(y);
      continue;
    }
    /* integer to integer: exact rationals when a and b are integer values
     * (min/max/percentiles of integer samples); a range given by the user
     * (--range) may not be: then rint in double of the same ratio */
    if (mp->kind == IMGSTAT_MAP_STRETCH &&
        (mp->a != floor(mp->a) || mp->b != floor(mp->b) || mp->a < 0 ||
         mp->b > in_max)) {
      double t = ((double)x - mp->a) / (mp->b - mp->a);
      lut[x] = t <= 0   ? 0
               : t >= 1 ? out_max
                        : (uint32_t)rint(t * (double)out_max);
      continue;
    }
    uint64_t a = (uint64_t)mp->a, b = (uint64_t)mp->b;
    if (mp->kind == IMGSTAT_MAP_STRETCH && x < a)
      lut[x] = 0;
    else if (mp->kind == IMGSTAT_MAP_STRETCH && x > b)
      lut[x] = out_max;
    else if (mp->kind == IMGSTAT_MAP_STRETCH && b > a)
      lut[x] = (uint32_t)div_round_even((uint64_t)(x - a) * out_max, b - a);
    else /* CONVERT, or the constant range a == b == x */
      lut[x] = (uint32_t)div_round_even((uint64_t)x * out_max, in_max);
  }
}

/* ---- applying a plan ---------------------------------------------------- */

typedef struct apply_job {
  const imgstat_image *in;
  const imgstat_norm_plan *plan;
  imgstat_image *out;
  const uint32_t *lut[IMGSTAT_MAX_CHANNELS];
  uint64_t first, end;
} apply_job;

/* One loop per (input, output) type pair so that each inner loop is a
 * plain table lookup or formula the compiler can unroll. */
#define IMGSTAT_LUT_LOOP(TIN, TOUT)                                            \
  do {                                                                         \
    const TIN *restrict src_ = (const TIN *)src;                               \
    TOUT *restrict dst_ = (TOUT *)dst;                                         \
    for (uint64_t i = 0; i < n; i++)                                           \
      dst_[i] = (TOUT)lut[src_[i]];                                            \
  } while (0)

/* Float output: the table holds the float's bits; memcpy keeps the store
 * typed as float (no aliasing through uint32_t) and compiles to a move. */
#define IMGSTAT_LUT_LOOP_F32(TIN)                                              \
  do {                                                                         \
    const TIN *restrict src_ = (const TIN *)src;                               \
    float *restrict dst_ = (float *)dst;                                       \
    for (uint64_t i = 0; i < n; i++) {                                         \
      float f_;                                                                \
      memcpy(&f_, &lut[src_[i]], sizeof f_);                                   \
      dst_[i] = f_;                                                            \
    }                                                                          \
  } while (0)

/* Output channel o of n samples from src to dst. */
static void apply_run(const apply_job *j, int o, const void *src, void *dst,
                      uint64_t n) {
  const imgstat_norm_plan *plan = j->plan;
  uint32_t out_max = sample_max(plan->out_sample);
  const uint32_t *lut = j->lut[o];
  const imgstat_channel_map *mp = &plan->map[o];
  int kind = (int)mp->kind;
  double a = mp->a, b = mp->b;
  if (plan->in_sample == IMGSTAT_U8) {
    if (plan->out_sample == IMGSTAT_U8)
      IMGSTAT_LUT_LOOP(uint8_t, uint8_t);
    else if (plan->out_sample == IMGSTAT_U16)
      IMGSTAT_LUT_LOOP(uint8_t, uint16_t);
    else
      IMGSTAT_LUT_LOOP_F32(uint8_t);
  } else if (plan->in_sample == IMGSTAT_U16) {
    if (plan->out_sample == IMGSTAT_U8)
      IMGSTAT_LUT_LOOP(uint16_t, uint8_t);
    else if (plan->out_sample == IMGSTAT_U16)
      IMGSTAT_LUT_LOOP(uint16_t, uint16_t);
    else
      IMGSTAT_LUT_LOOP_F32(uint16_t);
  } else {
    const float *restrict x = src;
    if (plan->out_sample == IMGSTAT_F32) {
      float *restrict y = dst;
      for (uint64_t i = 0; i < n; i++)
        y[i] = ist_map_f32_f32(x[i], kind, a, b);
    } else if (plan->out_sample == IMGSTAT_U16) {
      uint16_t *restrict y = dst;
      for (uint64_t i = 0; i < n; i++)
        y[i] = (uint16_t)ist_map_f32_int(x[i], kind, a, b, out_max);
    } else {
      uint8_t *restrict y = dst;
      for (uint64_t i = 0; i < n; i++)
        y[i] = (uint8_t)ist_map_f32_int(x[i], kind, a, b, out_max);
    }
  }
}

/* Raster samples [first, end) of every output channel. The output is
 * dense; a strided input is taken row piece by row piece. */
static void apply_range(const apply_job *j) {
  const imgstat_norm_plan *plan = j->plan;
  const imgstat_image *in = j->in;
  size_t in_bytes = (size_t)plan->in_sample;
  size_t out_bytes = (size_t)plan->out_sample;
  int dense = ist_image_is_dense(in);
  for (int o = 0; o < plan->channels_out; o++) {
    int c = plan->source[o];
    unsigned char *dst = j->out->planes[o];
    if (dense) {
      const unsigned char *src = in->planes[c];
      apply_run(j, o, src + j->first * in_bytes, dst + j->first * out_bytes,
                j->end - j->first);
      continue;
    }
    uint64_t w = in->width;
    for (uint64_t i = j->first; i < j->end;) {
      uint64_t y = i / w, x = i % w;
      uint64_t n = w - x < j->end - i ? w - x : j->end - i;
      const unsigned char *src = ist_image_row(in, c, (uint32_t)y);
      apply_run(j, o, src + x * in_bytes, dst + i * out_bytes, n);
      i += n;
    }
  }
}

static void *apply_thread(void *arg) {
  apply_range(arg);
  return NULL;
}

imgstat_status imgstat_norm_apply_cpu(const imgstat_image *in,
                                      const imgstat_norm_plan *plan,
                                      int threads, imgstat_image *out,
                                      imgstat_error *err) {
  memset(out, 0, sizeof *out);
  if (!in || !plan || plan->in_sample != in->sample || plan->channels_out < 1 ||
      plan->channels_out > IMGSTAT_MAX_CHANNELS)
    return imgstat_error_set(err, IMGSTAT_ERR_ARG,
                             "the plan does not fit the image");
  for (int o = 0; o < plan->channels_out; o++)
    if (plan->source[o] < 0 || plan->source[o] >= in->channels)
      return imgstat_error_set(err, IMGSTAT_ERR_ARG,
                               "the plan does not fit the image");
  imgstat_status st =
      ist_norm_out_alloc(plan, in->width, in->height, in->format, out, err);
  if (st != IMGSTAT_OK)
    return st;
  uint32_t *luts = NULL;
  apply_job job = {in, plan, out, {NULL}, 0, 0};
  if (in->sample != IMGSTAT_F32) {
    size_t entries = (size_t)sample_max(in->sample) + 1;
    luts = malloc(entries * plan->channels_out * sizeof *luts);
    if (!luts) {
      imgstat_image_free(out);
      return imgstat_error_set(err, IMGSTAT_ERR_NOMEM,
                               "out of memory for lookup tables");
    }
    for (int o = 0; o < plan->channels_out; o++) {
      imgstat_norm_plan_lut(plan, o, luts + entries * o);
      job.lut[o] = luts + entries * o;
    }
  }
  uint64_t n = (uint64_t)in->width * in->height;
  if (threads <= 0)
    threads = imgstat_cpu_cores();
  if (threads > 64)
    threads = 64;
  if ((uint64_t)threads > n / 65536 + 1)
    threads = (int)(n / 65536 + 1);
  apply_job jobs[64];
  pthread_t tid[64];
  int joined[64] = {0};
  for (int t = 0; t < threads; t++) {
    jobs[t] = job;
    /* band edges on multiples of 16 samples keep threads off each other's
     * cache lines */
    jobs[t].first = (n * t / threads) & ~UINT64_C(15);
    jobs[t].end =
        t + 1 == threads ? n : (n * (t + 1) / threads) & ~UINT64_C(15);
  }
  for (int t = 1; t < threads; t++) {
    if (pthread_create(&tid[t], NULL, apply_thread, &jobs[t]) == 0)
      joined[t] = 1;
    else
      apply_range(&jobs[t]); /* no thread: do that band here */
  }
  apply_range(&jobs[0]);
  for (int t = 1; t < threads; t++)
    if (joined[t])
      pthread_join(tid[t], NULL);
  free(luts);
  return IMGSTAT_OK;
}
