/*
 * The dataset accumulator (imgstat_dataset.h): one exact pool per pooled
 * layout and depth, the images' summaries, the pooled histograms; the
 * figures, the images left out and the outliers at the end.
 */
#include "imgstat/dataset.h"
#include "checksum.h"

#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define NLAYOUT 5 /* pooled channels 1..4 */
#define NDEPTH 3  /* u8, u16, f32 */

typedef struct group {
  imgstat_pool pool;
  uint64_t first; /* smallest ordinal pooled here; UINT64_MAX: none */
  uint64_t images;
  uint64_t hist_images; /* images that brought histograms */
  imgstat_histogram hist[IMGSTAT_MAX_CHANNELS]; /* counts NULL until used */
} group;

/* One image as the outlier rule and the notes need it. */
typedef struct summary {
  uint64_t ordinal;
  char *name;
  uint32_t width, height;
  int channels; /* the image's own */
  int depth;    /* depth index 0..2 */
  int pooled;   /* pooled channels */
  int constant; /* every colour channel holds one value */
  double const_value;
  double mean[IMGSTAT_MAX_CHANNELS]; /* unit scale (÷255, ÷65535) */
  double std[IMGSTAT_MAX_CHANNELS];
} summary;

struct imgstat_dataset {
  imgstat_dataset_options o;
  group g[NLAYOUT][NDEPTH];
  summary *s;
  size_t n, cap;
  uint64_t failed;
};

const imgstat_dataset_options *
imgstat_dataset_options_of(const imgstat_dataset *d) {
  return &d->o;
}

static const char *const as_names[] = {"keep", "gray", "rgb", "rgba"};

const char *imgstat_dataset_as_name(imgstat_dataset_as as) {
  return (unsigned)as < 4 ? as_names[as] : "keep";
}

int imgstat_dataset_as_from_name(const char *name, imgstat_dataset_as *out) {
  for (int k = 0; k < 4; k++)
    if (strcmp(name, as_names[k]) == 0) {
      *out = (imgstat_dataset_as)k;
      return 1;
    }
  return 0;
}

static int depth_index(imgstat_sample s) {
  return s == IMGSTAT_U8 ? 0 : s == IMGSTAT_U16 ? 1 : 2;
}

static const imgstat_sample depth_sample[NDEPTH] = {IMGSTAT_U8, IMGSTAT_U16,
                                                    IMGSTAT_F32};
/* Rec. 601 luma of integer samples in 16.16 fixed point, rounded: the
 * weights 19595, 38470 and 7471 / 65536 (0.299, 0.587, 0.114), as Pillow's
 * convert("L") computes it (its L24 macro), exact for 8 and 16 bits. */
static uint32_t luma(uint32_t r, uint32_t g, uint32_t b) {
  return (uint32_t)(((uint64_t)19595 * r + (uint64_t)38470 * g +
                     (uint64_t)7471 * b + 0x8000) >>
                    16);
}

static const double depth_top[NDEPTH] = {255.0, 65535.0, 1.0};

int imgstat_dataset_pooled_channels(const imgstat_dataset_options *o,
                                    int channels) {
  switch (o->as) {
  case IMGSTAT_AS_GRAY:
    return 1;
  case IMGSTAT_AS_RGB:
    return 3;
  case IMGSTAT_AS_RGBA:
    return 4;
  default:
    return channels;
  }
}

int imgstat_dataset_needs_gray(const imgstat_dataset_options *o, int channels) {
  return o->as == IMGSTAT_AS_GRAY && channels >= 3;
}

imgstat_status imgstat_dataset_gray(const imgstat_image *img,
                                    imgstat_image *gray, imgstat_error *err) {
  memset(gray, 0, sizeof *gray);
  if (!img || img->channels < 3 || img->colour != IMGSTAT_COLOUR_DEFAULT)
    return imgstat_error_set(err, IMGSTAT_ERR_ARG,
                             "the gray conversion needs an RGB or RGBA image");
  imgstat_status st = imgstat_image_alloc(gray, img->width, img->height, 1,
                                          img->sample, UINT64_MAX, err);
  if (st != IMGSTAT_OK)
    return st;
  size_t stride = imgstat_image_stride(img);
  for (uint32_t y = 0; y < img->height; y++) {
    const char *r = (const char *)img->planes[0] + y * stride;
    const char *g = (const char *)img->planes[1] + y * stride;
    const char *b = (const char *)img->planes[2] + y * stride;
    size_t at = (size_t)y * img->width;
    if (img->sample == IMGSTAT_U8) {
      uint8_t *o = (uint8_t *)gray->planes[0] + at;
      for (uint32_t x = 0; x < img->width; x++)
        o[x] = (uint8_t)luma((uint8_t)r[x], (uint8_t)g[x], (uint8_t)b[x]);
    } else if (img->sample == IMGSTAT_U16) {
      const uint16_t *r16 = (const uint16_t *)r, *g16 = (const uint16_t *)g,
                     *b16 = (const uint16_t *)b;
      uint16_t *o = (uint16_t *)gray->planes[0] + at;
      for (uint32_t x = 0; x < img->width; x++)
        o[x] = (uint16_t)luma(r16[x], g16[x], b16[x]);
    } else {
      const float *rf = (const float *)r, *gf = (const float *)g,
                  *bf = (const float *)b;
      float *o = (float *)gray->planes[0] + at;
      for (uint32_t x = 0; x < img->width; x++)
        o[x] = (float)(0.299 * rf[x] + 0.587 * gf[x] + 0.114 * bf[x]);
    }
  }
  return IMGSTAT_OK;
}

