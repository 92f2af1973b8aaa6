/* The fused pass over integer valid samples (valid_acc.h, the logic of
 * cuda/valid.cu's kernel) played on the host: the kernel's tiling of the
 * pixels into warps and lanes, the runs of each thread with their folds
 * when the label changes, blocks' accumulators folded into the global ones,
 * threads and blocks taken in a shuffled order. Each region's partial,
 * nodata count and histogram must be the CPU's, byte for byte: the partial
 * of the region's valid samples compacted in raster order
 * (imgstat_valid_compact, imgstat_cpu_stats, imgstat_valid_raster_pair,
 * itself checked against plain loops in test_valid), the histogram of that
 * plane (imgstat_histogram_compute). 8- and 16-bit samples, 1 and 3
 * channels, odd sizes (one pixel; tiles cut short), with and without a
 * mask, nodata values per channel (one channel without), labels in runs
 * and scattered, 300 labels, labels of nodata alone, places of no pixel. */
#include "imgstat/hist.h"
#include "imgstat/imgstat.h"
#include "test_util.h"
#include "valid_acc.h"
#include "valid_batch.h"

#include <CUnit/Basic.h>
#include <stdlib.h>
#include <string.h>

/* The kernel's shape: lanes of a warp, pixels a lane takes of a tile. */
#define LANES 32
#define STEPS 8

static uint32_t rnd_state;
static uint32_t rnd(void) {
  rnd_state = rnd_state * 1103515245u + 12345u;
  return rnd_state >> 8;
}

typedef struct fused_case {
  const imgstat_image *img;
  int c;
  const uint8_t *mask;   /* NULL: every pixel */
  const uint32_t *place; /* each pixel's label place + 1 (0: none) */
  uint32_t regions;      /* 1 + labels */
  int whole;
  int has;
  uint32_t nodv;
} fused_case;

static uint32_t sample_at(const imgstat_image *img, int c, uint64_t i) {
  if (img->sample == IMGSTAT_U8)
    return ((const uint8_t *)img->planes[c])[i];
  return ((const uint16_t *)img->planes[c])[i];
}

/* Thread `lane` of warp `warp` (of `warps` in the grid): its pixels in the
 * kernel's order, its runs folded into acc (a block's accumulators). */
static void play_thread(const fused_case *k, uint64_t warp, uint64_t warps,
                        uint32_t lane, ist_vacc *acc, uint64_t *bins,
                        uint32_t nbins) {
  const uint64_t n = (uint64_t)k->img->width * k->img->height;
  const uint64_t tile = (uint64_t)LANES * STEPS;
  ist_vthread th;
  ist_vthread_init(&th);
  for (uint64_t base = warp * tile; base < n; base += warps * tile)
    for (int j = 0; j < STEPS; j++) {
      const uint64_t i = base + (uint64_t)j * LANES + lane;
      uint32_t v = 0, t = 0;
      int inside = 0, nd = 0;
      if (i < n) {
        v = sample_at(k->img, k->c, i);
        nd = k->has && v == k->nodv;
        inside = k->whole && (!k->mask || k->mask[i]);
        t = k->place ? k->place[i] : 0;
      }
      const uint32_t left = ist_vthread_leaving(&th, t);
      if (left) {
        ist_vacc one = {0, 0, 0, 0, 0, 0};
        ist_vacc_fold(&one, &th.label);
        ist_vacc_add(&acc[left], &one);
      }
      ist_vthread_take(&th, v, (uint32_t)i, inside, nd, t);
      if (inside && !nd)
        bins[v]++;
      if (t && !nd)
        bins[(uint64_t)t * nbins + v]++;
    }
  if (k->whole)
    ist_vacc_fold(&acc[0], &th.whole);
  if (th.cur)
    ist_vacc_fold(&acc[th.cur], &th.label);
}

/* The whole grid of `blocks` blocks of `warps_per` warps, blocks and their
 * threads in a shuffled order, into acc (regions) and bins (regions x
 * nbins). */
