/*
 * The dataset accumulator (imgstat/dataset.h): one exact pool per pooled
 * layout and depth, the images' summaries, the pooled histograms; its
 * options, the conversions (gray, layouts), adding and merging. The
 * serialized form is in dataset_codec.c, the figures at the end in
 * dataset_figures.c.
 */
#include "imgstat/dataset.h"
#include "dataset_state.h"
#include "hist_range.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

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

imgstat_dataset_as imgstat_dataset_as_default(int as_given,
                                              imgstat_dataset_as as,
                                              int scale_unit) {
  if (as_given)
    return as;
  return scale_unit ? IMGSTAT_AS_RGB : IMGSTAT_AS_KEEP;
}

static int depth_index(imgstat_sample s) {
  return s == IMGSTAT_U8 ? 0 : s == IMGSTAT_U16 ? 1 : 2;
}

/* Rec. 601 luma of integer samples in 16.16 fixed point, rounded: the
 * weights 19595, 38470 and 7471 / 65536 (0.299, 0.587, 0.114), as Pillow's
 * convert("L") computes it (its L24 macro), exact for 8 and 16 bits. */
static uint32_t luma(uint32_t r, uint32_t g, uint32_t b) {
  return (uint32_t)(((uint64_t)19595 * r + (uint64_t)38470 * g +
                     (uint64_t)7471 * b + 0x8000) >>
                    16);
}

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
  return o->as == IMGSTAT_AS_GRAY && channels >= 3 && channels <= 4;
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
    out->band_names = NULL; /* img's */
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

static const group empty_group = {0, 0, NULL, UINT64_MAX, 0, 0, NULL};

const group *ist_dataset_group(const imgstat_dataset *d, int l, int k) {
  const group *g = l >= 0 && l < d->nlayout ? d->g[l * NDEPTH + k] : NULL;
  return g ? g : &empty_group;
}

static void group_free(group *g) {
  if (!g)
    return;
  for (int c = 0; g->hist && c < g->layout; c++)
    imgstat_histogram_free(&g->hist[c]);
  free(g->hist);
  free(g->pool);
  free(g);
}

group *ist_dataset_group_make(imgstat_dataset *d, int l, int k) {
  if (l < 1 || l > IMGSTAT_MAX_CHANNELS || k < 0 || k >= NDEPTH)
    return NULL;
  if (l >= d->nlayout) {
    group **g = realloc(d->g, sizeof *g * NDEPTH * (size_t)(l + 1));
    if (!g)
      return NULL;
    memset(g + (size_t)d->nlayout * NDEPTH, 0,
           sizeof *g * NDEPTH * (size_t)(l + 1 - d->nlayout));
    d->g = g;
    d->nlayout = l + 1;
  }
  group **slot = &d->g[l * NDEPTH + k];
  if (*slot)
    return *slot;
  group *g = calloc(1, sizeof *g);
  if (!g)
    return NULL;
  g->layout = l;
  g->npools = (l + GROUP_POOL_CHANNELS - 1) / GROUP_POOL_CHANNELS;
  g->first = UINT64_MAX;
  g->pool = malloc(sizeof *g->pool * (size_t)g->npools);
  g->hist = calloc((size_t)l, sizeof *g->hist);
  if (!g->pool || !g->hist) {
    group_free(g);
    return NULL;
  }
  for (int j = 0; j < g->npools; j++)
    imgstat_pool_init(&g->pool[j]);
  *slot = g;
  return g;
}

void ist_group_figures(const group *g, int c, int ddof,
                       imgstat_pool_figures *out) {
  imgstat_pool_figures_compute(&g->pool[c / GROUP_POOL_CHANNELS],
                               c % GROUP_POOL_CHANNELS, ddof, out, NULL);
}

/* Adds one image's pooled partials to g's pools: all of them or, on
 * failure, none. */