imgstat_status imgstat_dataset_convert(const imgstat_image *img,
                                       imgstat_dataset_as as,
                                       imgstat_image *out, imgstat_error *err) {
  memset(out, 0, sizeof *out);
  if (!img || img->channels < 1 || img->channels > IMGSTAT_MAX_CHANNELS)
    return imgstat_error_set(err, IMGSTAT_ERR_ARG, "no image to convert");
  if (img->colour != IMGSTAT_COLOUR_DEFAULT)
    return imgstat_error_set(
        err, IMGSTAT_ERR_UNSUPPORTED, "a %s image converts to no other layout",
        imgstat_colour_layout_name(img->colour, img->channels));
  imgstat_dataset_options o;
  memset(&o, 0, sizeof o);
  o.as = as;
  int n = imgstat_dataset_pooled_channels(&o, img->channels);
  if (imgstat_dataset_needs_gray(&o, img->channels))
    return imgstat_dataset_gray(img, out, err);
  int gray = img->channels < 3;
  /* the source plane of each output channel; -1: an opaque alpha */
  int src[IMGSTAT_MAX_CHANNELS];
  for (int c = 0; c < n; c++)
    src[c] = n == img->channels ? c
             : c < 3 && n >= 3  ? (gray ? 0 : c)
             : c == 3
                 ? (img->channels == 2 || img->channels == 4 ? img->channels - 1
                                                             : -1)
                 : c; /* gray of gray+alpha: Y */
  int views = 1;
  for (int c = 0; c < n; c++)
    views &= src[c] >= 0;
  if (views) { /* the planes of img, borrowed */
    *out = *img;
    out->data = NULL;
    out->borrowed = 1;
    out->channels = n;
    memset(out->planes, 0, sizeof out->planes);
    for (int c = 0; c < n; c++)
      out->planes[c] = img->planes[src[c]];
    return IMGSTAT_OK;
  }
  imgstat_status st = imgstat_image_alloc(out, img->width, img->height, n,
                                          img->sample, UINT64_MAX, err);
  if (st != IMGSTAT_OK)
    return st;
  out->format = img->format;
  out->pages = img->pages;
  out->page = img->page;
  size_t in_stride = imgstat_image_stride(img);
  size_t row = imgstat_image_stride(out);
  for (int c = 0; c < n; c++)
    for (uint32_t y = 0; y < img->height; y++) {
      char *o = (char *)out->planes[c] + y * row;
      if (src[c] >= 0) {
        memcpy(o, (const char *)img->planes[src[c]] + y * in_stride, row);
        continue;
      }
      for (uint32_t x = 0; x < img->width; x++)
        if (img->sample == IMGSTAT_U8)
          ((uint8_t *)o)[x] = 255;
        else if (img->sample == IMGSTAT_U16)
          ((uint16_t *)o)[x] = 65535;
        else
          ((float *)o)[x] = 1.0f;
    }
  return IMGSTAT_OK;
}

/* ---- the accumulator -------------------------------------------------------
 */

static void group_init(group *g) {
  memset(g, 0, sizeof *g);
  imgstat_pool_init(&g->pool);
  g->first = UINT64_MAX;
}

imgstat_status imgstat_dataset_create(const imgstat_dataset_options *opts,
                                      imgstat_dataset **out,
                                      imgstat_error *err) {
  if (!out)
    return imgstat_error_set(err, IMGSTAT_ERR_ARG, "no output");
  *out = NULL;
  imgstat_dataset *d = calloc(1, sizeof *d);
  if (!d)
    return imgstat_error_set(err, IMGSTAT_ERR_NOMEM, "out of memory");
  if (opts)
    d->o = *opts;
  if (!(d->o.outlier_z > 0))
    d->o.outlier_z = IMGSTAT_DATASET_OUTLIER_Z;
  if (d->o.float_bins == 0)
    d->o.float_bins = IMGSTAT_FLOAT_BINS_DEFAULT;
  if ((unsigned)d->o.as > IMGSTAT_AS_RGBA ||
      (d->o.have_range &&
       !(d->o.lo <= d->o.hi && isfinite(d->o.lo) && isfinite(d->o.hi)))) {
    free(d);
    return imgstat_error_set(err, IMGSTAT_ERR_ARG,
                             "bad dataset options (--as or the range)");
  }
  for (int l = 0; l < NLAYOUT; l++)
    for (int k = 0; k < NDEPTH; k++)
      group_init(&d->g[l][k]);
  *out = d;
  return IMGSTAT_OK;
}

void imgstat_dataset_destroy(imgstat_dataset *d) {
  if (!d)
    return;
  for (int l = 0; l < NLAYOUT; l++)
    for (int k = 0; k < NDEPTH; k++)
      for (int c = 0; c < IMGSTAT_MAX_CHANNELS; c++)
        imgstat_histogram_free(&d->g[l][k].hist[c]);
  for (size_t i = 0; i < d->n; i++)
    free(d->s[i].name);
  free(d->s);
  free(d);
}

void imgstat_dataset_add_failed(imgstat_dataset *d, uint64_t ordinal) {
  (void)ordinal;
  if (d)
    d->failed++;
}

/* The partial of an opaque alpha plane of n samples. */
static imgstat_partial opaque_partial(uint64_t n, imgstat_sample s) {
  imgstat_partial p;
  imgstat_partial_init(&p);
  if (n == 0)
    return p;
  double top = depth_top[depth_index(s)];
  p.count = n;
  p.min = p.max = top;
  p.min_index = p.max_index = 0;
  if (s == IMGSTAT_F32) {
    p.mean = 1.0;
  } else {
    p.sum = n * (uint64_t)top;
    p.sumsq = n * (uint64_t)top * (uint64_t)top;
  }
  return p;
}

/* Which of the image's channels feeds each pooled channel (-1: opaque
 * alpha). */
static void channel_map(const imgstat_dataset_options *o, int channels,
                        int pooled, int map[IMGSTAT_MAX_CHANNELS]) {
  for (int c = 0; c < pooled; c++)
    map[c] = c;
  if (o->as == IMGSTAT_AS_KEEP || imgstat_dataset_needs_gray(o, channels))
    return;
  int gray = channels <= 2;
  for (int c = 0; c < pooled; c++) {
    if (c < 3)
      map[c] = gray ? 0 : c;
    else /* the alpha of RGBA */
      map[c] = channels == 2 ? 1 : channels == 4 ? 3 : -1;
  }
}

