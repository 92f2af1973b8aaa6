/*
 * --histogram-png (hist_plot.h): a title, then one panel per channel,
 * stacked, each with its own axes (float channels have their own [min,
 * max]); x from the channel's lowest to highest bin value with five
 * labelled ticks, bars filled in the channel's colour, counts linear or
 * logarithmic (log(1 + count)) against the panel's largest count, with
 * count ticks where those counts really are; markers for the mean, the
 * median and the percentiles. Labels use a 3x5 pixel font drawn here,
 * capitals and small letters (a file name keeps its case).
 */
#include "hist_plot.h"

#include "cli_util.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

int ist_hist_plot_name_ok(const char *name) {
  size_t n = strlen(name);
  const char *slash = strrchr(name, '/');
  const char *base = slash ? slash + 1 : name;
  return n >= 4 && strlen(base) > 4 && strcasecmp(name + n - 4, ".png") == 0;
}

int ist_hist_plot_path(const imgstat_record_hist *cfg, const char *input,
                       char *buf, size_t size) {
  const char *path = cfg->png_path;
  int n;
  if (input) {
    const char *slash = strrchr(input, '/');
    const char *base = slash ? slash + 1 : input;
    const char *dot = strrchr(base, '.');
    size_t len = dot && dot > base ? (size_t)(dot - base) : strlen(base);
    char stem[256];
    if (len >= sizeof stem)
      len = sizeof stem - 1;
    for (size_t i = 0; i < len; i++) {
      char c = base[i];
      int ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
               (c >= '0' && c <= '9') || c == '.' || c == '-' || c == '_';
      stem[i] = ok ? c : '_';
    }
    stem[len] = '\0';
    if (len == 0)
      strcpy(stem, "_");
    n = snprintf(buf, size, "%.*s-%s.png", (int)(strlen(path) - 4), path, stem);
  } else {
    n = snprintf(buf, size, "%s", path);
  }
  return n >= 0 && (size_t)n < size;
}

/* ---- the range of a float plot ---------------------------------------------
 */

/* The bin of h that holds the sample of rank k (1-based), counting skip
 * samples as lying before the first bin (they are clamped into it). */
static uint32_t bin_of_rank(const imgstat_histogram *h, uint64_t k,
                            uint64_t skip) {
  uint64_t cum = 0;
  for (uint32_t b = 0; b < h->bins; b++) {
    uint64_t n = h->counts[b];
    if (b == 0)
      n = n > skip ? n - skip : 0;
    if (cum + n >= k)
      return b;
    cum += n;
  }
  return h->bins ? h->bins - 1 : 0;
}

static double bin_edge(const imgstat_histogram *h, uint32_t b) {
  return h->lo + (h->hi - h->lo) * (double)b / (double)h->bins;
}

/* The finite samples of channel c of img below lo and above hi. */
static void count_beyond(const imgstat_image *img, int c, double lo, double hi,
                         uint64_t *below, uint64_t *above) {
  size_t stride = imgstat_image_stride(img);
  *below = *above = 0;
  for (uint32_t y = 0; y < img->height; y++) {
    const float *row =
        (const float *)((const char *)img->planes[c] + (size_t)y * stride);
    for (uint32_t x = 0; x < img->width; x++) {
      if (!isfinite(row[x]))
        continue;
      *below += row[x] < lo;
      *above += row[x] > hi;
    }
  }
}

void ist_hist_plot_hists_free(ist_plot_hists *h) {
  for (int c = 0; c < IMGSTAT_MAX_CHANNELS; c++)
    imgstat_histogram_free(&h->hist[c]);
  memset(h, 0, sizeof *h);
}

