/*
 * --histogram-png (hist_plot.h): one panel per channel, stacked, each with
 * its own axes (float channels have their own [min, max]); x from the
 * channel's lowest to highest bin value with five labelled ticks, bars
 * filled in the channel's colour, counts linear or logarithmic
 * (log(1 + count)) against the panel's largest count. Labels use a 3x5
 * pixel font drawn here.
 */
#include "hist_plot.h"

#include "cli_util.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

int ist_hist_plot_path(const ist_hist_cli *cfg, int index, int nfiles,
                       char *buf, size_t size) {
  const char *path = cfg->png_path;
  int n;
  if (nfiles > 1) {
    const char *dot = strrchr(path, '.');
    const char *slash = strrchr(path, '/');
    if (!dot || (slash && dot < slash))
      dot = path + strlen(path);
    n = snprintf(buf, size, "%.*s-%d%s", (int)(dot - path), path, index, dot);
  } else {
    n = snprintf(buf, size, "%s", path);
  }
  return n >= 0 && (size_t)n < size;
}

#define PLOT_W 768
#define PLOT_H 160
#define MARGIN_L 56
#define MARGIN_R 24
#define MARGIN_T 22
#define PANEL_GAP 34
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
    {'a', {0, 6, 1, 7, 7}}, {'i', {2, 0, 2, 2, 2}},
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

static void channel_colour(int channels, int c, uint8_t col[3]) {
  const char *name = imgstat_channel_name(channels, c);
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

imgstat_status ist_hist_plot_write(const ist_hist_cli *cfg, int channels,
                                   imgstat_sample sample,
                                   const imgstat_histogram *hist, int index,
                                   int nfiles, char *path_buf, size_t path_size,
                                   imgstat_error *err) {
  if (!ist_hist_plot_path(cfg, index, nfiles, path_buf, path_size))
    return imgstat_error_set(err, IMGSTAT_ERR_ARG, "the name is too long");
  int panels = channels;
  canvas cv;
  cv.w = MARGIN_L + PLOT_W + MARGIN_R;
  cv.h = MARGIN_T + (uint32_t)panels * (PLOT_H + PANEL_GAP) + 4;
  imgstat_image img;
  imgstat_status st =
      imgstat_image_alloc(&img, cv.w, cv.h, 3, IMGSTAT_U8, 0, err);
  if (st != IMGSTAT_OK)
    return st;
  for (int k = 0; k < 3; k++) {
    cv.rgb[k] = img.planes[k];
    memset(cv.rgb[k], 255, (size_t)cv.w * cv.h);
  }
  const uint8_t black[3] = {0, 0, 0}, grid[3] = {225, 225, 225};
  uint64_t *counts = malloc(sizeof *counts * PLOT_W);
  if (!counts) {
    imgstat_image_free(&img);
    return imgstat_error_set(err, IMGSTAT_ERR_NOMEM, "out of memory");
  }
  text(&cv, MARGIN_L, 4, cfg->png_log ? "LOG" : "LIN", black);
  for (int c = 0; c < panels; c++) {
    const imgstat_histogram *h = &hist[c];
    int top = MARGIN_T + c * (PLOT_H + PANEL_GAP);
    int bottom = top + PLOT_H; /* the x axis row */
    uint8_t col[3];
    channel_colour(channels, c, col);
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
    /* grid and ticks at 0, 1/4, 1/2, 3/4, 1 of the range */
    for (int q = 0; q <= 4; q++) {
      int x = MARGIN_L + q * (PLOT_W - 1) / 4;
      for (int y = top; y < bottom; y++)
        put(&cv, x, y, grid, 1.0);
      for (int y = bottom; y < bottom + 4; y++)
        put(&cv, x, y, black, 1.0);
      double v = h->lo + (h->hi - h->lo) * q / 4.0;
      char label[32];
      if (sample == IMGSTAT_F32)
        snprintf(label, sizeof label, "%.3g", v);
      else
        snprintf(label, sizeof label, "%.0f", floor(v + 0.5));
      int tw = text_width(label);
      int lx = q == 0 ? x : (q == 4 ? x - tw : x - tw / 2);
      text(&cv, lx, bottom + 7, label, black);
    }
    for (int y = top; y < bottom; y += 1)
      put(&cv, MARGIN_L - 1, y, black, 1.0);
    for (int x = MARGIN_L - 1; x < MARGIN_L + PLOT_W; x++)
      put(&cv, x, bottom, black, 1.0);
    /* bars */
    double denom = cfg->png_log ? log1p((double)peak) : (double)peak;
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
    /* the channel's name and the peak count on the y axis */
    text(&cv, 8, top + 2, imgstat_channel_name(channels, c), col);
    char peak_label[32];
    snprintf(peak_label, sizeof peak_label, "%llu", (unsigned long long)peak);
    if (text_width(peak_label) > MARGIN_L - 8)
      snprintf(peak_label, sizeof peak_label, "%.1e", (double)peak);
    text(&cv, MARGIN_L - 4 - text_width(peak_label), top + 16, peak_label,
         black);
    text(&cv, MARGIN_L - 4 - text_width("0"), bottom - 10, "0", black);
  }
  free(counts);
  /* the temporary in cli_util's slot, for ist_cli_cleanup_on_signals */
  imgstat_write_options wo = {.format = IMGSTAT_FILE_PNG,
                              .temp_path = ist_cli_temp_slot()};
  st = imgstat_image_write(path_buf, &img, &wo, err);
  imgstat_image_free(&img);
  return st;
}
