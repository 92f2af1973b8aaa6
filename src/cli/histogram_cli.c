/*
 * The histogram options of the main command line: parsing, computing (CPU
 * or GPU), the extra fields in text / JSON / CSV, and the histogram PNG.
 * The interface, and how src/main.c and src/output.c call it, is described
 * at the top of histogram_cli.h. Part of the program: it prints.
 *
 * The PNG: one panel per channel, stacked, each with its own axes (float
 * channels have their own [min, max]); x from the channel's lowest to
 * highest bin value with five labelled ticks, bars filled in the channel's
 * colour, counts linear or logarithmic (log(1 + count)) against the panel's
 * largest count. Labels use a 3x5 pixel font drawn here.
 */
#include "histogram_cli.h"

#include "cli_util.h"
#include "imgstat_cuda_norm.h"
#include "output.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#define DEFAULT_DISPLAY_BINS 256u

#define usage_error(...) ist_cli_usage_error("", "imgstat", __VA_ARGS__)

void ist_hist_cli_init(ist_hist_cli *cfg) {
  memset(cfg, 0, sizeof *cfg);
  cfg->npercentiles = 2;
  cfg->percentiles[0] = 1;
  cfg->percentiles[1] = 99;
  cfg->bins = DEFAULT_DISPLAY_BINS;
}

int ist_hist_cli_takes_value(const char *name) {
  if (strcmp(name, "--histogram") == 0 || strcmp(name, "--histogram-log") == 0)
    return 0;
  if (strcmp(name, "--percentiles") == 0 || strcmp(name, "--bins") == 0 ||
      strcmp(name, "--histogram-png") == 0)
    return 1;
  return -1;
}

int ist_hist_cli_set(ist_hist_cli *cfg, const char *name, const char *value) {
  if (strcmp(name, "--histogram") == 0) {
    cfg->fields = 1;
  } else if (strcmp(name, "--histogram-log") == 0) {
    cfg->png_log = 1;
  } else if (strcmp(name, "--histogram-png") == 0) {
    if (!value || !*value)
      return usage_error("--histogram-png needs a file name");
    cfg->png_path = value;
  } else if (strcmp(name, "--bins") == 0) {
    uint64_t v;
    if (!ist_cli_parse_uint(value, 1, 65536, &v))
      return usage_error("--bins: '%s' is not a number from 1 to 65536",
                         value ? value : "");
    cfg->bins = (uint32_t)v;
  } else if (strcmp(name, "--percentiles") == 0) {
    double p[IMGSTAT_MAX_PERCENTILES];
    if (!value || !*value)
      return usage_error("--percentiles needs at least one value");
    int n =
        ist_cli_parse_double_list(value, 0, 100, p, IMGSTAT_MAX_PERCENTILES);
    if (n == IMGSTAT_CLI_NUM_RANGE)
      return usage_error("--percentiles: '%s': every value must be from 0 "
                         "to 100",
                         value);
    if (n < 1)
      return usage_error("--percentiles: '%s' is not up to %d numbers "
                         "from 0 to 100 separated by commas",
                         value, IMGSTAT_MAX_PERCENTILES);
    memcpy(cfg->percentiles, p, sizeof(double) * (size_t)n);
    cfg->npercentiles = n;
    cfg->fields = 1;
  } else {
    return usage_error("unknown option '%s'", name);
  }
  return 0;
}