imgstat_status ist_hist_plot_float(const imgstat_image *img,
                                   const imgstat_histogram *full,
                                   const double *range, uint32_t bins,
                                   ist_plot_hists *out, imgstat_error *err) {
  memset(out, 0, sizeof *out);
  out->channels = img->channels;
  for (int c = 0; c < img->channels; c++) {
    const imgstat_histogram *h1 = &full[c];
    double lo = h1->lo, hi = h1->hi;
    if (range) {
      lo = range[0];
      hi = range[1];
    } else if (h1->total > 0 && h1->hi > h1->lo) {
      uint64_t klo = imgstat_percentile_rank(h1->total, IST_PLOT_ROBUST_LOW);
      uint64_t khi = imgstat_percentile_rank(h1->total, IST_PLOT_ROBUST_HIGH);
      uint32_t blo = bin_of_rank(h1, klo, 0), bhi = bin_of_rank(h1, khi, 0);
      /* one finer histogram over those bins: the samples before them are
       * clamped into its first bin, those after into its last */
      imgstat_hist_options o = {h1->bins, 1, bin_edge(h1, blo),
                                bin_edge(h1, bhi + 1)};
      uint64_t before = 0;
      for (uint32_t b = 0; b < blo; b++)
        before += h1->counts[b];
      imgstat_histogram h2;
      imgstat_status st = imgstat_histogram_compute(img, c, &o, &h2, err);
      if (st != IMGSTAT_OK) {
        ist_hist_plot_hists_free(out);
        return st;
      }
      double l2 = bin_edge(&h2, bin_of_rank(&h2, klo - before, before));
      double h2hi = bin_edge(&h2, bin_of_rank(&h2, khi - before, before) + 1);
      imgstat_histogram_free(&h2);
      if (h2hi > l2) {
        lo = l2;
        hi = h2hi;
      }
    }
    imgstat_hist_options d = {bins ? bins : 256, 1, lo, hi};
    imgstat_status st =
        imgstat_histogram_compute(img, c, &d, &out->hist[c], err);
    if (st != IMGSTAT_OK) {
      ist_hist_plot_hists_free(out);
      return st;
    }
    /* the samples beyond are counted apart, not clamped into the edges */
    count_beyond(img, c, lo, hi, &out->below[c], &out->above[c]);
    imgstat_histogram *h = &out->hist[c];
    if (h->bins && h->counts[0] >= out->below[c] &&
        h->counts[h->bins - 1] >= out->above[c]) {
      h->counts[0] -= out->below[c];
      h->counts[h->bins - 1] -= out->above[c];
      h->total -= out->below[c] + out->above[c];
    }
  }
  out->have = 1;
  return IMGSTAT_OK;
}

#define PLOT_W 768
#define PLOT_H 160
#define MARGIN_L 64
#define TITLE_H 20
#define MARGIN_R 24
#define MARGIN_T 22
#define PANEL_GAP 44
#define FONT_SCALE 2

/* 3x5 glyphs, one row of 3 bits per entry, top row first. */
static const struct glyph {
  char ch;
  unsigned char rows[5];
} font[] = {
    {'0', {7, 5, 5, 5, 7}}, {'1', {2, 6, 2, 2, 7}}, {'2', {7, 1, 7, 4, 7}},
    {'3', {7, 1, 7, 1, 7}}, {'4', {5, 5, 7, 1, 1}}, {'5', {7, 4, 7, 1, 7}},
    {'6', {7, 4, 7, 5, 7}}, {'7', {7, 1, 1, 1, 1}}, {'8', {7, 5, 7, 5, 7}},
    {'9', {7, 5, 7, 1, 7}}, {'.', {0, 0, 0, 0, 2}}, {'-', {0, 0, 7, 0, 0}},
    {'+', {0, 2, 7, 2, 0}}, {'e', {0, 7, 7, 4, 7}}, {'A', {2, 5, 7, 5, 5}},
    {'B', {6, 5, 6, 5, 6}}, {'G', {7, 4, 5, 5, 7}}, {'R', {6, 5, 6, 5, 5}},
    {'Y', {5, 5, 2, 2, 2}}, {'L', {4, 4, 4, 4, 7}}, {'O', {7, 5, 5, 5, 7}},
    {'I', {7, 2, 2, 2, 7}}, {'N', {6, 5, 5, 5, 5}}, {'n', {0, 6, 5, 5, 5}},
    {'a', {0, 6, 1, 7, 7}}, {'i', {2, 0, 2, 2, 2}}, {'C', {7, 4, 4, 4, 7}},
    {'D', {6, 5, 5, 5, 6}}, {'E', {7, 4, 6, 4, 7}}, {'F', {7, 4, 6, 4, 4}},
    {'H', {5, 5, 7, 5, 5}}, {'J', {1, 1, 1, 5, 7}}, {'K', {5, 5, 6, 5, 5}},
    {'M', {5, 7, 7, 5, 5}}, {'P', {7, 5, 7, 4, 4}}, {'Q', {7, 5, 5, 7, 1}},
    {'S', {7, 4, 7, 1, 7}}, {'T', {7, 2, 2, 2, 2}}, {'U', {5, 5, 5, 5, 7}},
    {'V', {5, 5, 5, 5, 2}}, {'W', {5, 5, 7, 7, 5}}, {'X', {5, 5, 2, 5, 5}},
    {'Z', {7, 1, 2, 4, 7}}, {'_', {0, 0, 0, 0, 7}}, {'/', {1, 1, 2, 4, 4}},
    {':', {0, 2, 0, 2, 0}}, {'=', {0, 7, 0, 7, 0}}, {'(', {1, 2, 2, 2, 1}},
    {')', {4, 2, 2, 2, 4}}, {',', {0, 0, 0, 2, 4}}, {'%', {5, 1, 2, 4, 5}},
    {'<', {1, 2, 4, 2, 1}}, {'>', {4, 2, 1, 2, 4}}, {'b', {4, 4, 6, 5, 6}},
    {'c', {0, 0, 3, 4, 3}}, {'d', {1, 1, 3, 5, 3}}, {'f', {1, 2, 7, 2, 2}},
    {'g', {0, 3, 5, 3, 6}}, {'h', {4, 4, 6, 5, 5}}, {'j', {1, 0, 1, 1, 6}},
    {'k', {4, 5, 6, 6, 5}}, {'l', {6, 2, 2, 2, 7}}, {'m', {0, 0, 7, 7, 5}},
    {'o', {0, 2, 5, 5, 2}}, {'p', {0, 6, 5, 6, 4}}, {'q', {0, 3, 5, 3, 1}},
    {'r', {0, 5, 6, 4, 4}}, {'s', {0, 3, 4, 1, 6}}, {'t', {2, 7, 2, 2, 1}},
    {'u', {0, 5, 5, 5, 3}}, {'v', {0, 5, 5, 5, 2}}, {'w', {0, 5, 5, 7, 7}},
    {'x', {0, 5, 2, 2, 5}}, {'y', {0, 5, 5, 3, 6}}, {'z', {0, 7, 1, 2, 7}},
};