static imgstat_status hist_ready(imgstat_histogram *h, imgstat_sample s,
                                 const imgstat_dataset_options *o,
                                 imgstat_error *err) {
  if (h->counts)
    return IMGSTAT_OK;
  return imgstat_histogram_alloc(h, s, o->float_bins, o->lo, o->hi, err);
}

/* Adds histogram b (NULL: an opaque alpha plane of n samples) to a. */
static void hist_add(imgstat_histogram *a, const imgstat_histogram *b,
                     uint64_t n) {
  if (b) {
    for (uint32_t i = 0; i < a->bins; i++)
      a->counts[i] += b->counts[i];
    a->total += b->total;
    a->nan_count += b->nan_count;
    a->inf_count += b->inf_count;
    return;
  }
  uint32_t bin = a->bins - 1;
  if (a->sample == IMGSTAT_F32) {
    double w = a->hi - a->lo;
    double t = w > 0 ? floor((1.0 - a->lo) * (a->bins / w)) : 0;
    bin = t < 0 ? 0 : t >= a->bins ? a->bins - 1 : (uint32_t)t;
  }
  a->counts[bin] += n;
  a->total += n;
}

static int hist_fits(const imgstat_histogram *h, imgstat_sample s,
                     const imgstat_dataset_options *o) {
  if (!h->counts || h->sample != s)
    return 0;
  if (s != IMGSTAT_F32)
    return h->bins == (s == IMGSTAT_U8 ? 256u : 65536u);
  return o->have_range && h->bins == o->float_bins && h->lo == o->lo &&
         h->hi == o->hi;
}

imgstat_status imgstat_dataset_add(imgstat_dataset *d, uint64_t ordinal,
                                   const imgstat_dataset_image *im,
                                   imgstat_error *err) {
  if (!d || !im || !im->partial || im->channels < 1 ||
      im->channels > IMGSTAT_MAX_CHANNELS || im->width == 0 ||
      im->height == 0 ||
      (im->sample != IMGSTAT_U8 && im->sample != IMGSTAT_U16 &&
       im->sample != IMGSTAT_F32))
    return imgstat_error_set(err, IMGSTAT_ERR_ARG,
                             "imgstat_dataset_add: a bad image description");
  if (im->colour != IMGSTAT_COLOUR_DEFAULT)
    return imgstat_error_set(
        err, IMGSTAT_ERR_UNSUPPORTED,
        "a %s image is not pooled: it converts to no Y, YA, RGB or RGBA "
        "layout",
        imgstat_colour_layout_name(im->colour, im->channels));
  const imgstat_dataset_options *o = &d->o;
  int pooled = imgstat_dataset_pooled_channels(o, im->channels);
  int k = depth_index(im->sample);
  group *g = &d->g[pooled][k];
  uint64_t n = (uint64_t)im->width * im->height;
  int map[IMGSTAT_MAX_CHANNELS];
  channel_map(o, im->channels, pooled, map);
  imgstat_partial parts[IMGSTAT_MAX_CHANNELS];
  for (int c = 0; c < pooled; c++)
    parts[c] = map[c] < 0 ? opaque_partial(n, im->sample) : im->partial[map[c]];

  /* Histograms: only when every one fits the pooled ones. */
  int with_hist = o->histograms && im->hist;
  for (int c = 0; c < pooled && with_hist; c++)
    if (map[c] >= 0 && !hist_fits(&im->hist[map[c]], im->sample, o))
      with_hist = 0;
  for (int c = 0; c < pooled && with_hist; c++) {
    imgstat_status st = hist_ready(&g->hist[c], im->sample, o, err);
    if (st != IMGSTAT_OK)
      return st;
  }
  if (d->n == d->cap) {
    size_t cap = d->cap ? 2 * d->cap : 64;
    summary *s = realloc(d->s, cap * sizeof *s);
    if (!s)
      return imgstat_error_set(err, IMGSTAT_ERR_NOMEM, "out of memory");
    d->s = s;
    d->cap = cap;
  }
  summary *s = &d->s[d->n];
  memset(s, 0, sizeof *s);
  s->name = strdup(im->name ? im->name : "");
  if (!s->name)
    return imgstat_error_set(err, IMGSTAT_ERR_NOMEM, "out of memory");
  imgstat_status st = imgstat_pool_add(&g->pool, ordinal, parts, pooled,
                                       im->sample, im->width, err);
  if (st != IMGSTAT_OK) {
    free(s->name);
    return st;
  }
  s->ordinal = ordinal;
  s->width = im->width;
  s->height = im->height;
  s->channels = im->channels;
  s->depth = k;
  s->pooled = pooled;
  int colour = pooled == 2 || pooled == 4 ? pooled - 1 : pooled;
  s->constant = 1;
  for (int c = 0; c < pooled; c++) {
    imgstat_figures f;
    imgstat_figures_compute(&parts[c], im->sample, im->width, 0, &f);
    s->mean[c] = f.mean / depth_top[k];
    s->std[c] = f.std / depth_top[k];
    if (c < colour && (!f.has_values || f.min != f.max ||
                       (c > 0 && f.min / depth_top[k] != s->const_value)))
      s->constant = 0;
    if (c == 0)
      s->const_value = f.min / depth_top[k];
  }
  d->n++;
  if (ordinal < g->first)
    g->first = ordinal;
  g->images++;
  if (with_hist) {
    g->hist_images++;
    for (int c = 0; c < pooled; c++)
      hist_add(&g->hist[c], map[c] < 0 ? NULL : &im->hist[map[c]], n);
  }
  return IMGSTAT_OK;
}

static int same_options(const imgstat_dataset_options *a,
                        const imgstat_dataset_options *b) {
  return a->as == b->as && a->scale_unit == b->scale_unit &&
         a->outlier_z == b->outlier_z && a->histograms == b->histograms &&
         a->have_range == b->have_range &&
         (!a->have_range || (a->lo == b->lo && a->hi == b->hi)) &&
         a->float_bins == b->float_bins;
}