int ist_hist_cli_png_path(const ist_hist_cli *cfg, int index, int nfiles,
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

int ist_hist_cli_check(const ist_hist_cli *cfg, char *const *files,
                       int nfiles) {
  if (cfg->png_log && !cfg->png_path)
    return usage_error("--histogram-log needs --histogram-png");
  if (!cfg->png_path)
    return 0;
  /* no PNG may overwrite an input (normalize's rule, cli_util.h) */
  ist_cli_set *inputs = ist_cli_inputs_index(files, nfiles);
  if (!inputs) {
    fputs("imgstat: out of memory\n", stderr);
    return 1;
  }
  int status = -1;
  char path[IMGSTAT_HIST_PNG_PATH_MAX];
  for (int k = 1; k <= nfiles && status < 0; k++) {
    if (!ist_hist_cli_png_path(cfg, k, nfiles, path, sizeof path))
      status = usage_error("--histogram-png: the name is too long");
    else
      status = ist_cli_refuse_input_output(inputs, files, path, "", "imgstat");
  }
  ist_cli_set_free(inputs);
  return status < 0 ? 0 : status;
}

int ist_hist_cli_active(const ist_hist_cli *cfg) {
  return cfg->fields || cfg->png_path;
}

void ist_hist_result_free(ist_hist_result *res) {
  for (int c = 0; c < IMGSTAT_MAX_CHANNELS; c++)
    imgstat_histogram_free(&res->hist[c]);
  memset(res, 0, sizeof *res);
}

imgstat_status ist_hist_cli_compute(const ist_hist_cli *cfg,
                                    const imgstat_image *img, imgstat_gpu *gpu,
                                    int threads, ist_hist_result *res,
                                    imgstat_error *err) {
  (void)threads;
  memset(res, 0, sizeof *res);
  res->channels = img->channels;
  res->sample = img->sample;
  res->backend = gpu ? "gpu" : "cpu";
  /* the median first, then the requested percentiles */
  double p[IMGSTAT_MAX_PERCENTILES + 1];
  p[0] = 50;
  memcpy(p + 1, cfg->percentiles, sizeof(double) * cfg->npercentiles);
  int np = cfg->npercentiles + 1;
  for (int c = 0; c < img->channels; c++) {
    imgstat_histogram *h = &res->hist[c];
    double v[IMGSTAT_MAX_PERCENTILES + 1];
    const int from_gpu = gpu != NULL;
    /* A GPU failure is returned, not hidden: whether the CPU redoes the
     * work is the caller's backend policy (src/main.c). */
    imgstat_status st =
        from_gpu ? imgstat_gpu_histogram(gpu, img, c, NULL, p, np, v, h, err)
                 : imgstat_histogram_compute(img, c, NULL, h, err);
    if (st != IMGSTAT_OK) {
      ist_hist_result_free(res);
      return st;
    }
    imgstat_moments m;
    if (img->sample == IMGSTAT_F32)
      imgstat_image_moments_f32(img, c, &m);
    else
      imgstat_moments_from_histogram(h, &m);
    imgstat_hist_figures_compute(h, &m, cfg->percentiles, cfg->npercentiles,
                                 &res->fig[c]);
    if (from_gpu && h->total) {
      /* the device scan's percentiles (equal to the CPU's by construction) */
      res->fig[c].median = v[0];
      for (int i = 0; i < cfg->npercentiles; i++)
        res->fig[c].percentile[i] = v[i + 1];
    }
  }
  return IMGSTAT_OK;
}

/* ---- text, JSON, CSV
 * ---------------------------------------------------------- */

static void format_value(char *buf, size_t size, imgstat_sample s, double v) {
  if (s != IMGSTAT_F32)
    snprintf(buf, size, "%.0f", v);
  else
    snprintf(buf, size, "%.6g", v);
}

void ist_hist_cli_print_text(FILE *out, const ist_hist_cli *cfg,
                             const ist_hist_result *res) {
  char buf[64];
  fprintf(out, "%-8s %10s", "channel", "median");
  for (int i = 0; i < cfg->npercentiles; i++) {
    snprintf(buf, sizeof buf, "p%g", cfg->percentiles[i]);
    fprintf(out, " %10s", buf);
  }
  fprintf(out, " %9s %9s %9s\n", "entropy", "skewness", "kurtosis");
  for (int c = 0; c < res->channels; c++) {
    const imgstat_hist_figures *f = &res->fig[c];
    fprintf(out, "%-8s", imgstat_channel_name(res->channels, c));
    if (!f->has_values) {
      fprintf(out, " %10s", "-");
      for (int i = 0; i < cfg->npercentiles; i++)
        fprintf(out, " %10s", "-");
      fprintf(out, " %9s %9s %9s\n", "-", "-", "-");
      continue;
    }
    format_value(buf, sizeof buf, res->sample, f->median);
    fprintf(out, " %10s", buf);
    for (int i = 0; i < cfg->npercentiles; i++) {
      format_value(buf, sizeof buf, res->sample, f->percentile[i]);
      fprintf(out, " %10s", buf);
    }
    fprintf(out, " %9.4f", f->entropy);
    if (f->has_shape)
      fprintf(out, " %9.4f %9.4f\n", f->skewness, f->kurtosis);
    else
      fprintf(out, " %9s %9s\n", "-", "-");
  }
}

/* A JSON number (round-trip digits), or null. */
static void json_number(FILE *out, int defined, double v) {
  char buf[40];
  if (!defined || !isfinite(v)) {
    fputs("null", out);
    return;
  }
  ist_output_format_double(buf, sizeof buf, v);
  fputs(buf, out);
}

void ist_hist_cli_print_json(FILE *out, const ist_hist_cli *cfg,
                             const ist_hist_result *res, int c) {
  const imgstat_hist_figures *f = &res->fig[c];
  const imgstat_histogram *h = &res->hist[c];
  fputs(",\"median\":", out);
  json_number(out, f->has_values, f->median);
  fputs(",\"percentiles\":{", out);
  for (int i = 0; i < cfg->npercentiles; i++) {
    fprintf(out, "%s\"%g\":", i ? "," : "", cfg->percentiles[i]);
    json_number(out, f->has_values, f->percentile[i]);
  }
  fputs("},\"entropy\":", out);
  json_number(out, f->has_values, f->entropy);
  fputs(",\"skewness\":", out);
  json_number(out, f->has_shape, f->skewness);
  fputs(",\"kurtosis\":", out);
  json_number(out, f->has_shape, f->kurtosis);
  uint32_t bins = cfg->bins < h->bins ? cfg->bins : h->bins;
  uint64_t *counts = calloc(bins ? bins : 1, sizeof *counts);
  fprintf(out, ",\"histogram\":{\"bins\":%u,\"lo\":", counts ? bins : 0);
  json_number(out, 1, h->lo);
  fputs(",\"hi\":", out);
  json_number(out, 1, h->hi);
  fputs(",\"counts\":[", out);
  if (counts) {
    imgstat_histogram_rebin(h, bins, counts);
    for (uint32_t j = 0; j < bins; j++)
      fprintf(out, "%s%llu", j ? "," : "", (unsigned long long)counts[j]);
    free(counts);
  }
  fputs("]}", out);
}

void ist_hist_cli_print_csv_header(FILE *out, const ist_hist_cli *cfg) {
  fputs(",median", out);
  for (int i = 0; i < cfg->npercentiles; i++)
    fprintf(out, ",p%g", cfg->percentiles[i]);
  fputs(",entropy,skewness,kurtosis", out);
}

static void csv_number(FILE *out, int defined, double v) {
  char buf[40];
  putc(',', out);
  if (defined && isfinite(v)) {
    ist_output_format_double(buf, sizeof buf, v);
    fputs(buf, out);
  }
}

void ist_hist_cli_print_csv(FILE *out, const ist_hist_cli *cfg,
                            const ist_hist_result *res, int c) {
  const imgstat_hist_figures *f = &res->fig[c];
  csv_number(out, f->has_values, f->median);
  for (int i = 0; i < cfg->npercentiles; i++)
    csv_number(out, f->has_values, f->percentile[i]);
  csv_number(out, f->has_values, f->entropy);
  csv_number(out, f->has_shape, f->skewness);
  csv_number(out, f->has_shape, f->kurtosis);
}

/* ---- the PNG
 * ------------------------------------------------------------------------ */

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

imgstat_status ist_hist_cli_write_png(const ist_hist_cli *cfg,
                                      const ist_hist_result *res, int index,
                                      int nfiles, char *path_buf,
                                      size_t path_size, imgstat_error *err) {
  if (!ist_hist_cli_png_path(cfg, index, nfiles, path_buf, path_size))
    return imgstat_error_set(err, IMGSTAT_ERR_ARG, "the name is too long");
  int panels = res->channels;
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
    const imgstat_histogram *h = &res->hist[c];
    int top = MARGIN_T + c * (PLOT_H + PANEL_GAP);
    int bottom = top + PLOT_H; /* the x axis row */
    uint8_t col[3];
    channel_colour(res->channels, c, col);
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
      if (res->sample == IMGSTAT_F32)
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
    text(&cv, 8, top + 2, imgstat_channel_name(res->channels, c), col);
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
  imgstat_write_options wo = {IMGSTAT_FILE_PNG, NULL, ist_cli_temp_slot()};
  st = imgstat_image_write(path_buf, &img, &wo, err);
  imgstat_image_free(&img);
  return st;
}