static imgstat_status group_pool_add(group *g, uint64_t ordinal,
                                     const imgstat_partial *parts,
                                     imgstat_sample sample, uint32_t width,
                                     imgstat_error *err) {
  if (g->npools == 1)
    return imgstat_pool_add(&g->pool[0], ordinal, parts, g->layout, sample,
                            width, err);
  imgstat_pool *keep = malloc(sizeof *keep * (size_t)g->npools);
  if (!keep)
    return imgstat_error_set(err, IMGSTAT_ERR_NOMEM, "out of memory");
  memcpy(keep, g->pool, sizeof *keep * (size_t)g->npools);
  imgstat_status st = IMGSTAT_OK;
  for (int j = 0; j < g->npools && st == IMGSTAT_OK; j++) {
    int first = j * GROUP_POOL_CHANNELS, n = g->layout - first;
    st = imgstat_pool_add(&g->pool[j], ordinal, parts + first,
                          n < GROUP_POOL_CHANNELS ? n : GROUP_POOL_CHANNELS,
                          sample, width, err);
  }
  if (st != IMGSTAT_OK)
    memcpy(g->pool, keep, sizeof *keep * (size_t)g->npools);
  free(keep);
  return st;
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
                             "bad dataset options (as, or the range lo..hi)");
  }
  *out = d;
  return IMGSTAT_OK;
}