imgstat_status imgstat_dataset_merge(imgstat_dataset *a,
                                     const imgstat_dataset *b,
                                     imgstat_error *err) {
  if (!a || !b || a == b || !same_options(&a->o, &b->o))
    return imgstat_error_set(err, IMGSTAT_ERR_ARG,
                             "imgstat_dataset_merge: two distinct "
                             "accumulators of the same options needed");
  /* Everything that can fail first, on copies. */
  imgstat_pool *pools = malloc(sizeof(imgstat_pool) * NLAYOUT * NDEPTH);
  if (!pools)
    return imgstat_error_set(err, IMGSTAT_ERR_NOMEM, "out of memory");
  imgstat_status st = IMGSTAT_OK;
  for (int l = 0; l < NLAYOUT && st == IMGSTAT_OK; l++)
    for (int k = 0; k < NDEPTH && st == IMGSTAT_OK; k++) {
      imgstat_pool *p = &pools[l * NDEPTH + k];
      *p = a->g[l][k].pool;
      st = imgstat_pool_merge(p, &b->g[l][k].pool, err);
      for (int c = 0; c < l && st == IMGSTAT_OK; c++)
        if (b->g[l][k].hist[c].counts)
          st = hist_ready(&a->g[l][k].hist[c], depth_sample[k], &a->o, err);
    }
  if (st == IMGSTAT_OK && a->n + b->n > a->cap) {
    size_t cap = a->n + b->n;
    summary *s = realloc(a->s, cap * sizeof *s);
    if (s) {
      a->s = s;
      a->cap = cap;
    } else {
      st = imgstat_error_set(err, IMGSTAT_ERR_NOMEM, "out of memory");
    }
  }
  size_t i = 0;
  for (; st == IMGSTAT_OK && i < b->n; i++) {
    a->s[a->n + i] = b->s[i];
    a->s[a->n + i].name = strdup(b->s[i].name);
    if (!a->s[a->n + i].name)
      st = imgstat_error_set(err, IMGSTAT_ERR_NOMEM, "out of memory");
  }
  if (st != IMGSTAT_OK) {
    while (i-- > 0)
      free(a->s[a->n + i].name);
    free(pools);
    return st;
  }
  a->n += b->n;
  a->failed += b->failed;
  for (int l = 0; l < NLAYOUT; l++)
    for (int k = 0; k < NDEPTH; k++) {
      group *x = &a->g[l][k];
      const group *y = &b->g[l][k];
      x->pool = pools[l * NDEPTH + k];
      x->first = y->first < x->first ? y->first : x->first;
      x->images += y->images;
      x->hist_images += y->hist_images;
      for (int c = 0; c < l; c++)
        if (y->hist[c].counts)
          hist_add(&x->hist[c], &y->hist[c], 0);
    }
  free(pools);
  return IMGSTAT_OK;
}

/* ---- the serialized form ---------------------------------------------------
 */

#define DS_MAGIC "IMGSDSET"
#define DS_VERSION 1u

typedef struct wbuf {
  uint8_t *p;
  size_t n, cap;
  int failed;
} wbuf;

static void w_bytes(wbuf *w, const void *src, size_t n) {
  if (w->failed)
    return;
  if (w->n + n > w->cap) {
    size_t cap = w->cap ? w->cap : 4096;
    while (cap < w->n + n)
      cap *= 2;
    uint8_t *p = realloc(w->p, cap);
    if (!p) {
      w->failed = 1;
      return;
    }
    w->p = p;
    w->cap = cap;
  }
  memcpy(w->p + w->n, src, n);
  w->n += n;
}

static void w_u64(wbuf *w, uint64_t v) {
  uint8_t b[8];
  for (int i = 0; i < 8; i++)
    b[i] = (uint8_t)(v >> (8 * i));
  w_bytes(w, b, 8);
}

static void w_f64(wbuf *w, double v) {
  uint64_t b;
  memcpy(&b, &v, sizeof b);
  w_u64(w, b);
}

typedef struct rbuf {
  const uint8_t *p;
  size_t n, at;
  int failed;
} rbuf;

static const uint8_t *r_bytes(rbuf *r, size_t n) {
  if (r->failed || r->n - r->at < n) {
    r->failed = 1;
    return NULL;
  }
  const uint8_t *p = r->p + r->at;
  r->at += n;
  return p;
}

static uint64_t r_u64(rbuf *r) {
  const uint8_t *b = r_bytes(r, 8);
  uint64_t v = 0;
  for (int i = 0; b && i < 8; i++)
    v |= (uint64_t)b[i] << (8 * i);
  return v;
}

static double r_f64(rbuf *r) {
  uint64_t b = r_u64(r);
  double v;
  memcpy(&v, &b, sizeof v);
  return v;
}

imgstat_status imgstat_dataset_serialize(const imgstat_dataset *d, void **buf,
                                         size_t *size, imgstat_error *err) {
  if (!d || !buf || !size)
    return imgstat_error_set(err, IMGSTAT_ERR_ARG,
                             "imgstat_dataset_serialize: no accumulator");
  wbuf w = {NULL, 0, 0, 0};
  w_bytes(&w, DS_MAGIC, 8);
  w_u64(&w, DS_VERSION);
  w_u64(&w, (uint64_t)d->o.as);
  w_u64(&w, (uint64_t)d->o.scale_unit);
  w_f64(&w, d->o.outlier_z);
  w_u64(&w, (uint64_t)d->o.histograms);
  w_u64(&w, (uint64_t)d->o.have_range);
  w_f64(&w, d->o.lo);
  w_f64(&w, d->o.hi);
  w_u64(&w, d->o.float_bins);
  w_u64(&w, d->failed);
  uint8_t pool[IMGSTAT_POOL_SERIALIZED_MAX];
  for (int l = 0; l < NLAYOUT; l++)
    for (int k = 0; k < NDEPTH; k++) {
      const group *g = &d->g[l][k];
      size_t used = 0;
      imgstat_status st =
          imgstat_pool_serialize(&g->pool, pool, sizeof pool, &used, err);
      if (st != IMGSTAT_OK) {
        free(w.p);
        return st;
      }
      w_u64(&w, used);
      w_bytes(&w, pool, used);
      w_u64(&w, g->first);
      w_u64(&w, g->images);
      w_u64(&w, g->hist_images);
      for (int c = 0; c < IMGSTAT_MAX_CHANNELS; c++) {
        const imgstat_histogram *h = &g->hist[c];
        w_u64(&w, h->counts ? h->bins : 0);
        if (!h->counts)
          continue;
        w_u64(&w, h->total);
        w_u64(&w, h->nan_count);
        w_u64(&w, h->inf_count);
        for (uint32_t b = 0; b < h->bins; b++)
          w_u64(&w, h->counts[b]);
      }
    }
  w_u64(&w, d->n);
  for (size_t i = 0; i < d->n; i++) {
    const summary *s = &d->s[i];
    size_t len = strlen(s->name);
    w_u64(&w, s->ordinal);
    w_u64(&w, len);
    w_bytes(&w, s->name, len);
    w_u64(&w, (uint64_t)s->width << 32 | s->height);
    w_u64(&w, (uint64_t)s->channels | (uint64_t)s->depth << 8 |
                  (uint64_t)s->pooled << 16 | (uint64_t)s->constant << 24);
    w_f64(&w, s->const_value);
    for (int c = 0; c < IMGSTAT_MAX_CHANNELS; c++) {
      w_f64(&w, s->mean[c]);
      w_f64(&w, s->std[c]);
    }
  }
  if (!w.failed)
    w_u64(&w, ist_fnv1a(w.p, w.n));
  if (w.failed) {
    free(w.p);
    return imgstat_error_set(err, IMGSTAT_ERR_NOMEM, "out of memory");
  }
  *buf = w.p;
  *size = w.n;
  return IMGSTAT_OK;
}