typedef struct canvas {
  uint32_t w, h;
  uint8_t *rgb[3];
} canvas;

static void put(canvas *cv, int x, int y, const uint8_t col[3], double alpha) {
  if (x < 0 || y < 0 || (uint32_t)x >= cv->w || (uint32_t)y >= cv->h)
    return;
  size_t i = (size_t)y * cv->w + (size_t)x;
  for (int k = 0; k < 3; k++)
    cv->rgb[k][i] =
        (uint8_t)lrint(cv->rgb[k][i] * (1 - alpha) + col[k] * alpha);
}

static void text(canvas *cv, int x, int y, const char *s,
                 const uint8_t col[3]) {
  for (; *s; s++, x += 4 * FONT_SCALE) {
    const struct glyph *g = NULL;
    for (size_t k = 0; k < sizeof font / sizeof *font; k++)
      if (font[k].ch == *s)
        g = &font[k];

    if (!g)
      continue; /* spaces and unknown characters: a blank cell */
    for (int r = 0; r < 5; r++)
      for (int b = 0; b < 3; b++)
        if (g->rows[r] & (4 >> b))
          for (int dy = 0; dy < FONT_SCALE; dy++)
            for (int dx = 0; dx < FONT_SCALE; dx++)
              put(cv, x + b * FONT_SCALE + dx, y + r * FONT_SCALE + dy, col,
                  1.0);
  }
}

static int text_width(const char *s) {
  return (int)strlen(s) * 4 * FONT_SCALE - FONT_SCALE;
}

static void channel_colour(imgstat_colour colour, int channels, int c,
                           uint8_t col[3]) {
  const char *name = imgstat_colour_channel_name(colour, channels, c);
  static const uint8_t r[3] = {214, 39, 40}, g[3] = {44, 160, 44},
                       b[3] = {31, 119, 180}, y[3] = {80, 80, 80},
                       a[3] = {148, 103, 189};
  const uint8_t *src = name[0] == 'R'   ? r
                       : name[0] == 'G' ? g
                       : name[0] == 'B' ? b
                       : name[0] == 'A' ? a
                                        : y;
  memcpy(col, src, 3);
}

/* The x of value v (in histogram units) in a panel over [lo, hi]. */
static int value_x(const imgstat_histogram *h, double v) {
  double span = h->hi - h->lo;
  double f = span > 0 ? (v - h->lo) / span : 0;
  f = f < 0 ? 0 : f > 1 ? 1 : f;
  return MARGIN_L + (int)lrint(f * (PLOT_W - 1));
}