static void play(const fused_case *k, uint32_t blocks, uint32_t warps_per,
                 ist_vacc *acc, uint64_t *bins, uint32_t nbins) {
  const uint32_t threads = warps_per * LANES;
  uint32_t *order =
      malloc(sizeof *order * (blocks > threads ? blocks : threads));
  uint32_t *torder = malloc(sizeof *torder * threads);
  ist_vacc *block = calloc(k->regions, sizeof *block);
  CU_ASSERT_PTR_NOT_NULL_FATAL(order);
  CU_ASSERT_PTR_NOT_NULL_FATAL(torder);
  CU_ASSERT_PTR_NOT_NULL_FATAL(block);
  for (uint32_t b = 0; b < blocks; b++)
    order[b] = b;
  for (uint32_t b = blocks; b > 1; b--) {
    uint32_t r = rnd() % b, tmp = order[b - 1];
    order[b - 1] = order[r];
    order[r] = tmp;
  }
  for (uint32_t bi = 0; bi < blocks; bi++) {
    const uint32_t b = order[bi];
    memset(block, 0, k->regions * sizeof *block);
    for (uint32_t t = 0; t < threads; t++)
      torder[t] = t;
    for (uint32_t t = threads; t > 1; t--) {
      uint32_t r = rnd() % t, tmp = torder[t - 1];
      torder[t - 1] = torder[r];
      torder[r] = tmp;
    }
    for (uint32_t ti = 0; ti < threads; ti++) {
      const uint32_t t = torder[ti];
      play_thread(k, (uint64_t)b * warps_per + t / LANES,
                  (uint64_t)blocks * warps_per, t % LANES, block, bins, nbins);
    }
    for (uint32_t r = 0; r < k->regions; r++)
      ist_vacc_add(&acc[r], &block[r]);
  }
  free(order);
  free(torder);
  free(block);
}

/* The CPU's figures of channel c under v against the fused pass's. */
static void check_region(const imgstat_image *img, int c,
                         const imgstat_valid *v, const ist_vacc *acc,
                         const uint64_t *bins, uint32_t nbins) {
  imgstat_error err = {0};
  imgstat_image part;
  uint64_t nodata = 0;
  CU_ASSERT_EQUAL_FATAL(imgstat_valid_compact(img, c, v, &part, &nodata, &err),
                        IMGSTAT_OK);
  imgstat_partial want[1];
  CU_ASSERT_EQUAL_FATAL(imgstat_cpu_stats(&part, 1, want, &err), IMGSTAT_OK);
  imgstat_valid_raster_pair(img, c, v, &want[0].min_index, &want[0].max_index);
  imgstat_partial got = ist_vacc_partial(acc);
  CU_ASSERT_EQUAL(memcmp(&got, &want[0], sizeof got), 0);
  CU_ASSERT_EQUAL(got.count, want[0].count);
  CU_ASSERT_EQUAL(got.min_index, want[0].min_index);
  CU_ASSERT_EQUAL(got.max_index, want[0].max_index);
  CU_ASSERT_EQUAL(acc->nodata, nodata);
  imgstat_histogram h;
  CU_ASSERT_EQUAL_FATAL(imgstat_histogram_compute(&part, 0, NULL, &h, &err),
                        IMGSTAT_OK);
  CU_ASSERT_EQUAL(h.bins, nbins);
  CU_ASSERT_EQUAL(memcmp(h.counts, bins, nbins * sizeof *bins), 0);
  CU_ASSERT_EQUAL(h.total, acc->count);
  imgstat_histogram_free(&h);
  imgstat_image_free(&part);
}

/* A generated image: w x h, channels of sample, a mask or none, nl labels
 * laid out in runs (scattered: one pixel at a time), nodata values on
 * channel 0 and the last (when more than one); each label's pixel list in
 * raster order (pixels[start[r]], start[r + 1] - start[r] of them, r = 1 to
 * nl). */