static imgstat_status bad_form(imgstat_dataset *d, imgstat_error *err) {
  imgstat_dataset_destroy(d);
  return imgstat_error_set(err, IMGSTAT_ERR_FORMAT,
                           "not a serialized imgstat dataset (or damaged)");
}

imgstat_status imgstat_dataset_deserialize(const void *buf, size_t size,
                                           imgstat_dataset **out,
                                           imgstat_error *err) {
  if (!buf || !out)
    return imgstat_error_set(err, IMGSTAT_ERR_ARG, "no buffer or output");
  *out = NULL;
  const uint8_t *p = buf;
  if (size < 16 || memcmp(p, DS_MAGIC, 8) != 0)
    return bad_form(NULL, err);
  rbuf sum = {p + size - 8, 8, 0, 0};
  if (r_u64(&sum) != ist_fnv1a(p, size - 8))
    return bad_form(NULL, err);
  rbuf r = {p, size - 8, 8, 0};
  if (r_u64(&r) != DS_VERSION)
    return bad_form(NULL, err);
  imgstat_dataset_options o;
  memset(&o, 0, sizeof o);
  o.as = (imgstat_dataset_as)r_u64(&r);
  o.scale_unit = (int)r_u64(&r);
  o.outlier_z = r_f64(&r);
  o.histograms = (int)r_u64(&r);
  o.have_range = (int)r_u64(&r);
  o.lo = r_f64(&r);
  o.hi = r_f64(&r);
  o.float_bins = (uint32_t)r_u64(&r);
  imgstat_dataset *d = NULL;
  if (r.failed || o.float_bins == 0 || o.float_bins > IMGSTAT_FLOAT_BINS_MAX ||
      imgstat_dataset_create(&o, &d, err) != IMGSTAT_OK)
    return bad_form(d, err);
  d->failed = r_u64(&r);
  for (int l = 0; l < NLAYOUT; l++)
    for (int k = 0; k < NDEPTH; k++) {
      group *g = &d->g[l][k];
      uint64_t used = r_u64(&r);
      const uint8_t *pb = r_bytes(&r, used);
      if (!pb ||
          imgstat_pool_deserialize(&g->pool, pb, used, err) != IMGSTAT_OK)
        return bad_form(d, err);
      if (g->pool.channels != 0 &&
          (g->pool.channels != l || g->pool.sample != depth_sample[k]))
        return bad_form(d, err);
      g->first = r_u64(&r);
      g->images = r_u64(&r);
      g->hist_images = r_u64(&r);
      for (int c = 0; c < IMGSTAT_MAX_CHANNELS; c++) {
        uint64_t bins = r_u64(&r);
        if (bins == 0)
          continue;
        if (c >= l ||
            hist_ready(&g->hist[c], depth_sample[k], &d->o, err) !=
                IMGSTAT_OK ||
            g->hist[c].bins != bins)
          return bad_form(d, err);
        g->hist[c].total = r_u64(&r);
        g->hist[c].nan_count = r_u64(&r);
        g->hist[c].inf_count = r_u64(&r);
        for (uint64_t b = 0; b < bins; b++)
          g->hist[c].counts[b] = r_u64(&r);
      }
    }
  uint64_t n = r_u64(&r);
  if (r.failed || n > size / 64)
    return bad_form(d, err);
  d->s = calloc(n ? n : 1, sizeof *d->s);
  if (!d->s)
    return bad_form(d, err);
  d->cap = n;
  for (uint64_t i = 0; i < n; i++) {
    summary *s = &d->s[i];
    s->ordinal = r_u64(&r);
    uint64_t len = r_u64(&r);
    const uint8_t *name = r_bytes(&r, len);
    if (!name)
      return bad_form(d, err);
    s->name = malloc(len + 1);
    if (!s->name)
      return bad_form(d, err);
    d->n++;
    memcpy(s->name, name, len);
    s->name[len] = '\0';
    uint64_t wh = r_u64(&r), bits = r_u64(&r);
    s->width = (uint32_t)(wh >> 32);
    s->height = (uint32_t)wh;
    s->channels = (int)(bits & 0xff);
    s->depth = (int)(bits >> 8 & 0xff);
    s->pooled = (int)(bits >> 16 & 0xff);
    s->constant = (int)(bits >> 24 & 0xff);
    s->const_value = r_f64(&r);
    for (int c = 0; c < IMGSTAT_MAX_CHANNELS; c++) {
      s->mean[c] = r_f64(&r);
      s->std[c] = r_f64(&r);
    }
    if (s->channels < 1 || s->channels > 4 || s->depth > 2 || s->pooled < 1 ||
        s->pooled > 4)
      return bad_form(d, err);
  }
  if (r.failed || r.at != r.n)
    return bad_form(d, err);
  *out = d;
  return IMGSTAT_OK;
}