/* A vertical marker: every dash'th pixel of it drawn (1 solid), its name
 * above the panel. */
static void marker(canvas *cv, int x, int top, int bottom, int dash,
                   const uint8_t col[3], const char *name, int row) {
  for (int y = top; y < bottom; y++)
    if (dash == 1 || (y - top) % (2 * dash) < dash)
      put(cv, x, y, col, 1.0);
  text(cv, x + 2, top + 2 + row * 12, name, col);
}

static void count_label(char *buf, size_t size, double c) {
  if (c < 1e5)
    imgstat_number_snprintf(buf, size, "%.0f", c);
  else
    imgstat_number_snprintf(buf, size, "%.0e", c);
}

imgstat_status ist_hist_plot_write(const imgstat_record_hist *cfg,
                                   const ist_plot_info *info,
                                   const imgstat_histogram *hist,
                                   const char *path, imgstat_error *err) {
  int panels = info->channels;
  canvas cv;
  cv.w = MARGIN_L + PLOT_W + MARGIN_R;
  cv.h = TITLE_H + MARGIN_T + (uint32_t)panels * (PLOT_H + PANEL_GAP) + 4;
  imgstat_image img;
  imgstat_status st =
      imgstat_image_alloc(&img, cv.w, cv.h, 3, IMGSTAT_U8, 0, err);
  if (st != IMGSTAT_OK)
    return st;
  for (int k = 0; k < 3; k++) {
    cv.rgb[k] = img.planes[k];
    memset(cv.rgb[k], 255, (size_t)cv.w * cv.h);
  }
  const uint8_t black[3] = {0, 0, 0}, grid[3] = {225, 225, 225},
                grey[3] = {110, 110, 110};
  uint64_t *counts = malloc(sizeof *counts * PLOT_W);
  if (!counts) {
    imgstat_image_free(&img);
    return imgstat_error_set(err, IMGSTAT_ERR_NOMEM, "out of memory");
  }
  /* the title: the name (its end when too long), the kind, the scale */
  char title[160];
  const char *name = info->title ? info->title : "";
  size_t room = (cv.w - 16) / (4 * FONT_SCALE) - strlen(info->kind) - 24;
  if (strlen(name) > room && room > 3)
    snprintf(title, sizeof title, "...%s  %s  %s counts",
             name + strlen(name) - (room - 3), info->kind,
             cfg->png_log ? "log" : "linear");
  else
    snprintf(title, sizeof title, "%s  %s  %s counts", name, info->kind,
             cfg->png_log ? "log" : "linear");
  text(&cv, 8, 6, title, black);
  for (int c = 0; c < panels; c++) {
    const imgstat_histogram *h = &hist[c];
    int top = TITLE_H + MARGIN_T + c * (PLOT_H + PANEL_GAP);
    int bottom = top + PLOT_H; /* the x axis row */
    uint8_t col[3];
    channel_colour(info->colour, panels, c, col);
    /* display bins, then one column of pixels each (or several) */
    uint32_t bins = cfg->bins < h->bins ? cfg->bins : h->bins;
    if (bins > PLOT_W)
      bins = PLOT_W;
    if (bins == 0)
      bins = 1;
    imgstat_histogram_rebin(h, bins, counts);
    uint64_t peak = 0;
    for (uint32_t j = 0; j < bins; j++)
      peak = counts[j] > peak ? counts[j] : peak;
    double denom = cfg->png_log ? log1p((double)peak) : (double)peak;
    /* grid and ticks at 0, 1/4, 1/2, 3/4, 1 of the range, in the values
     * shown */
    for (int q = 0; q <= 4; q++) {
      int x = MARGIN_L + q * (PLOT_W - 1) / 4;
      for (int y = top; y < bottom; y++)
        put(&cv, x, y, grid, 1.0);
      for (int y = bottom; y < bottom + 4; y++)
        put(&cv, x, y, black, 1.0);
      double v = (h->lo + (h->hi - h->lo) * q / 4.0) * info->scale;
      char label[32];
      if (info->sample == IMGSTAT_F32 || info->scale != 1.0)
        imgstat_number_snprintf(label, sizeof label, "%.3g", v);
      else
        imgstat_number_snprintf(label, sizeof label, "%.0f", floor(v + 0.5));
      int tw = text_width(label);
      int lx = q == 0 ? x : (q == 4 ? x - tw : x - tw / 2);
      text(&cv, lx, bottom + 7, label, black);
    }
    /* y ticks: counts at their true heights (powers of ten on the log
     * scale; 0, half and the peak on the linear one) */
    double ticks[12];
    int nticks = 0;
    if (cfg->png_log) {
      for (double t = 1; t <= (double)peak && nticks < 12; t *= 10)
        ticks[nticks++] = t;
    } else if (peak > 0) {
      ticks[nticks++] = (double)peak / 2;
      ticks[nticks++] = (double)peak;
    }
    text(&cv, MARGIN_L - 4 - text_width("0"), bottom - 10, "0", black);
    for (int t = 0; t < nticks && denom > 0; t++) {
      double f = (cfg->png_log ? log1p(ticks[t]) : ticks[t]) / denom;
      int y = bottom - 1 - (int)lrint(f * (PLOT_H - 2));
      for (int x = MARGIN_L - 5; x < MARGIN_L - 1; x++)
        put(&cv, x, y, black, 1.0);
      for (int x = MARGIN_L; x < MARGIN_L + PLOT_W; x += 3)
        put(&cv, x, y, grid, 1.0);
      char label[32];
      count_label(label, sizeof label, ticks[t]);
      if (y - 4 > top - 2 && y + 6 < bottom - 10)
        text(&cv, MARGIN_L - 8 - text_width(label), y - 4, label, black);
    }
    for (int y = top; y < bottom; y += 1)
      put(&cv, MARGIN_L - 1, y, black, 1.0);
    for (int x = MARGIN_L - 1; x < MARGIN_L + PLOT_W; x++)
      put(&cv, x, bottom, black, 1.0);
    /* bars */
    for (int px = 0; px < PLOT_W; px++) {
      uint32_t j = (uint32_t)((uint64_t)px * bins / PLOT_W);
      double v = (double)counts[j];
      double frac = denom > 0 ? (cfg->png_log ? log1p(v) : v) / denom : 0;
      int height = (int)lrint(frac * (PLOT_H - 2));
      if (counts[j] > 0 && height == 0)
        height = 1; /* a present value is never invisible */
      for (int k = 0; k < height; k++)
        put(&cv, MARGIN_L + px, bottom - 1 - k, col,
            k + 1 == height ? 1.0 : 0.55);
    }
    /* markers: mean, median, percentiles */
    int row = 0;
    if (info->has_mean[c])
      marker(&cv, value_x(h, info->mean[c] / info->scale), top, bottom, 1,
             black, "mean", row++);
    const imgstat_hist_figures *f = info->figures ? &info->figures[c] : NULL;
    if (f && f->has_values) {
      marker(&cv, value_x(h, f->median), top, bottom, 4, grey, "median", row++);
      for (int i = 0; i < f->npercentiles && i < 6; i++) {
        char name[24];
        imgstat_number_snprintf(name, sizeof name, "p%g", f->percentile_p[i]);
        marker(&cv, value_x(h, f->percentile[i]), top, bottom, 2, grey, name,
               row++ % 4);
      }
    }
    /* samples beyond the range drawn: counted at the edges */
    if (info->below && info->below[c]) {
      char label[48];
      snprintf(label, sizeof label, "<%llu below",
               (unsigned long long)info->below[c]);
      for (int y = top; y < bottom; y += 2)
        put(&cv, MARGIN_L, y, black, 1.0);
      text(&cv, MARGIN_L + 4, bottom - 12, label, black);
    }
    if (info->above && info->above[c]) {
      char label[48];
      snprintf(label, sizeof label, "%llu above>",
               (unsigned long long)info->above[c]);
      for (int y = top; y < bottom; y += 2)
        put(&cv, MARGIN_L + PLOT_W - 1, y, black, 1.0);
      text(&cv, MARGIN_L + PLOT_W - 4 - text_width(label), bottom - 12, label,
           black);
    }
    /* the channel's name; the axes' names */
    text(&cv, 8, top + 2, imgstat_colour_channel_name(info->colour, panels, c),
         col);
    if (c == panels - 1) {
      text(&cv, MARGIN_L + PLOT_W / 2 - text_width("value") / 2, bottom + 20,
           "value", black);
    }
  }
  free(counts);
  /* the temporary in cli_util's slot, for ist_cli_cleanup_on_signals */
  imgstat_write_options wo = {.format = IMGSTAT_FILE_PNG,
                              .temp_path = ist_cli_temp_slot()};
  st = imgstat_image_write(path, &img, &wo, err);
  imgstat_image_free(&img);
  return st;
}