typedef struct gen_image {
  imgstat_image img;
  uint8_t *mask;
  uint32_t *place; /* each pixel's label place + 1 (0: none) */
  uint32_t nl;
  imgstat_valid v;
  uint64_t *start;
  uint32_t *pixels;
} gen_image;

static void gen_make(gen_image *g, uint32_t w, uint32_t h, int channels,
                     imgstat_sample sample, int with_mask, uint32_t nl,
                     int scattered, uint32_t seed) {
  rnd_state = seed;
  memset(g, 0, sizeof *g);
  const uint64_t n = (uint64_t)w * h;
  const uint32_t top = sample == IMGSTAT_U8 ? 256u : 65536u;
  imgstat_image *img = &g->img;
  imgstat_error err = {0};
  CU_ASSERT_EQUAL_FATAL(imgstat_image_alloc(img, w, h, channels, sample,
                                            IMGSTAT_MAX_PIXELS_LIMIT, &err),
                        IMGSTAT_OK);
  for (int c = 0; c < channels; c++)
    for (uint64_t i = 0; i < n; i++) {
      /* many repeats of a few values (ties of the extrema), some others */
      uint32_t s = rnd() % 4 ? rnd() % 5 : rnd() % top;
      if (sample == IMGSTAT_U8)
        ((uint8_t *)img->planes[c])[i] = (uint8_t)s;
      else
        ((uint16_t *)img->planes[c])[i] = (uint16_t)s;
    }
  uint8_t *mask = with_mask ? malloc(n) : NULL;
  uint32_t *place = calloc(n, sizeof *place);
  CU_ASSERT_PTR_NOT_NULL_FATAL(place);
  uint32_t cur = 0;
  for (uint64_t i = 0; i < n; i++) {
    if (mask)
      mask[i] = (uint8_t)(rnd() % 3 ? 255 : 0);
    if (nl && (scattered || rnd() % 40 == 0))
      cur = rnd() % (nl + 1);
    /* labels inside the mask only, as the engine's pixel lists are */
    place[i] = mask && !mask[i] ? 0 : cur;
  }
  /* the last label, where it lies, holds nodata alone (channel 0's) */
  const uint32_t nd0 = 3;
  for (uint64_t i = 0; nl > 1 && i < n; i++)
    if (place[i] == nl) {
      if (sample == IMGSTAT_U8)
        ((uint8_t *)img->planes[0])[i] = (uint8_t)nd0;
      else
        ((uint16_t *)img->planes[0])[i] = (uint16_t)nd0;
    }
  imgstat_valid *v = &g->v;
  v->mask = mask;
  v->has_nodata[0] = 1;
  v->nodata[0] = nd0;
  if (channels > 1) {
    v->has_nodata[channels - 1] = 1;
    v->nodata[channels - 1] = top - 1;
  }
  /* each label's pixel list, in raster order */
  uint64_t *start = calloc(nl + 2, sizeof *start);
  uint32_t *pixels = malloc((n ? n : 1) * sizeof *pixels);
  CU_ASSERT_PTR_NOT_NULL_FATAL(start);
  CU_ASSERT_PTR_NOT_NULL_FATAL(pixels);
  for (uint64_t i = 0; i < n; i++)
    start[place[i] + 1]++;
  for (uint32_t r = 1; r <= nl + 1; r++)
    start[r] += start[r - 1];
  uint64_t *fill = calloc(nl + 1, sizeof *fill);
  CU_ASSERT_PTR_NOT_NULL_FATAL(fill);
  for (uint64_t i = 0; i < n; i++)
    if (place[i])
      pixels[start[place[i]] + fill[place[i]]++] = (uint32_t)i;
  free(fill);
  g->mask = mask;
  g->place = place;
  g->nl = nl;
  g->start = start;
  g->pixels = pixels;
}

static void gen_free(gen_image *g) {
  free(g->start);
  free(g->pixels);
  free(g->place);
  free(g->mask);
  imgstat_image_free(&g->img);
}