/* ---- the result ------------------------------------------------------------
 */

static long double u128_ld(imgstat_u128 v) {
  return ldexpl((long double)v.hi, 64) + (long double)v.lo;
}

static int cmp_ordinal(const void *a, const void *b) {
  uint64_t x = (*(summary *const *)a)->ordinal,
           y = (*(summary *const *)b)->ordinal;
  return x < y ? -1 : x > y;
}

static int cmp_double(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return x < y ? -1 : x > y;
}

/* The name of the image of that ordinal (sorted summaries). */
static const char *name_of(summary *const *s, size_t n, char **names,
                           uint64_t ordinal) {
  size_t lo = 0, hi = n;
  while (lo < hi) {
    size_t mid = lo + (hi - lo) / 2;
    if (s[mid]->ordinal < ordinal)
      lo = mid + 1;
    else
      hi = mid;
  }
  return lo < n && s[lo]->ordinal == ordinal ? names[lo] : "";
}

static int key_before(imgstat_pool_key a, imgstat_pool_key b) {
  if (a.ordinal != b.ordinal)
    return a.ordinal < b.ordinal;
  if (a.y != b.y)
    return a.y < b.y;
  return a.x < b.x;
}

/* Appends reason text to note (joined with "; "). */
#if defined(__GNUC__)
__attribute__((format(printf, 2, 3)))
#endif
static void
note_add(imgstat_dataset_note *note, const char *fmt, ...) {
  size_t len = strlen(note->reason);
  if (len && len + 2 < sizeof note->reason) {
    memcpy(note->reason + len, "; ", 3);
    len += 2;
  }
  va_list ap;
  va_start(ap, fmt);
  imgstat_number_vsnprintf(note->reason + len, sizeof note->reason - len, fmt,
                           ap);
  va_end(ap);
}

static const char *depth_text(int k) {
  return k == 0 ? "8-bit" : k == 1 ? "16-bit" : "32-bit float";
}

/* The pooled figures of channel c over the depths in mask. */
static void channel_figures(const imgstat_dataset *d, int layout, int mask,
                            int c, int ddof, summary *const *s, size_t n,
                            char **names, imgstat_dataset_channel *out) {
  imgstat_pool_figures f[NDEPTH], f0[NDEPTH];
  int used[NDEPTH] = {0};
  int kinds = 0, only = -1;
  for (int k = 0; k < NDEPTH; k++) {
    const imgstat_pool *p = &d->g[layout][k].pool;
    if (!(mask & (1 << k)) || p->channels == 0)
      continue;
    imgstat_pool_figures_compute(p, c, ddof, &f[k], NULL);
    imgstat_pool_figures_compute(p, c, 0, &f0[k], NULL);
    used[k] = 1;
    kinds++;
    only = k;
  }
  if (kinds == 0)
    return;
  int scale = d->o.scale_unit;
  /* extrema: scaled values compared exactly enough (distinct scaled
   * integer values differ by far more than long double's resolution) */
  long double best_min = INFINITY, best_max = -INFINITY;
  imgstat_pool_key kmin = {UINT64_MAX, 0, 0}, kmax = kmin;
  long double sum = 0, sum_sq = 0, mean = 0;
  uint64_t count = 0;
  for (int k = 0; k < NDEPTH; k++) {
    if (!used[k])
      continue;
    long double s_k = scale ? 1.0L / depth_top[k] : 1.0L;
    out->nan_count += f[k].nan_count;
    out->inf_count += f[k].inf_count;
    if (!f[k].has_values)
      continue;
    long double mn = f[k].min * s_k, mx = f[k].max * s_k;
    if (mn < best_min || (mn == best_min && key_before(f[k].min_key, kmin))) {
      best_min = mn;
      kmin = f[k].min_key;
    }
    if (mx > best_max || (mx == best_max && key_before(f[k].max_key, kmax))) {
      best_max = mx;
      kmax = f[k].max_key;
    }
    count += f[k].count;
    if (k < 2) {
      sum += u128_ld(f[k].exact_sum) * s_k;
      sum_sq += u128_ld(f[k].exact_sumsq) * s_k * s_k;
    } else {
      long double m = f0[k].mean, sd = f0[k].std;
      sum += (long double)f[k].count * m * s_k;
      sum_sq += (long double)f[k].count * (sd * sd + m * m) * s_k * s_k;
    }
  }
  out->count = count;
  out->has_values = count > 0;
  if (!out->has_values) {
    out->sum = 0;
    snprintf(out->sum_text, sizeof out->sum_text, "0");
    snprintf(out->sum_sq_text, sizeof out->sum_sq_text, "0");
    out->sums_exact = only < 2 && !scale;
    return;
  }
  out->min = (double)best_min;
  out->max = (double)best_max;
  out->min_at.file = name_of(s, n, names, kmin.ordinal);
  out->min_at.x = kmin.x;
  out->min_at.y = kmin.y;
  out->max_at.file = name_of(s, n, names, kmax.ordinal);
  out->max_at.x = kmax.x;
  out->max_at.y = kmax.y;
  out->has_std = count > (uint64_t)ddof;
  if (kinds == 1 && !scale) {
    /* one exact pool: its figures, rounded once */
    out->mean = f[only].mean;
    out->std = f[only].std;
    out->sum = (double)sum;
    out->sum_sq = (double)sum_sq;
    if (only < 2) {
      out->sums_exact = 1;
      imgstat_u128_format(f[only].exact_sum, out->sum_text);
      imgstat_u128_format(f[only].exact_sumsq, out->sum_sq_text);
    }
    return;
  }
  mean = sum / (long double)count;
  long double m2 = 0;
  for (int k = 0; k < NDEPTH; k++) {
    if (!used[k] || !f[k].has_values)
      continue;
    long double s_k = scale ? 1.0L / depth_top[k] : 1.0L;
    long double nk = (long double)f[k].count;
    long double mk, m2k;
    if (k < 2) {
      long double sk = u128_ld(f[k].exact_sum);
      mk = sk / nk;
      /* N q - s^2 as the pool computes it exactly: from its std */
      long double sd = f0[k].std;
      m2k = sd * sd * nk;
    } else {
      mk = f0[k].mean;
      m2k = (long double)f0[k].std * f0[k].std * nk;
    }
    long double dm = mk * s_k - mean;
    m2 += m2k * s_k * s_k + nk * dm * dm;
  }
  out->mean = (double)mean;
  out->sum = (double)sum;
  out->sum_sq = (double)sum_sq;
  if (out->has_std)
    out->std = (double)sqrtl(m2 / (long double)(count - (uint64_t)ddof));
}