void imgstat_dataset_destroy(imgstat_dataset *d) {
  if (!d)
    return;
  for (int i = 0; i < d->nlayout * NDEPTH; i++)
    group_free(d->g[i]);
  free(d->g);
  free(d->nexact);
  free(d->exact_rank);
  free(d->exact_value);
  ist_summaries_free(&d->s);
  ist_dataset_labels_free(d);
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
  double top = ist_dataset_depth_top[depth_index(s)];
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
                        int pooled, int *map) {
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

imgstat_status ist_dataset_hist_ready(imgstat_histogram *h, imgstat_sample s,
                                      const imgstat_dataset_options *o,
                                      imgstat_error *err) {
  if (h->counts)
    return IMGSTAT_OK;
  return imgstat_histogram_alloc(h, s, o->float_bins, o->lo, o->hi, err);
}

void ist_dataset_hist_add(imgstat_histogram *a, const imgstat_histogram *b,
                          uint64_t n) {
  if (b) { /* b's occupied bins alone (the image's ~2,600 of a CT slice) */
    ist_histogram_add_counts(a, b);
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
  if (a->used_end) { /* a's hint covers the bin */
    a->used_lo = bin < a->used_lo ? bin : a->used_lo;
    a->used_end = bin + 1 > a->used_end ? bin + 1 : a->used_end;
  }
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

static imgstat_status add_pooled(imgstat_dataset *d, group *g, uint64_t ordinal,
                                 const imgstat_dataset_image *im, int pooled,
                                 int k, int int16, uint64_t n, int *map,
                                 imgstat_partial *parts, float *ms,
                                 imgstat_error *err);

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
  if (o->as != IMGSTAT_AS_KEEP && im->channels > 4) {
    imgstat_error_set(err, IMGSTAT_ERR_UNSUPPORTED,
                      "a %s image is not pooled converted to %s: bands "
                      "convert to no Y, RGB or RGBA layout; they pool as "
                      "they are (as=keep)",
                      imgstat_layout_name(im->channels), as_names[o->as]);
    return imgstat_error_cause(err, IMGSTAT_CAUSE_SETTING, 0, 0, "as=keep");
  }
  int int16 = im->int16 && im->sample == IMGSTAT_U16;
  if (int16 && (o->as != IMGSTAT_AS_KEEP || o->scale_unit)) {
    const char *keep = o->scale_unit ? "scale=native" : "as=keep";
    imgstat_error_set(err, IMGSTAT_ERR_UNSUPPORTED,
                      "an int16 image is not pooled %s: its signed values "
                      "convert to no other layout and have no 0..1 unit; "
                      "they pool as they are (%s)",
                      o->scale_unit ? "in 0..1 units" : "converted", keep);
    return imgstat_error_cause(err, IMGSTAT_CAUSE_SETTING, 0, 0, keep);
  }
  int pooled = imgstat_dataset_pooled_channels(o, im->channels);
  int k = int16 ? IST_DEPTH_INT16 : depth_index(im->sample);
  group *g = ist_dataset_group_make(d, pooled, k);
  if (!g)
    return imgstat_error_set(err, IMGSTAT_ERR_NOMEM, "out of memory");
  uint64_t n = (uint64_t)im->width * im->height;
  /* the pooled channels' sources, partials, means and stds: on the stack
   * for a few channels, else on the heap */
  int map_small[IMGSTAT_INLINE_CHANNELS], *map = map_small;
  imgstat_partial parts_small[IMGSTAT_INLINE_CHANNELS], *parts = parts_small;
  float ms_small[2 * IMGSTAT_INLINE_CHANNELS], *ms = ms_small;
  if (pooled > IMGSTAT_INLINE_CHANNELS) {
    map = malloc(sizeof *map * (size_t)pooled);
    parts = malloc(sizeof *parts * (size_t)pooled);
    ms = malloc(sizeof *ms * 2 * (size_t)pooled);
  }
  imgstat_status st =
      add_pooled(d, g, ordinal, im, pooled, k, int16, n, map, parts, ms, err);
  if (map != map_small) {
    free(map);
    free(parts);
    free(ms);
  }
  if (st != IMGSTAT_OK)
    return st;
  /* its labels, each in its own pool (a failure there: out of memory) */
  return im->nlabels ? ist_dataset_labels_add(d, ordinal, im, err) : IMGSTAT_OK;
}

/* imgstat_dataset_add's work on image im of layout `pooled` and depth
 * index k in group g, with map, parts and ms (2 * pooled) to fill. */
static imgstat_status add_pooled(imgstat_dataset *d, group *g, uint64_t ordinal,
                                 const imgstat_dataset_image *im, int pooled,
                                 int k, int int16, uint64_t n, int *map,
                                 imgstat_partial *parts, float *ms,
                                 imgstat_error *err) {
  const imgstat_dataset_options *o = &d->o;
  if (!map || !parts || !ms)
    return imgstat_error_set(err, IMGSTAT_ERR_NOMEM, "out of memory");
  channel_map(o, im->channels, pooled, map);
  for (int c = 0; c < pooled; c++)
    parts[c] = map[c] < 0 ? opaque_partial(n, im->sample) : im->partial[map[c]];

  /* Histograms: only when every one fits the pooled ones. */
  int with_hist = o->histograms && im->hist;
  for (int c = 0; c < pooled && with_hist; c++)
    if (map[c] >= 0 && !hist_fits(&im->hist[map[c]], im->sample, o))
      with_hist = 0;
  for (int c = 0; c < pooled && with_hist; c++) {
    imgstat_status st = ist_dataset_hist_ready(&g->hist[c], im->sample, o, err);
    if (st != IMGSTAT_OK)
      return st;
  }
  summary sum;
  summary *s = &sum;
  memset(s, 0, sizeof *s);
  s->ordinal = ordinal;
  s->width = im->width;
  s->height = im->height;
  s->channels = im->channels;
  s->depth = k;
  s->pooled = pooled;
  s->mean = ms;
  s->std = ms + pooled;
  int colour = pooled == 2 || pooled == 4 ? pooled - 1 : pooled;
  s->constant = 1;
  for (int c = 0; c < pooled; c++) {
    imgstat_figures f;
    imgstat_figures_compute(&parts[c], im->sample, im->width, 0, &f);
    if (int16) { /* the outlier rule and notes on the values */
      f.mean -= IMGSTAT_INT16_OFFSET;
      f.min -= IMGSTAT_INT16_OFFSET;
      f.max -= IMGSTAT_INT16_OFFSET;
    }
    s->mean[c] = (float)(f.mean / ist_dataset_depth_top[k]);
    s->std[c] = (float)(f.std / ist_dataset_depth_top[k]);
    if (c < colour &&
        (!f.has_values || f.min != f.max ||
         (c > 0 && f.min / ist_dataset_depth_top[k] != s->const_value)))
      s->constant = 0;
    if (c == 0)
      s->const_value = f.min / ist_dataset_depth_top[k];
  }
  /* the pool's sums only once the summary is kept */
  size_t used = d->s.used, count = d->s.n;
  uint64_t last = d->s.last_ordinal;
  if (ist_summaries_add(&d->s, s, im->name ? im->name : "") != IMGSTAT_OK)
    return imgstat_error_set(err, IMGSTAT_ERR_NOMEM, "out of memory");
  imgstat_status st =
      group_pool_add(g, ordinal, parts, im->sample, im->width, err);
  if (st != IMGSTAT_OK) {
    /* forget it (the last name is left: it only codes the next one) */
    d->s.used = used;
    d->s.n = count;
    d->s.last_ordinal = last;
    d->s.last_len = 0;
    return st;
  }
  if (ordinal < g->first)
    g->first = ordinal;
  g->images++;
  if (with_hist) {
    g->hist_images++;
    for (int c = 0; c < pooled; c++)
      ist_dataset_hist_add(&g->hist[c], map[c] < 0 ? NULL : &im->hist[map[c]],
                           n);
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
  /* Everything that can fail first: a's groups of b's layouts made, the
   * merged pools on copies, a's histograms allocated. */
  size_t npools = 0;
  for (int i = 0; i < b->nlayout * NDEPTH; i++)
    if (b->g[i] && !ist_dataset_group_make(a, i / NDEPTH, i % NDEPTH))
      return imgstat_error_set(err, IMGSTAT_ERR_NOMEM, "out of memory");
  for (int i = 0; i < b->nlayout * NDEPTH; i++)
    npools += b->g[i] ? (size_t)b->g[i]->npools : 0;
  imgstat_pool *pools = malloc(sizeof(imgstat_pool) * (npools ? npools : 1));
  if (!pools)
    return imgstat_error_set(err, IMGSTAT_ERR_NOMEM, "out of memory");
  imgstat_status st = IMGSTAT_OK;
  size_t at = 0;
  for (int i = 0; i < b->nlayout * NDEPTH && st == IMGSTAT_OK; i++) {
    const group *y = b->g[i];
    group *x = a->g[i];
    if (!y)
      continue;
    for (int j = 0; j < y->npools && st == IMGSTAT_OK; j++) {
      pools[at + j] = x->pool[j];
      st = imgstat_pool_merge(&pools[at + j], &y->pool[j], err);
    }
    at += (size_t)y->npools;
    for (int c = 0; c < y->layout && st == IMGSTAT_OK; c++)
      if (y->hist[c].counts)
        st = ist_dataset_hist_ready(
            &x->hist[c], ist_dataset_depth_sample[i % NDEPTH], &a->o, err);
  }
  /* b's summaries after a's (taken back when out of memory) */
  size_t used = a->s.used, count = a->s.n;
  uint64_t last = a->s.last_ordinal;
  if (st == IMGSTAT_OK) {
    summary_reader r;
    summary s;
    int got;
    ist_summary_reader_start(&r, &b->s);
    while (st == IMGSTAT_OK && (got = ist_summary_next(&r, &s)) != 0)
      if (got < 0 || ist_summaries_add(&a->s, &s, s.name) != IMGSTAT_OK)
        st = imgstat_error_set(err, IMGSTAT_ERR_NOMEM, "out of memory");
    ist_summary_reader_end(&r);
    if (st != IMGSTAT_OK) {
      a->s.used = used;
      a->s.n = count;
      a->s.last_ordinal = last;
      a->s.last_len = 0;
    }
  }
  if (st != IMGSTAT_OK) {
    free(pools);
    return st;
  }
  a->failed += b->failed;
  at = 0;
  for (int i = 0; i < b->nlayout * NDEPTH; i++) {
    group *x = a->g[i];
    const group *y = b->g[i];
    if (!y)
      continue;
    memcpy(x->pool, pools + at, sizeof *pools * (size_t)y->npools);
    at += (size_t)y->npools;
    x->first = y->first < x->first ? y->first : x->first;
    x->images += y->images;
    x->hist_images += y->hist_images;
    for (int c = 0; c < y->layout; c++)
      if (y->hist[c].counts)
        ist_dataset_hist_add(&x->hist[c], &y->hist[c], 0);
  }
  free(pools);
  return ist_dataset_labels_merge(a, b, err);
}