/* Region r's (0: the image under its mask; 1 to nl: the labels) figures
 * of channel c against the CPU's. */
static void check_gen_region(const gen_image *g, int c, uint32_t r,
                             const ist_vacc *acc, const uint64_t *bins,
                             uint32_t nbins) {
  if (r == 0) {
    check_region(&g->img, c, &g->v, acc, bins, nbins);
    return;
  }
  const uint64_t n = (uint64_t)g->img.width * g->img.height;
  uint8_t *none = calloc(n ? n : 1, 1);
  CU_ASSERT_PTR_NOT_NULL_FATAL(none);
  imgstat_valid lv;
  memset(&lv, 0, sizeof lv);
  lv.has_nodata[c] = g->v.has_nodata[c];
  lv.nodata[c] = g->v.nodata[c];
  lv.pixels = g->pixels + g->start[r];
  lv.npixels = g->start[r + 1] - g->start[r];
  /* a list of no pixel means "no list" to the CPU: the empty region is a
   * mask of zeros there */
  lv.mask = lv.npixels ? NULL : none;
  check_region(&g->img, c, &lv, acc, bins, nbins);
  free(none);
}

/* One image (gen_make's), each channel played on its own and checked. */
static void fused_image(uint32_t w, uint32_t h, int channels,
                        imgstat_sample sample, int with_mask, uint32_t nl,
                        int scattered, uint32_t seed) {
  gen_image g;
  gen_make(&g, w, h, channels, sample, with_mask, nl, scattered, seed);
  const uint64_t n = (uint64_t)w * h;
  const uint32_t top = sample == IMGSTAT_U8 ? 256u : 65536u;
  const uint32_t regions = nl + 1;
  ist_vacc *acc = calloc(regions, sizeof *acc);
  uint64_t *bins = calloc((size_t)regions * top, sizeof *bins);
  CU_ASSERT_PTR_NOT_NULL_FATAL(acc);
  CU_ASSERT_PTR_NOT_NULL_FATAL(bins);
  for (int c = 0; c < channels; c++) {
    fused_case k = {&g.img,
                    c,
                    g.mask,
                    nl ? g.place : NULL,
                    regions,
                    1,
                    g.v.has_nodata[c],
                    (uint32_t)g.v.nodata[c]};
    memset(acc, 0, regions * sizeof *acc);
    memset(bins, 0, (size_t)regions * top * sizeof *bins);
    /* a grid as the device's for this size, or a smaller one whose
     * threads take many tiles */
    const uint64_t per_block = 8ull * LANES * STEPS;
    uint32_t blocks = (uint32_t)((n + per_block - 1) / per_block);
    if (rnd() % 2 || blocks == 0)
      blocks = 1 + rnd() % 3;
    play(&k, blocks, 1 + rnd() % 8, acc, bins, top);
    for (uint32_t r = 0; r <= nl; r++)
      check_gen_region(&g, c, r, &acc[r], bins + (size_t)r * top, top);
  }
  free(acc);
  free(bins);
  gen_free(&g);
}

/* ---- a batch of images (valid_batch.h) -------------------------------- */

/* Thread `lane` of warp `warp` (of `warps` in the row of blocks) of pair
 * p: its image's pixels in the kernel's order, read from the batch's data
 * through valid_batch.h, its runs folded into block (the block's
 * accumulators of the image's regions), its bins into the batch's. */