/* The pooled histograms of channel c (see imgstat_dataset_result). */
static void channel_histogram(const imgstat_dataset *d, int layout, int mask,
                              int c, imgstat_dataset_result *res) {
  imgstat_dataset_channel *out = &res->ch[c];
  const group *g8 = &d->g[layout][0], *g16 = &d->g[layout][1],
              *gf = &d->g[layout][2];
  int m8 = (mask & 1) && g8->images, m16 = (mask & 2) && g16->images,
      mf = (mask & 4) && gf->images;
  if (mf && (m8 || m16)) {
    snprintf(res->histogram_note, sizeof res->histogram_note,
             "float and integer images cannot share a pooled histogram");
    return;
  }
  const group *gs[3] = {m8 ? g8 : NULL, m16 ? g16 : NULL, mf ? gf : NULL};
  for (int k = 0; k < 3; k++)
    if (gs[k] &&
        (gs[k]->hist_images != gs[k]->images || !gs[k]->hist[c].counts)) {
      snprintf(res->histogram_note, sizeof res->histogram_note, "%s",
               k == 2 ? "float images need --range LOW,HIGH for a pooled "
                        "histogram"
                      : "some images brought no histogram");
      return;
    }
  imgstat_histogram *h = &out->hist;
  if (mf) {
    if (imgstat_histogram_alloc(h, IMGSTAT_F32, gf->hist[c].bins,
                                gf->hist[c].lo, gf->hist[c].hi,
                                NULL) != IMGSTAT_OK)
      return;
    hist_add(h, &gf->hist[c], 0);
    res->hist_scale = 1.0;
  } else if (m16) {
    if (imgstat_histogram_alloc(h, IMGSTAT_U16, 0, 0, 0, NULL) != IMGSTAT_OK)
      return;
    hist_add(h, &g16->hist[c], 0);
    if (m8) /* v / 255 = 257 v / 65535: exact */
      for (uint32_t v = 0; v < 256; v++)
        h->counts[257 * v] += g8->hist[c].counts[v];
    if (m8)
      h->total += g8->hist[c].total;
    res->hist_scale = d->o.scale_unit ? 1.0 / 65535.0 : 1.0;
  } else if (m8) {
    if (imgstat_histogram_alloc(h, IMGSTAT_U8, 0, 0, 0, NULL) != IMGSTAT_OK)
      return;
    hist_add(h, &g8->hist[c], 0);
    res->hist_scale = d->o.scale_unit ? 1.0 / 255.0 : 1.0;
  } else {
    return;
  }
  imgstat_moments m;
  imgstat_moments_from_histogram(h, &m);
  imgstat_hist_figures_compute(h, mf ? NULL : &m, NULL, 0, &out->hist_figures);
  out->has_histogram = 1;
}

/* Robust z-scores of x[0..n) (median and MAD; the mean absolute deviation
 * when the MAD is 0); returns 0 when every value is the same. */
static int robust_z(const double *x, size_t n, double *z, double *work) {
  memcpy(work, x, n * sizeof *work);
  qsort(work, n, sizeof *work, cmp_double);
  double med = n % 2 ? work[n / 2] : (work[n / 2 - 1] + work[n / 2]) / 2;
  double mean_ad = 0;
  for (size_t i = 0; i < n; i++) {
    work[i] = fabs(x[i] - med);
    mean_ad += work[i];
  }
  mean_ad /= (double)n;
  qsort(work, n, sizeof *work, cmp_double);
  double mad = n % 2 ? work[n / 2] : (work[n / 2 - 1] + work[n / 2]) / 2;
  double unit = mad > 0 ? 1.4826 * mad : 1.2533 * mean_ad;
  if (!(unit > 0))
    return 0;
  for (size_t i = 0; i < n; i++)
    z[i] = (x[i] - med) / unit;
  return 1;
}

/* The most frequent key among n (keys sorted copy in work); returns its
 * count and sets *mode. */
static size_t mode_of(const uint64_t *key, size_t n, uint64_t *work,
                      uint64_t *mode) {
  memcpy(work, key, n * sizeof *work);
  /* Shell sort */
  for (size_t gap = n / 2; gap > 0; gap /= 2)
    for (size_t i = gap; i < n; i++)
      for (size_t j = i; j >= gap && work[j - gap] > work[j]; j -= gap) {
        uint64_t t = work[j];
        work[j] = work[j - gap];
        work[j - gap] = t;
      }
  size_t best = 0;
  for (size_t i = 0; i < n;) {
    size_t j = i;
    while (j < n && work[j] == work[i])
      j++;
    if (j - i > best) {
      best = j - i;
      *mode = work[i];
    }
    i = j;
  }
  return best;
}

static imgstat_status outliers(const imgstat_dataset *d, summary *const *s,
                               size_t n, const int *pooled, int layout,
                               char **names, imgstat_dataset_result *res) {
  imgstat_dataset_note *notes = calloc(n ? n : 1, sizeof *notes);
  double *x = malloc((n ? n : 1) * 3 * sizeof *x);
  uint64_t *keys = malloc((n ? n : 1) * 2 * sizeof *keys);
  size_t *idx = malloc((n ? n : 1) * sizeof *idx);
  if (!notes || !x || !keys || !idx) {
    free(notes);
    free(x);
    free(keys);
    free(idx);
    return IMGSTAT_ERR_NOMEM;
  }
  double thr = d->o.outlier_z;
  /* size, layout and depth against most images */
  for (int what = 0; what < 3 && n >= 3; what++) {
    for (size_t i = 0; i < n; i++)
      keys[i] = what == 0   ? (uint64_t)s[i]->width << 32 | s[i]->height
                : what == 1 ? (uint64_t)s[i]->channels
                            : (uint64_t)s[i]->depth;
    uint64_t mode = 0;
    size_t count = mode_of(keys, n, keys + n, &mode);
    if (2 * count <= n)
      continue;
    for (size_t i = 0; i < n; i++) {
      if (keys[i] == mode)
        continue;
      if (what == 0)
        note_add(&notes[i], "size %ux%u, most are %ux%u", s[i]->width,
                 s[i]->height, (unsigned)(mode >> 32), (unsigned)mode);
      else if (what == 1)
        note_add(&notes[i], "layout %s, most are %s",
                 imgstat_layout_name(s[i]->channels),
                 imgstat_layout_name((int)mode));
      else
        note_add(&notes[i], "depth %s, most are %s", depth_text(s[i]->depth),
                 depth_text((int)mode));
    }
  }
  /* constant images */
  for (size_t i = 0; i < n; i++)
    if (pooled[i] && s[i]->constant)
      note_add(&notes[i], "constant (every sample %.6g)",
               s[i]->const_value *
                   (d->o.scale_unit ? 1.0 : depth_top[s[i]->depth]));
  /* means and stds far from the dataset's */
  size_t m = 0;
  for (size_t i = 0; i < n; i++)
    if (pooled[i])
      idx[m++] = i;
  if (m >= IMGSTAT_DATASET_OUTLIER_MIN_IMAGES)
    for (int c = 0; c < layout; c++)
      for (int which = 0; which < 2; which++) {
        for (size_t j = 0; j < m; j++)
          x[j] = which ? s[idx[j]]->std[c] : s[idx[j]]->mean[c];
        if (!robust_z(x, m, x + m, x + 2 * m))
          continue;
        for (size_t j = 0; j < m; j++)
          if (fabs(x[m + j]) > thr)
            note_add(&notes[idx[j]], "%s of %s: robust z %+.1f",
                     which ? "std" : "mean", imgstat_channel_name(layout, c),
                     x[m + j]);
      }
  /* an image left out is named once, among the left out */
  size_t k = 0;
  for (size_t i = 0; i < n; i++)
    if (notes[i].reason[0] && pooled[i]) {
      notes[k] = notes[i];
      notes[k].file = names[i];
      notes[k].ordinal = s[i]->ordinal;
      k++;
    }
  free(x);
  free(keys);
  free(idx);
  res->outliers = notes;
  res->noutliers = k;
  return IMGSTAT_OK;
}

imgstat_status imgstat_dataset_finish(const imgstat_dataset *d, int ddof,
                                      imgstat_dataset_result *res,
                                      imgstat_error *err) {
  if (!d || !res)
    return imgstat_error_set(err, IMGSTAT_ERR_ARG,
                             "imgstat_dataset_finish: no accumulator");
  memset(res, 0, sizeof *res);
  res->failed = d->failed;
  res->scale_unit = d->o.scale_unit;
  res->as = d->o.as;
  res->ddof = ddof;
  res->outlier_z = d->o.outlier_z;
  res->hist_scale = 1.0;
  size_t n = d->n;
  summary **s = malloc((n ? n : 1) * sizeof *s);
  int *pooled = calloc(n ? n : 1, sizeof *pooled);
  res->names = calloc(n ? n : 1, sizeof *res->names);
  res->excluded = calloc(n ? n : 1, sizeof *res->excluded);
  if (!s || !pooled || !res->names || !res->excluded)
    goto nomem;
  for (size_t i = 0; i < n; i++)
    s[i] = &d->s[i];
  qsort(s, n, sizeof *s, cmp_ordinal);
  for (size_t i = 0; i < n; i++) {
    res->names[i] = strdup(s[i]->name);
    if (!res->names[i])
      goto nomem;
    res->nnames++;
  }
  res->images = n;
  /* the pool: the first image's layout, and its depth unless scale_unit */
  int layout = 0, mask = 0;
  if (n > 0) {
    layout = s[0]->pooled;
    mask = d->o.scale_unit ? 7 : 1 << s[0]->depth;
  }
  for (size_t i = 0; i < n; i++) {
    if (s[i]->pooled == layout && (mask & (1 << s[i]->depth))) {
      pooled[i] = 1;
      res->pooled++;
      res->depths |= 1 << s[i]->depth;
      continue;
    }
    imgstat_dataset_note *e = &res->excluded[res->nexcluded++];
    e->file = res->names[i];
    e->ordinal = s[i]->ordinal;
    note_add(e, "%s %s, the dataset is %s %s",
             imgstat_layout_name(s[i]->pooled), depth_text(s[i]->depth),
             imgstat_layout_name(layout), depth_text(s[0]->depth));
  }
  res->channels = layout;
  for (int c = 0; c < layout; c++) {
    channel_figures(d, layout, mask, c, ddof, s, n, res->names, &res->ch[c]);
    if (d->o.histograms)
      channel_histogram(d, layout, mask, c, res);
  }
  if (outliers(d, s, n, pooled, layout, res->names, res) != IMGSTAT_OK)
    goto nomem;
  free(s);
  free(pooled);
  return IMGSTAT_OK;
nomem:
  free(s);
  free(pooled);
  imgstat_dataset_result_free(res);
  return imgstat_error_set(err, IMGSTAT_ERR_NOMEM, "out of memory");
}

void imgstat_dataset_result_free(imgstat_dataset_result *res) {
  if (!res)
    return;
  for (int c = 0; c < IMGSTAT_MAX_CHANNELS; c++)
    imgstat_histogram_free(&res->ch[c].hist);
  for (size_t i = 0; i < res->nnames; i++)
    free(res->names[i]);
  free(res->names);
  free(res->excluded);
  free(res->outliers);
  memset(res, 0, sizeof *res);
}