static void play_batch_thread(const unsigned char *data,
                              const ist_vbatch_image *im,
                              const ist_vbatch_pair *p, uint64_t warp,
                              uint64_t warps, uint32_t lane, ist_vacc *block,
                              uint64_t *bins) {
  const uint64_t tile = (uint64_t)LANES * STEPS;
  const int has = (p->nodata >> 16) & 1u;
  const uint32_t nodv = p->nodata & 0xFFFFu;
  ist_vthread th;
  ist_vthread_init(&th);
  for (uint64_t base = warp * tile; base < im->n; base += warps * tile)
    for (int j = 0; j < STEPS; j++) {
      const uint64_t i = base + (uint64_t)j * LANES + lane;
      uint32_t v = 0, t = 0;
      int inside = 0, nd = 0;
      if (i < im->n) {
        v = ist_vbatch_sample(data, im, p->channel, i);
        nd = has && v == nodv;
        inside = ist_vbatch_inside(data, im, i);
        t = ist_vbatch_label(data, im, i);
      }
      const uint32_t left = ist_vthread_leaving(&th, t);
      if (left) {
        ist_vacc one = {0, 0, 0, 0, 0, 0};
        ist_vacc_fold(&one, &th.label);
        ist_vacc_add(&block[left], &one);
      }
      ist_vthread_take(&th, v, (uint32_t)i, inside, nd, t);
      if (im->bins && inside && !nd)
        bins[ist_vbatch_region_hist(im, p->channel, 0) + v]++;
      if (im->bins && t && !nd)
        bins[ist_vbatch_region_hist(im, p->channel, t) + v]++;
    }
  if (im->whole)
    ist_vacc_fold(&block[0], &th.whole);
  if (th.cur)
    ist_vacc_fold(&block[th.cur], &th.label);
}

/* A batch of images of different sizes, sample types, channels, masks and
 * label counts (1-, 2-byte label places): laid out by valid_batch.h, their
 * bytes packed where the layout puts them (as the uploads do), the kernel's
 * grid played over every (image, channel) pair and block in a shuffled
 * order into the batch's accumulators and bins; every image's figures,
 * read back through the layout, must be its own (the CPU's, and the
 * one-image replay's byte for byte). */
static void test_batch(void) {
  struct {
    uint32_t w, h;
    int channels;
    imgstat_sample sample;
    int mask;
    uint32_t nl;
    int scattered;
    int hist;
  } spec[] = {
      {97, 61, 3, IMGSTAT_U16, 1, 3, 0, 1},
      {1, 1, 1, IMGSTAT_U8, 0, 0, 0, 1},
      {300, 7, 1, IMGSTAT_U8, 1, 300, 0, 1},
      {37, 5, 2, IMGSTAT_U8, 0, 4, 1, 0},
      {64, 40, 1, IMGSTAT_U16, 1, 0, 0, 1},
      {13, 11, 4, IMGSTAT_U8, 1, 2, 1, 1},
  };
  const uint32_t m = sizeof spec / sizeof spec[0];
  gen_image g[sizeof spec / sizeof spec[0]];
  ist_vbatch_image im[sizeof spec / sizeof spec[0]];
  ist_vbatch_totals t;
  memset(&t, 0, sizeof t);
  uint32_t most = 1;
  for (uint32_t k = 0; k < m; k++) {
    gen_make(&g[k], spec[k].w, spec[k].h, spec[k].channels, spec[k].sample,
             spec[k].mask, spec[k].nl, spec[k].scattered, 100 + k);
    const uint32_t regions = spec[k].nl + 1;
    const uint32_t lb = spec[k].nl == 0 ? 0 : regions <= 0xFFu ? 1 : 2;
    ist_vbatch_place(
        &t, &im[k], (uint64_t)spec[k].w * spec[k].h, (uint32_t)spec[k].channels,
        (uint32_t)spec[k].sample, spec[k].mask, lb, regions, 1,
        spec[k].hist ? (spec[k].sample == IMGSTAT_U8 ? 256u : 65536u) : 0u);
    if (regions > most)
      most = regions;
    /* every part on its own 256-byte boundary, after the last */
    CU_ASSERT_EQUAL(im[k].plane % 256, 0);
    CU_ASSERT(im[k].mask == IST_VBATCH_NONE || im[k].mask % 256 == 0);
    CU_ASSERT(im[k].labels == IST_VBATCH_NONE || im[k].labels % 256 == 0);
  }
  CU_ASSERT_EQUAL(t.images, m);
  /* the data, packed as the uploads place it (the gaps left as garbage) */
  unsigned char *data = malloc(t.data_bytes);
  CU_ASSERT_PTR_NOT_NULL_FATAL(data);
  for (uint64_t i = 0; i < t.data_bytes; i++)
    data[i] = (unsigned char)rnd();
  ist_vbatch_pair *pairs = calloc(t.pairs, sizeof *pairs);
  CU_ASSERT_PTR_NOT_NULL_FATAL(pairs);
  for (uint32_t k = 0, p = 0; k < m; k++) {
    const imgstat_image *img = &g[k].img;
    for (uint32_t c = 0; c < im[k].channels; c++, p++) {
      memcpy(data + im[k].plane + (uint64_t)c * im[k].plane_step,
             img->planes[c], im[k].n * (uint64_t)img->sample);
      pairs[p].image = k;
      pairs[p].channel = c;
      pairs[p].nodata = ist_vbatch_nodata_word(g[k].v.has_nodata[c],
                                               (uint32_t)g[k].v.nodata[c]);
    }
    if (im[k].mask != IST_VBATCH_NONE)
      memcpy(data + im[k].mask, g[k].mask, im[k].n);
    for (uint64_t i = 0; im[k].labels != IST_VBATCH_NONE && i < im[k].n; i++) {
      if (im[k].label_bytes == 1)
        data[im[k].labels + i] = (uint8_t)g[k].place[i];
      else
        ((uint16_t *)(void *)(data + im[k].labels))[i] =
            (uint16_t)g[k].place[i];
    }
  }
  /* the grid: rows of blocks over the pairs, in a shuffled order */
  uint64_t *words = calloc(t.acc_words ? t.acc_words : 1, sizeof *words);
  uint64_t *bins = calloc(t.hist_bins ? t.hist_bins : 1, sizeof *bins);
  ist_vacc *block = calloc(most, sizeof *block);
  uint32_t *order = malloc(t.pairs * sizeof *order);
  CU_ASSERT_FATAL(words && bins && block && order);
  for (uint32_t p = 0; p < t.pairs; p++)
    order[p] = p;
  for (uint32_t p = t.pairs; p > 1; p--) {
    uint32_t r = rnd() % p, tmp = order[p - 1];
    order[p - 1] = order[r];
    order[r] = tmp;
  }
  const uint32_t gx = 1 + rnd() % 3, warps_per = 1 + rnd() % 8;
  for (uint32_t pi = 0; pi < t.pairs; pi++) {
    const ist_vbatch_pair *p = &pairs[order[pi]];
    const ist_vbatch_image *x = &im[p->image];
    for (uint32_t b = gx; b-- > 0;) {
      memset(block, 0, most * sizeof *block);
      for (uint32_t th = warps_per * LANES; th-- > 0;)
        play_batch_thread(data, x, p, (uint64_t)b * warps_per + th / LANES,
                          (uint64_t)gx * warps_per, th % LANES, block, bins);
      ist_vacc *acc =
          (ist_vacc *)(void *)(words + ist_vbatch_acc(x, p->channel));
      for (uint32_t r = 0; r < x->regions; r++)
        ist_vacc_add(&acc[r], &block[r]);
    }
  }
  /* each image's figures through the layout: the CPU's, and the one-image
   * replay's */
  for (uint32_t k = 0; k < m; k++) {
    const uint32_t top = spec[k].sample == IMGSTAT_U8 ? 256u : 65536u;
    const uint32_t regions = im[k].regions;
    ist_vacc *one = calloc(regions, sizeof *one);
    uint64_t *obins = calloc((size_t)regions * top, sizeof *obins);
    CU_ASSERT_FATAL(one && obins);
    for (uint32_t c = 0; c < im[k].channels; c++) {
      const ist_vacc *acc =
          (const ist_vacc *)(const void *)(words + ist_vbatch_acc(&im[k], c));
      fused_case fc = {&g[k].img,
                       (int)c,
                       g[k].mask,
                       g[k].nl ? g[k].place : NULL,
                       regions,
                       1,
                       g[k].v.has_nodata[c],
                       (uint32_t)g[k].v.nodata[c]};
      memset(one, 0, regions * sizeof *one);
      memset(obins, 0, (size_t)regions * top * sizeof *obins);
      play(&fc, 1 + rnd() % 3, 1 + rnd() % 8, one, obins, top);
      CU_ASSERT_EQUAL(memcmp(one, acc, regions * sizeof *one), 0);
      for (uint32_t r = 0; r < regions; r++) {
        if (!im[k].bins) { /* no histograms: checked on the replay's bins */
          check_gen_region(&g[k], (int)c, r, &acc[r], obins + (size_t)r * top,
                           top);
          continue;
        }
        const uint64_t *b = bins + ist_vbatch_region_hist(&im[k], c, r);
        CU_ASSERT_EQUAL(memcmp(b, obins + (size_t)r * top, top * sizeof *b), 0);
        check_gen_region(&g[k], (int)c, r, &acc[r], b, top);
      }
    }
    free(one);
    free(obins);
    gen_free(&g[k]);
  }
  free(order);
  free(block);
  free(bins);
  free(words);
  free(pairs);
  free(data);
}

static void test_keys(void) {
  /* the larger key: the smaller value, then the earlier position */
  CU_ASSERT(ist_vkey_min(3, 9) > ist_vkey_min(4, 0));
  CU_ASSERT(ist_vkey_min(3, 2) > ist_vkey_min(3, 9));
  CU_ASSERT(ist_vkey_max(65535, 9) > ist_vkey_max(65534, 0));
  CU_ASSERT(ist_vkey_max(7, 2) > ist_vkey_max(7, 9));
  CU_ASSERT(ist_vkey_min(65535, 0xFFFFFFFEu) != 0);
  CU_ASSERT(ist_vkey_max(0, 0xFFFFFFFEu) != 0);
  /* the empty accumulator is the empty partial */
  ist_vacc a = {0, 5, 0, 0, 0, 0};
  imgstat_partial p = ist_vacc_partial(&a), e;
  imgstat_partial_init(&e);
  CU_ASSERT_EQUAL(memcmp(&p, &e, sizeof p), 0);
}

static void test_fused_u8(void) {
  fused_image(1, 1, 1, IMGSTAT_U8, 0, 0, 0, 1);
  fused_image(37, 1, 3, IMGSTAT_U8, 1, 2, 1, 2);
  fused_image(97, 61, 1, IMGSTAT_U8, 0, 4, 0, 3);
  fused_image(97, 61, 3, IMGSTAT_U8, 1, 4, 1, 4);
  fused_image(300, 7, 1, IMGSTAT_U8, 1, 300, 0, 5);
  fused_image(13, 11, 1, IMGSTAT_U8, 1, 300, 1, 6); /* places of no pixel */
}

static void test_fused_u16(void) {
  fused_image(1, 1, 1, IMGSTAT_U16, 1, 1, 0, 7);
  fused_image(97, 61, 3, IMGSTAT_U16, 0, 3, 0, 8);
  fused_image(257, 33, 1, IMGSTAT_U16, 1, 3, 1, 9);
  fused_image(64, 40, 1, IMGSTAT_U16, 0, 40, 0, 10);
}

static const test_case tests[] = {
    {"fused pass over integer valid samples", NULL},
    {"keys and the empty accumulator", test_keys},
    {"8-bit: masks, nodata, labels, the kernel's orders", test_fused_u8},
    {"16-bit: masks, nodata, labels, the kernel's orders", test_fused_u16},
    {"a batch of images: layout, pairs, each image's own figures", test_batch},
    {NULL, NULL}};

int main(void) { return test_main(tests); }
