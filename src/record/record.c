/* The command line's output formats: text table, JSON Lines, CSV. */
#include "record.h"

#include <inttypes.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

/* ---- numbers ------------------------------------------------------------- */

void ist_output_format_double(char *buf, size_t size, double v) {
  /* 17 significant digits always round-trip; fewer read better when they
   * suffice, so take the first precision that strtod gives back exactly. */
  for (int prec = 15; prec <= 17; prec++) {
    imgstat_number_snprintf(buf, size, "%.*g", prec, v);
    double back;
    if (imgstat_number_read(buf, &back) && back == v)
      return;
  }
}

/* A figure of the machine-readable formats: an exact integer for u8/u16
 * samples, the shortest round-trip double for f32. */
static void format_value(char *buf, size_t size, double v,
                         imgstat_sample sample) {
  if (sample != IMGSTAT_F32 && v >= 0 && v <= (double)UINT64_MAX)
    snprintf(buf, size, "%" PRIu64, (uint64_t)v);
  else
    ist_output_format_double(buf, size, v);
}

static void format_sum(char *buf, size_t size, const imgstat_figures *f) {
  if (f->sum_is_exact)
    snprintf(buf, size, "%" PRIu64, f->exact_sum);
  else
    ist_output_format_double(buf, size, f->sum);
}

static void format_sum_sq(char *buf, size_t size, const ist_record *rec,
                          int c) {
  if (rec->figures[c].sum_is_exact)
    snprintf(buf, size, "%" PRIu64, rec->exact_sum_sq[c]);
  else
    ist_output_format_double(buf, size, rec->sum_sq[c]);
}

/* ---- strings ------------------------------------------------------------- */

/* Length of the well-formed UTF-8 sequence at s (at most n bytes), or 0 when
 * it is not one: no overlong forms, no surrogates, nothing past U+10FFFF. */
static size_t utf8_sequence_length(const unsigned char *s, size_t n) {
  unsigned c = s[0];
  size_t len;
  uint32_t cp, lowest;
  if (c < 0x80)
    return 1;
  if (c >= 0xC2 && c <= 0xDF) {
    len = 2;
    cp = c & 0x1F;
    lowest = 0x80;
  } else if ((c & 0xF0) == 0xE0) {
    len = 3;
    cp = c & 0x0F;
    lowest = 0x800;
  } else if (c >= 0xF0 && c <= 0xF4) {
    len = 4;
    cp = c & 0x07;
    lowest = 0x10000;
  } else {
    return 0;
  }
  if (n < len)
    return 0;
  for (size_t i = 1; i < len; i++) {
    if ((s[i] & 0xC0) != 0x80)
      return 0;
    cp = (cp << 6) | (s[i] & 0x3F);
  }
  if (cp < lowest || cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF))
    return 0;
  return len;
}

/* The one escaping of names and messages (output.h). */
void ist_output_escape(FILE *out, const char *s, ist_escape style) {
  static const char hex[] = "0123456789abcdef";
  const unsigned char *p = (const unsigned char *)s;
  size_t n = strlen(s);
  int json = style == IMGSTAT_ESCAPE_JSON;
  while (n > 0) {
    unsigned c = *p;
    size_t len = utf8_sequence_length(p, n);
    if (len == 0) {
      /* File names are bytes; JSON text is Unicode: what cannot be decoded
       * becomes U+FFFD there. Elsewhere the byte is shown as it is. */
      if (json) {
        fputs("\\ufffd", out);
      } else {
        fputs("\\x", out);
        putc(hex[c >> 4], out);
        putc(hex[c & 15], out);
      }
      len = 1;
    } else if (len == 2 && c == 0xC2 && p[1] < 0xA0) {
      /* U+0080..U+009F, the C1 controls (CSI among them) */
      if (json)
        fprintf(out, "\\u%04x", (unsigned)p[1]);
      else
        fprintf(out, "\\xc2\\x%02x", (unsigned)p[1]);
    } else if (len > 1) {
      fwrite(p, 1, len, out);
    } else if (c == '\\') {
      fputs("\\\\", out);
    } else if (c == '"' && style != IMGSTAT_ESCAPE_TEXT) {
      fputs(json ? "\\\"" : "\"\"", out);
    } else if (c == '\n') {
      fputs("\\n", out);
    } else if (c == '\r') {
      fputs("\\r", out);
    } else if (c == '\t') {
      fputs("\\t", out);
    } else if (json && c == '\b') {
      fputs("\\b", out);
    } else if (json && c == '\f') {
      fputs("\\f", out);
    } else if (c < 0x20 || c == 0x7F) {
      if (json)
        fprintf(out, "\\u%04x", c);
      else
        fprintf(out, "\\x%02x", c);
    } else {
      putc((int)c, out);
    }
    p += len;
    n -= len;
  }
}

void ist_output_json_string(FILE *out, const char *s) {
  putc('"', out);
  ist_output_escape(out, s, IMGSTAT_ESCAPE_JSON);
  putc('"', out);
}

/* RFC 4180: a field holding a comma or a quote is quoted, with its quotes
 * doubled; control characters are escaped as in the text output, so no
 * line break is left to quote. */
static void csv_string(FILE *out, const char *s) {
  int quote = strpbrk(s, ",\"") != NULL;
  if (quote)
    putc('"', out);
  ist_output_escape(out, s, IMGSTAT_ESCAPE_CSV);
  if (quote)
    putc('"', out);
}

/* ---- histogram fields (--histogram) ------------------------------------
 * Text: a second table after the record's; JSON: inside each channel's
 * object, after its last field; CSV: columns at the end of each row. */

/* Whether the record carries histogram figures to print. */
static int with_hist(const ist_record *rec) {
  return rec->hist && rec->hist->fields && rec->histograms && rec->hist_figures;
}

/* A histogram figure of the text table: an integer for u8/u16. */
static void hist_value(char *buf, size_t size, imgstat_sample s, double v) {
  if (s != IMGSTAT_F32)
    imgstat_number_snprintf(buf, size, "%.0f", v);
  else
    imgstat_number_snprintf(buf, size, "%.6g", v);
}

static void hist_text(FILE *out, const ist_record *rec) {
  const ist_hist_cli *cfg = rec->hist;
  char buf[64];
  fprintf(out, "%-8s %10s", "channel", "median");
  for (int i = 0; i < cfg->npercentiles; i++) {
    imgstat_number_snprintf(buf, sizeof buf, "p%g", cfg->percentiles[i]);
    fprintf(out, " %10s", buf);
  }
  fprintf(out, " %9s %9s %9s\n", "entropy", "skewness", "kurtosis");
  for (int c = 0; c < rec->channels; c++) {
    const imgstat_hist_figures *f = &rec->hist_figures[c];
    fprintf(out, "%-8s",
            imgstat_colour_channel_name(rec->colour, rec->channels, c));
    if (!f->has_values) {
      fprintf(out, " %10s", "-");
      for (int i = 0; i < cfg->npercentiles; i++)
        fprintf(out, " %10s", "-");
      fprintf(out, " %9s %9s %9s\n", "-", "-", "-");
      continue;
    }
    hist_value(buf, sizeof buf, rec->sample, f->median);
    fprintf(out, " %10s", buf);
    for (int i = 0; i < cfg->npercentiles; i++) {
      hist_value(buf, sizeof buf, rec->sample, f->percentile[i]);
      fprintf(out, " %10s", buf);
    }
    imgstat_number_fprintf(out, " %9.4f", f->entropy);
    if (f->has_shape)
      imgstat_number_fprintf(out, " %9.4f %9.4f\n", f->skewness, f->kurtosis);
    else
      fprintf(out, " %9s %9s\n", "-", "-");
  }
}

static void hist_csv_header(FILE *out, const ist_hist_cli *cfg) {
  fputs(",median", out);
  for (int i = 0; i < cfg->npercentiles; i++)
    imgstat_number_fprintf(out, ",p%g", cfg->percentiles[i]);
  fputs(",entropy,skewness,kurtosis", out);
}

static void hist_csv_number(FILE *out, int defined, double v) {
  char buf[40];
  putc(',', out);
  if (defined && isfinite(v)) {
    ist_output_format_double(buf, sizeof buf, v);
    fputs(buf, out);
  }
}

static void hist_csv(FILE *out, const ist_record *rec, int c) {
  const ist_hist_cli *cfg = rec->hist;
  const imgstat_hist_figures *f = &rec->hist_figures[c];
  hist_csv_number(out, f->has_values, f->median);
  for (int i = 0; i < cfg->npercentiles; i++)
    hist_csv_number(out, f->has_values, f->percentile[i]);
  hist_csv_number(out, f->has_values, f->entropy);
  hist_csv_number(out, f->has_shape, f->skewness);
  hist_csv_number(out, f->has_shape, f->kurtosis);
}

/* ---- JSON Lines -------------------------------------------------------------
 */

/* ---- the record's JSON shape, for any sink ------------------------------ */

/* A number that may be undefined (null). */
static void emit_real(const ist_record_sink *k, const char *key, int defined,
                      double v) {
  if (defined && isfinite(v))
    k->real(k->ctx, key, v);
  else
    k->null(k->ctx, key);
}

/* A figure: an exact integer for u8/u16 samples, else a double (null when
 * undefined). */
static void emit_value(const ist_record_sink *k, const char *key, int defined,
                       double v, imgstat_sample sample) {
  if (!defined)
    k->null(k->ctx, key);
  else if (sample != IMGSTAT_F32 && v >= 0 && v <= (double)UINT64_MAX)
    k->uint(k->ctx, key, (uint64_t)v);
  else
    k->real(k->ctx, key, v);
}

static void emit_uint_or_null(const ist_record_sink *k, const char *key,
                              int defined, uint64_t v) {
  if (defined)
    k->uint(k->ctx, key, v);
  else
    k->null(k->ctx, key);
}

/* The histogram figures of a channel: median, percentiles, entropy (and
 * with shape, skewness and kurtosis), then "histogram":{"bins":B,"lo":..,
 * "hi":..,"counts":[..]}, h rebinned to at most cfg->bins bins; values and
 * range times scale (--scale unit). The image records' and the dataset
 * record's. */
static void emit_hist(const ist_record_sink *k, const ist_hist_cli *cfg,
                      const imgstat_hist_figures *f, const imgstat_histogram *h,
                      double scale, int shape) {
  emit_real(k, "median", f->has_values, f->median * scale);
  k->open(k->ctx, "percentiles", 0);
  for (int i = 0; i < cfg->npercentiles; i++) {
    char name[40];
    imgstat_number_snprintf(name, sizeof name, "%g", cfg->percentiles[i]);
    emit_real(k, name, f->has_values, f->percentile[i] * scale);
  }
  k->close(k->ctx, 0);
  emit_real(k, "entropy", f->has_values, f->entropy);
  if (shape) {
    emit_real(k, "skewness", f->has_shape, f->skewness);
    emit_real(k, "kurtosis", f->has_shape, f->kurtosis);
  }
  uint32_t bins = cfg->bins < h->bins ? cfg->bins : h->bins;
  uint64_t *counts = calloc(bins ? bins : 1, sizeof *counts);
  k->open(k->ctx, "histogram", 0);
  k->uint(k->ctx, "bins", counts ? bins : 0);
  emit_real(k, "lo", 1, h->lo * scale);
  emit_real(k, "hi", 1, h->hi * scale);
  k->open(k->ctx, "counts", 1);
  if (counts) {
    imgstat_histogram_rebin(h, bins, counts);
    for (uint32_t j = 0; j < bins; j++)
      k->uint(k->ctx, NULL, counts[j]);
    free(counts);
  }
  k->close(k->ctx, 1);
  k->close(k->ctx, 0);
}

void ist_record_emit(const ist_record *rec, const ist_record_sink *k) {
  k->open(k->ctx, NULL, 0);
  k->text(k->ctx, "file", rec->file);
  k->uint(k->ctx, "width", rec->width);
  k->uint(k->ctx, "height", rec->height);
  k->uint(k->ctx, "channels", (uint64_t)rec->channels);
  k->uint(k->ctx, "depth", (uint64_t)imgstat_sample_depth(rec->sample));
  k->text(k->ctx, "backend", rec->backend);
  if (rec->decoder)
    k->text(k->ctx, "decoder", rec->decoder);
  if (rec->pages) { /* a multi-page input: which page, of how many */
    k->uint(k->ctx, "page", rec->page);
    k->uint(k->ctx, "pages", rec->pages);
  }
  k->uint(k->ctx, "ddof", (uint64_t)rec->ddof);
  k->open(k->ctx, "stats", 1);
  for (int c = 0; c < rec->channels; c++) {
    const imgstat_figures *f = &rec->figures[c];
    int v = f->has_values;
    k->open(k->ctx, NULL, 0);
    k->text(k->ctx, "channel",
            imgstat_colour_channel_name(rec->colour, rec->channels, c));
    k->uint(k->ctx, "count", f->count);
    emit_value(k, "min", v, f->min, rec->sample);
    emit_value(k, "max", v, f->max, rec->sample);
    emit_uint_or_null(k, "min_x", v, f->min_x);
    emit_uint_or_null(k, "min_y", v, f->min_y);
    emit_uint_or_null(k, "max_x", v, f->max_x);
    emit_uint_or_null(k, "max_y", v, f->max_y);
    /* The sum of no values is 0, which is a number, not a missing one. */
    if (f->sum_is_exact) {
      k->uint(k->ctx, "sum", f->exact_sum);
      k->uint(k->ctx, "sum_sq", rec->exact_sum_sq[c]);
    } else {
      emit_real(k, "sum", 1, f->sum);
      emit_real(k, "sum_sq", 1, rec->sum_sq[c]);
    }
    emit_real(k, "mean", v, f->mean);
    emit_real(k, "std", f->has_std, f->std);
    if (rec->sample == IMGSTAT_F32) {
      k->uint(k->ctx, "nan_count", f->nan_count);
      k->uint(k->ctx, "inf_count", f->inf_count);
    }
    if (with_hist(rec))
      emit_hist(k, rec->hist, &rec->hist_figures[c], &rec->histograms[c], 1, 1);
    k->close(k->ctx, 0);
  }
  k->close(k->ctx, 1);
  if (rec->nwarnings) {
    k->open(k->ctx, "warnings", 1);
    for (int w = 0; w < rec->nwarnings; w++)
      k->text(k->ctx, NULL, rec->warnings[w]);
    k->close(k->ctx, 1);
  }
  k->close(k->ctx, 0);
}

/* The JSON Lines sink: compact JSON text, items separated by commas. */
typedef struct json_sink {
  FILE *out;
  int depth;
  int items[16]; /* items written so far at each depth */
} json_sink;

static void json_item(json_sink *j, const char *key) {
  if (j->depth > 0 && j->items[j->depth - 1]++)
    putc(',', j->out);
  if (key) {
    putc('"', j->out);
    fputs(key, j->out);
    fputs("\":", j->out);
  }
}

static void json_open(void *ctx, const char *key, int array) {
  json_sink *j = ctx;
  json_item(j, key);
  putc(array ? '[' : '{', j->out);
  if (j->depth < 16)
    j->items[j->depth] = 0;
  j->depth++;
}

static void json_close(void *ctx, int array) {
  json_sink *j = ctx;
  j->depth--;
  putc(array ? ']' : '}', j->out);
}

static void json_uint(void *ctx, const char *key, uint64_t v) {
  json_sink *j = ctx;
  json_item(j, key);
  fprintf(j->out, "%" PRIu64, v);
}

static void json_real(void *ctx, const char *key, double v) {
  json_sink *j = ctx;
  char buf[40];
  json_item(j, key);
  ist_output_format_double(buf, sizeof buf, v);
  fputs(buf, j->out);
}

static void json_text(void *ctx, const char *key, const char *s) {
  json_sink *j = ctx;
  json_item(j, key);
  ist_output_json_string(j->out, s);
}

static void json_null(void *ctx, const char *key) {
  json_sink *j = ctx;
  json_item(j, key);
  fputs("null", j->out);
}

static ist_record_sink json_sink_of(json_sink *j) {
  const ist_record_sink k = {j,         json_open, json_close, json_uint,
                             json_real, json_text, json_null};
  return k;
}

static void json_record(FILE *out, const ist_record *rec) {
  json_sink j;
  memset(&j, 0, sizeof j);
  j.out = out;
  const ist_record_sink k = json_sink_of(&j);
  ist_record_emit(rec, &k);
  putc('\n', out);
}

/* ---- CSV -------------------------------------------------------------------
 */

static const char csv_header[] =
    "file,width,height,channels,depth,backend,ddof,channel,count,min,max,"
    "min_x,min_y,max_x,max_y,sum,sum_sq,mean,std,nan_count,inf_count\n";

static void csv_field(FILE *out, int defined, const char *text) {
  putc(',', out);
  if (defined)
    fputs(text, out);
}

static void csv_record(FILE *out, const ist_record *rec) {
  char buf[64];
  for (int c = 0; c < rec->channels; c++) {
    const imgstat_figures *f = &rec->figures[c];
    int v = f->has_values;
    csv_string(out, rec->file);
    fprintf(out, ",%" PRIu32 ",%" PRIu32 ",%d,%d,%s,%d,%s,%" PRIu64, rec->width,
            rec->height, rec->channels, imgstat_sample_depth(rec->sample),
            rec->backend, rec->ddof,
            imgstat_colour_channel_name(rec->colour, rec->channels, c),
            f->count);
    format_value(buf, sizeof buf, f->min, rec->sample);
    csv_field(out, v, buf);
    format_value(buf, sizeof buf, f->max, rec->sample);
    csv_field(out, v, buf);
    snprintf(buf, sizeof buf, "%" PRIu32, f->min_x);
    csv_field(out, v, buf);
    snprintf(buf, sizeof buf, "%" PRIu32, f->min_y);
    csv_field(out, v, buf);
    snprintf(buf, sizeof buf, "%" PRIu32, f->max_x);
    csv_field(out, v, buf);
    snprintf(buf, sizeof buf, "%" PRIu32, f->max_y);
    csv_field(out, v, buf);
    format_sum(buf, sizeof buf, f);
    csv_field(out, isfinite(f->sum) || f->sum_is_exact, buf);
    format_sum_sq(buf, sizeof buf, rec, c);
    csv_field(out, isfinite(rec->sum_sq[c]) || f->sum_is_exact, buf);
    ist_output_format_double(buf, sizeof buf, f->mean);
    csv_field(out, v && isfinite(f->mean), buf);
    ist_output_format_double(buf, sizeof buf, f->std);
    csv_field(out, f->has_std && isfinite(f->std), buf);
    fprintf(out, ",%" PRIu64 ",%" PRIu64, f->nan_count, f->inf_count);
    if (with_hist(rec))
      hist_csv(out, rec, c);
    else if (rec->hist && rec->hist->fields) /* no histogram: empty */
      for (int k = 0; k < 4 + rec->hist->npercentiles; k++)
        putc(',', out);
    if (rec->dataset_columns)
      fputs(",,,,,", out);
    if (rec->decoder_column) {
      putc(',', out);
      if (rec->decoder)
        fputs(rec->decoder, out);
    }
    if (rec->error_column)
      putc(',', out);
    putc('\n', out);
  }
}

/* ---- text -------------------------------------------------------------------
 */

enum { TEXT_COLUMNS = 9, TEXT_CELL = 48, TEXT_MAX_DECIMALS = 8 };

/* One number format for a column of float figures (min, max, mean or std
 * of a float image): fixed, with the decimals its smallest nonzero value
 * needs for about six significant digits (at least four, at most
 * TEXT_MAX_DECIMALS), or exponent form for the whole column when a value
 * needs more or is 1e9 or larger. So the rows of a column line up. */
typedef struct float_column {
  int exponent;
  int decimals;
} float_column;

static void float_column_add(float_column *col, double v) {
  double a = fabs(v);
  if (a == 0 || !isfinite(a))
    return;
  int decimals = 5 - (int)floor(log10(a));
  if (decimals < 4)
    decimals = 4;
  if (decimals > TEXT_MAX_DECIMALS || a >= 1e9)
    col->exponent = 1;
  else if (decimals > col->decimals)
    col->decimals = decimals;
}

static void float_column_format(const float_column *col, char *buf, size_t size,
                                double v) {
  if (col->exponent)
    imgstat_number_snprintf(buf, size, "%.5e", v);
  else
    imgstat_number_snprintf(buf, size, "%.*f",
                            col->decimals < 4 ? 4 : col->decimals, v);
}

/* The cells of the text table of rec (its figures as the table and the
 * one-line form print them); returns how many columns to show. */
static int
text_cells(const ist_record *rec,
           char cells[IMGSTAT_MAX_CHANNELS][TEXT_COLUMNS][TEXT_CELL]) {
  int is_float = rec->sample == IMGSTAT_F32;
  int columns = 7;
  float_column col[5]; /* min, max, mean, std of float images */
  memset(col, 0, sizeof col);

  for (int c = 0; c < rec->channels; c++) {
    const imgstat_figures *f = &rec->figures[c];
    if (f->nan_count || f->inf_count)
      columns = 9; /* show the counts only where there is something */
    if (f->has_values) {
      float_column_add(&col[1], f->min); /* min and max: one format */
      float_column_add(&col[1], f->max);
      float_column_add(&col[3], f->mean);
    }
    if (f->has_std)
      float_column_add(&col[4], f->std);
  }

  for (int c = 0; c < rec->channels; c++) {
    const imgstat_figures *f = &rec->figures[c];
    char(*cell)[TEXT_CELL] = cells[c];
    snprintf(cell[0], TEXT_CELL, "%s",
             imgstat_colour_channel_name(rec->colour, rec->channels, c));
    if (!f->has_values) {
      for (int k = 1; k <= 6; k++)
        if (k != 4)
          strcpy(cell[k], "-");
    } else {
      if (is_float) {
        float_column_format(&col[1], cell[1], TEXT_CELL, f->min);
        float_column_format(&col[1], cell[2], TEXT_CELL, f->max);
        float_column_format(&col[3], cell[3], TEXT_CELL, f->mean);
      } else {
        imgstat_number_snprintf(cell[1], TEXT_CELL, "%.0f", f->min);
        imgstat_number_snprintf(cell[2], TEXT_CELL, "%.0f", f->max);
        imgstat_number_snprintf(cell[3], TEXT_CELL, "%.4f", f->mean);
      }
      snprintf(cell[5], TEXT_CELL, "%" PRIu32 ",%" PRIu32, f->min_x, f->min_y);
      snprintf(cell[6], TEXT_CELL, "%" PRIu32 ",%" PRIu32, f->max_x, f->max_y);
    }
    if (!f->has_std)
      strcpy(cell[4], "-");
    else if (is_float)
      float_column_format(&col[4], cell[4], TEXT_CELL, f->std);
    else
      imgstat_number_snprintf(cell[4], TEXT_CELL, "%.4f", f->std);
    snprintf(cell[7], TEXT_CELL, "%" PRIu64, f->nan_count);
    snprintf(cell[8], TEXT_CELL, "%" PRIu64, f->inf_count);
  }
  return columns;
}

/* The header line of an image: file, size, layout, depth, backend. */
static void text_header(FILE *out, const ist_record *rec) {
  ist_output_escape(out, rec->file, IMGSTAT_ESCAPE_TEXT);
  fprintf(out, "  %" PRIu32 "x%" PRIu32 "  %s  %d-bit%s  backend=%s",
          rec->width, rec->height,
          imgstat_colour_layout_name(rec->colour, rec->channels),
          imgstat_sample_depth(rec->sample),
          rec->sample == IMGSTAT_F32 ? " float" : "", rec->backend);
}

static void text_record(FILE *out, const ist_record *rec, unsigned long index) {
  /* The std column says which one it is: numpy's (N) or vips' (N-1); the
   * positions are those of the first minimum and maximum in raster order
   * (the hot pixel). */
  const char *const heads[TEXT_COLUMNS] = {
      "channel", "min",    "max", "mean", rec->ddof ? "std (N-1)" : "std (N)",
      "min at",  "max at", "nan", "inf"};
  char cells[IMGSTAT_MAX_CHANNELS][TEXT_COLUMNS][TEXT_CELL];
  int width[TEXT_COLUMNS];
  int columns = text_cells(rec, cells);

  for (int k = 0; k < columns; k++) {
    width[k] = (int)strlen(heads[k]);
    for (int c = 0; c < rec->channels; c++) {
      int len = (int)strlen(cells[c][k]);
      if (len > width[k])
        width[k] = len;
    }
  }

  if (index > 0)
    putc('\n', out);
  text_header(out, rec);
  putc('\n', out);
  if (rec->pages)
    fprintf(out, "page %" PRIu32 " of %" PRIu32 "\n", rec->page, rec->pages);
  for (int k = 0; k < rec->nwarnings; k++) {
    fputs("warning: ", out);
    ist_output_escape(out, rec->warnings[k], IMGSTAT_ESCAPE_TEXT);
    putc('\n', out);
  }
  /* The channel name is left-aligned, numbers right-aligned, three spaces
   * between columns. */
  fprintf(out, "%-*s", width[0], heads[0]);
  for (int k = 1; k < columns; k++)
    fprintf(out, "   %*s", width[k], heads[k]);
  putc('\n', out);
  for (int c = 0; c < rec->channels; c++) {
    fprintf(out, "%-*s", width[0], cells[c][0]);
    for (int k = 1; k < columns; k++)
      fprintf(out, "   %*s", width[k], cells[c][k]);
    putc('\n', out);
  }
  if (with_hist(rec))
    hist_text(out, rec);
}

/* --brief: one line per image, the header and then, for mean, std, min and
 * max, each channel's figure (the table's numbers; NaN/Inf counts when
 * there are any). */
static void brief_record(FILE *out, const ist_record *rec) {
  char cells[IMGSTAT_MAX_CHANNELS][TEXT_COLUMNS][TEXT_CELL];
  int columns = text_cells(rec, cells);
  static const struct {
    const char *name;
    int column;
  } parts[] = {{"mean", 3}, {"std", 4}, {"min", 1},
               {"max", 2},  {"nan", 7}, {"inf", 8}};
  text_header(out, rec);
  if (rec->pages)
    fprintf(out, "  page %" PRIu32 "/%" PRIu32, rec->page, rec->pages);
  for (size_t p = 0; p < sizeof parts / sizeof *parts; p++) {
    if (parts[p].column >= columns)
      continue;
    fprintf(out, "  %s",
            parts[p].column == 4 && rec->ddof ? "std(N-1)" : parts[p].name);
    for (int c = 0; c < rec->channels; c++)
      fprintf(out, " %s", cells[c][parts[p].column]);
  }
  putc('\n', out);
}

/* ---- entry points ---------------------------------------------------------
 */

void ist_output_begin(FILE *out, ist_output_format format,
                      const ist_hist_cli *hist, int error_column) {
  if (format != IMGSTAT_OUTPUT_CSV)
    return;
  /* The header without its line end, so that histogram columns can follow. */
  fwrite(csv_header, 1, sizeof csv_header - 2, out);
  if (hist && hist->fields)
    hist_csv_header(out, hist);
  if (hist && hist->dataset_columns)
    fputs(IST_CSV_DATASET_COLUMNS, out);
  if (hist && hist->decoder_column)
    fputs(",decoder", out);
  if (error_column)
    fputs(",error", out);
  putc('\n', out);
}

void ist_output_error_record(FILE *out, ist_output_format format,
                             const char *file, const char *message,
                             const ist_hist_cli *hist) {
  if (format == IMGSTAT_OUTPUT_JSON) {
    fputs("{\"file\":", out);
    ist_output_json_string(out, file);
    fputs(",\"error\":", out);
    ist_output_json_string(out, message);
    fputs("}\n", out);
  } else if (format == IMGSTAT_OUTPUT_CSV) {
    csv_string(out, file);
    /* the empty columns from width to inf_count, then the histogram's */
    int empty = 0;
    for (const char *p = csv_header; *p; p++)
      empty += *p == ',';
    if (hist && hist->fields)
      empty += 4 + hist->npercentiles;
    if (hist && hist->dataset_columns)
      empty += 5;
    if (hist && hist->decoder_column)
      empty += 1;
    for (int k = 0; k < empty; k++)
      putc(',', out);
    putc(',', out);
    csv_string(out, message);
    putc('\n', out);
  }
}

void ist_output_record(FILE *out, ist_output_format format,
                       const ist_record *rec, unsigned long index) {
  switch (format) {
  case IMGSTAT_OUTPUT_JSON:
    json_record(out, rec);
    break;
  case IMGSTAT_OUTPUT_CSV:
    csv_record(out, rec);
    break;
  case IMGSTAT_OUTPUT_TEXT:
    text_record(out, rec, index);
    break;
  case IMGSTAT_OUTPUT_BRIEF:
    brief_record(out, rec);
    break;
  }
}

/* ---- the dataset record (--dataset) ----------------------------------------
 */

/* A pooled value: an integer for unscaled integer samples, else round-trip
 * digits. */
static void ds_value(char *buf, size_t size, const imgstat_dataset_result *r,
                     double v) {
  if (!r->scale_unit && !(r->depths & 4) && v >= 0)
    imgstat_number_snprintf(buf, size, "%.0f", v);
  else
    ist_output_format_double(buf, size, v);
}

static void ds_sum(char *buf, size_t size, const imgstat_dataset_channel *c,
                   int sq) {
  if (c->sums_exact)
    snprintf(buf, size, "%s", sq ? c->sum_sq_text : c->sum_text);
  else
    ist_output_format_double(buf, size, sq ? c->sum_sq : c->sum);
}

static int ds_depth(const imgstat_dataset_result *r) {
  return r->depths == 1 ? 8 : r->depths == 2 ? 16 : r->depths == 4 ? 32 : 0;
}

static void ds_hist_json(FILE *out, const ist_hist_cli *cfg,
                         const imgstat_dataset_result *r, int c,
                         const imgstat_hist_figures *f) {
  /* inside the channel's object, after its first items */
  json_sink j;
  memset(&j, 0, sizeof j);
  j.out = out;
  j.depth = 1;
  j.items[0] = 1;
  const ist_record_sink k = json_sink_of(&j);
  emit_hist(&k, cfg, f, &r->ch[c].hist, r->hist_scale, 0);
}

static void ds_notes_json(FILE *out, const char *key,
                          const imgstat_dataset_note *n, size_t count) {
  fprintf(out, ",\"%s\":[", key);
  for (size_t i = 0; i < count; i++) {
    fputs(i ? ",{\"file\":" : "{\"file\":", out);
    ist_output_json_string(out, n[i].file);
    fputs(",\"reason\":", out);
    ist_output_json_string(out, n[i].reason);
    putc('}', out);
  }
  putc(']', out);
}

/* ,"KEY":text, or null when not defined (the dataset record's numbers). */
static void json_number_or_null(FILE *out, const char *key, int defined,
                                const char *text) {
  fprintf(out, ",\"%s\":%s", key, defined ? text : "null");
}

/* "KEY":value,"KEY_file":...,"KEY_x":...,"KEY_y":... of a dataset extremum
 * (nulls when the channel has no values). */
static void json_extremum(FILE *out, const imgstat_dataset_result *r,
                          const char *key, int v, double value,
                          const imgstat_dataset_where *at) {
  char buf[64], name[16];
  ds_value(buf, sizeof buf, r, value);
  json_number_or_null(out, key, v, buf);
  fprintf(out, ",\"%s_file\":", key);
  if (v)
    ist_output_json_string(out, at->file);
  else
    fputs("null", out);
  snprintf(name, sizeof name, "%s_x", key);
  snprintf(buf, sizeof buf, "%" PRIu32, at->x);
  json_number_or_null(out, name, v, buf);
  snprintf(name, sizeof name, "%s_y", key);
  snprintf(buf, sizeof buf, "%" PRIu32, at->y);
  json_number_or_null(out, name, v, buf);
}

static void ds_json(FILE *out, const imgstat_dataset_result *r,
                    const ist_hist_cli *cfg, const imgstat_hist_figures *hf) {
  char buf[64];
  fprintf(out,
          "{\"dataset\":{\"images\":%" PRIu64 ",\"pooled\":%" PRIu64
          ",\"failed\":%" PRIu64 ",\"layout\":",
          r->images, r->pooled, r->failed);
  if (r->channels)
    ist_output_json_string(out, imgstat_layout_name(r->channels));
  else
    fputs("null", out);
  fprintf(out, ",\"channels\":%d,\"depth\":", r->channels);
  if (ds_depth(r))
    fprintf(out, "%d", ds_depth(r));
  else
    fputs("null", out);
  fputs(",\"depths\":[", out);
  for (int k = 0, first = 1; k < 3; k++)
    if (r->depths & (1 << k)) {
      fprintf(out, "%s%d", first ? "" : ",", 8 << k);
      first = 0;
    }
  fprintf(out, "],\"as\":\"%s\",\"scale\":\"%s\",\"ddof\":%d,\"stats\":[",
          imgstat_dataset_as_name(r->as), r->scale_unit ? "unit" : "none",
          r->ddof);
  for (int c = 0; c < r->channels; c++) {
    const imgstat_dataset_channel *d = &r->ch[c];
    int v = d->has_values;
    fputs(c ? ",{\"channel\":" : "{\"channel\":", out);
    ist_output_json_string(out, imgstat_channel_name(r->channels, c));
    fprintf(out, ",\"count\":%" PRIu64, d->count);
    json_extremum(out, r, "min", v, d->min, &d->min_at);
    json_extremum(out, r, "max", v, d->max, &d->max_at);
    ds_sum(buf, sizeof buf, d, 0);
    json_number_or_null(out, "sum", 1, buf);
    ds_sum(buf, sizeof buf, d, 1);
    json_number_or_null(out, "sum_sq", 1, buf);
    ist_output_format_double(buf, sizeof buf, d->mean);
    json_number_or_null(out, "mean", v && isfinite(d->mean), buf);
    ist_output_format_double(buf, sizeof buf, d->std);
    json_number_or_null(out, "std", d->has_std && isfinite(d->std), buf);
    if (r->depths & 4)
      fprintf(out, ",\"nan_count\":%" PRIu64 ",\"inf_count\":%" PRIu64,
              d->nan_count, d->inf_count);
    if (hf && d->has_histogram)
      ds_hist_json(out, cfg, r, c, &hf[c]);
    putc('}', out);
  }
  putc(']', out);
  if (hf && r->histogram_note[0]) {
    fputs(",\"histogram_note\":", out);
    ist_output_json_string(out, r->histogram_note);
  }
  ds_notes_json(out, "excluded", r->excluded, r->nexcluded);
  fputs(",\"outlier_z\":", out);
  ist_output_format_double(buf, sizeof buf, r->outlier_z);
  fputs(buf, out);
  ds_notes_json(out, "outliers", r->outliers, r->noutliers);
  fputs("}}\n", out);
}

static void ds_csv_tail(FILE *out, const ist_hist_cli *cfg, int error_column) {
  if (cfg && cfg->decoder_column)
    putc(',', out);
  if (error_column)
    putc(',', out);
  putc('\n', out);
}

static void ds_csv(FILE *out, const imgstat_dataset_result *r,
                   const ist_hist_cli *cfg, const imgstat_hist_figures *hf,
                   int error_column) {
  char buf[64];
  int nhist = cfg && cfg->fields ? 4 + cfg->npercentiles : 0;
  for (int c = 0; c < r->channels; c++) {
    const imgstat_dataset_channel *d = &r->ch[c];
    int v = d->has_values;
    fprintf(out, ",,,%d,", r->channels);
    if (ds_depth(r))
      fprintf(out, "%d", ds_depth(r));
    fprintf(out, ",dataset,%d,%s,%" PRIu64, r->ddof,
            imgstat_channel_name(r->channels, c), d->count);
    ds_value(buf, sizeof buf, r, d->min);
    csv_field(out, v, buf);
    ds_value(buf, sizeof buf, r, d->max);
    csv_field(out, v, buf);
    snprintf(buf, sizeof buf, "%" PRIu32, d->min_at.x);
    csv_field(out, v, buf);
    snprintf(buf, sizeof buf, "%" PRIu32, d->min_at.y);
    csv_field(out, v, buf);
    snprintf(buf, sizeof buf, "%" PRIu32, d->max_at.x);
    csv_field(out, v, buf);
    snprintf(buf, sizeof buf, "%" PRIu32, d->max_at.y);
    csv_field(out, v, buf);
    ds_sum(buf, sizeof buf, d, 0);
    csv_field(out, 1, buf);
    ds_sum(buf, sizeof buf, d, 1);
    csv_field(out, 1, buf);
    ist_output_format_double(buf, sizeof buf, d->mean);
    csv_field(out, v, buf);
    ist_output_format_double(buf, sizeof buf, d->std);
    csv_field(out, d->has_std && isfinite(d->std), buf);
    fprintf(out, ",%" PRIu64 ",%" PRIu64, d->nan_count, d->inf_count);
    if (nhist && hf && d->has_histogram) {
      imgstat_hist_figures f = hf[c];
      f.median *= r->hist_scale;
      for (int i = 0; i < f.npercentiles; i++)
        f.percentile[i] *= r->hist_scale;
      hist_csv_number(out, f.has_values, f.median);
      for (int i = 0; i < cfg->npercentiles; i++)
        hist_csv_number(out, f.has_values, f.percentile[i]);
      hist_csv_number(out, f.has_values, f.entropy);
      fputs(",,", out); /* no skewness / kurtosis for the pool */
    } else {
      for (int k = 0; k < nhist; k++)
        putc(',', out);
    }
    fprintf(out, ",%" PRIu64 ",%" PRIu64 ",", r->images, r->failed);
    if (v)
      csv_string(out, d->min_at.file);
    putc(',', out);
    if (v)
      csv_string(out, d->max_at.file);
    putc(',', out);
    ds_csv_tail(out, cfg, error_column);
  }
  for (int pass = 0; pass < 2; pass++) {
    const imgstat_dataset_note *n = pass ? r->outliers : r->excluded;
    size_t count = pass ? r->noutliers : r->nexcluded;
    int empty = 0;
    for (const char *p = csv_header; *p; p++)
      empty += *p == ',';
    for (size_t i = 0; i < count; i++) {
      csv_string(out, n[i].file);
      /* width .. backend: empty but backend; the rest empty */
      fprintf(out, ",,,,,%s", pass ? "outlier" : "excluded");
      for (int k = 5; k < empty + nhist + 4; k++)
        putc(',', out);
      putc(',', out);
      csv_string(out, n[i].reason);
      ds_csv_tail(out, cfg, error_column);
    }
  }
}

static void ds_text(FILE *out, const imgstat_dataset_result *r,
                    const ist_hist_cli *cfg, const imgstat_hist_figures *hf,
                    unsigned long index) {
  char mn[48], mx[48], mean[48], sd[48];
  int as_float = r->scale_unit || (r->depths & 4);
  if (index > 0)
    putc('\n', out);
  fprintf(out,
          "dataset  %" PRIu64 " images, %" PRIu64 " pooled, %" PRIu64 " failed",
          r->images, r->pooled, r->failed);
  if (r->channels) {
    fprintf(out, "  %s  ", imgstat_layout_name(r->channels));
    for (int k = 0, first = 1; k < 3; k++)
      if (r->depths & (1 << k)) {
        fprintf(out, "%s%d", first ? "" : "+", 8 << k);
        first = 0;
      }
    fputs("-bit", out);
  }
  fprintf(out, "  as=%s  scale=%s\n", imgstat_dataset_as_name(r->as),
          r->scale_unit ? "unit" : "none");
  if (r->channels) {
    fprintf(out, "%-8s %14s %12s %12s %12s %12s\n", "channel", "count", "min",
            "max", "mean", r->ddof ? "std (N-1)" : "std (N)");
    float_column col[4]; /* min, max, mean, std: one format each */
    memset(col, 0, sizeof col);
    for (int c = 0; c < r->channels; c++)
      if (r->ch[c].has_values) {
        float_column_add(&col[0], r->ch[c].min); /* min and max: one */
        float_column_add(&col[0], r->ch[c].max);
        float_column_add(&col[2], r->ch[c].mean);
        if (r->ch[c].has_std)
          float_column_add(&col[3], r->ch[c].std);
      }
    for (int c = 0; c < r->channels; c++) {
      const imgstat_dataset_channel *d = &r->ch[c];
      if (!d->has_values) {
        fprintf(out, "%-8s %14" PRIu64 " %12s %12s %12s %12s\n",
                imgstat_channel_name(r->channels, c), d->count, "-", "-", "-",
                "-");
        continue;
      }
      if (as_float) {
        float_column_format(&col[0], mn, sizeof mn, d->min);
        float_column_format(&col[0], mx, sizeof mx, d->max);
        float_column_format(&col[2], mean, sizeof mean, d->mean);
        float_column_format(&col[3], sd, sizeof sd, d->std);
      } else {
        imgstat_number_snprintf(mn, sizeof mn, "%.0f", d->min);
        imgstat_number_snprintf(mx, sizeof mx, "%.0f", d->max);
        imgstat_number_snprintf(mean, sizeof mean, "%.4f", d->mean);
        imgstat_number_snprintf(sd, sizeof sd, "%.4f", d->std);
      }
      if (!d->has_std)
        strcpy(sd, "-");
      fprintf(out, "%-8s %14" PRIu64 " %12s %12s %12s %12s\n",
              imgstat_channel_name(r->channels, c), d->count, mn, mx, mean, sd);
    }
    for (int c = 0; c < r->channels; c++) {
      const imgstat_dataset_channel *d = &r->ch[c];
      if (!d->has_values)
        continue;
      ds_sum(mn, sizeof mn, d, 0);
      ds_sum(mx, sizeof mx, d, 1);
      fprintf(out, "%s: sum %s  sum_sq %s\n",
              imgstat_channel_name(r->channels, c), mn, mx);
      fprintf(out, "%s: min at ", imgstat_channel_name(r->channels, c));
      ist_output_escape(out, d->min_at.file, IMGSTAT_ESCAPE_TEXT);
      fprintf(out, " (%" PRIu32 ", %" PRIu32 "), max at ", d->min_at.x,
              d->min_at.y);
      ist_output_escape(out, d->max_at.file, IMGSTAT_ESCAPE_TEXT);
      fprintf(out, " (%" PRIu32 ", %" PRIu32 ")\n", d->max_at.x, d->max_at.y);
    }
  }
  if (hf && r->channels) {
    if (r->histogram_note[0])
      fprintf(out, "pooled histogram: %s\n", r->histogram_note);
    for (int c = 0; c < r->channels; c++) {
      if (!r->ch[c].has_histogram || !hf[c].has_values)
        continue;
      imgstat_number_fprintf(out, "%s: median %.6g",
                             imgstat_channel_name(r->channels, c),
                             hf[c].median * r->hist_scale);
      for (int i = 0; i < cfg->npercentiles; i++)
        imgstat_number_fprintf(out, "  p%g %.6g", cfg->percentiles[i],
                               hf[c].percentile[i] * r->hist_scale);
      imgstat_number_fprintf(out, "  entropy %.4f\n", hf[c].entropy);
    }
  }
  for (size_t i = 0; i < r->nexcluded; i++) {
    fputs("left out: ", out);
    ist_output_escape(out, r->excluded[i].file, IMGSTAT_ESCAPE_TEXT);
    fprintf(out, ": %s\n", r->excluded[i].reason);
  }
  for (size_t i = 0; i < r->noutliers; i++) {
    fputs("outlier: ", out);
    ist_output_escape(out, r->outliers[i].file, IMGSTAT_ESCAPE_TEXT);
    fprintf(out, ": %s\n", r->outliers[i].reason);
  }
  if (r->scale_unit && r->channels) {
    char buf[40];
    fputs("Normalize(mean=[", out);
    for (int c = 0; c < r->channels; c++) {
      ist_output_format_double(buf, sizeof buf, r->ch[c].mean);
      fprintf(out, "%s%s", c ? ", " : "", buf);
    }
    fputs("], std=[", out);
    for (int c = 0; c < r->channels; c++) {
      ist_output_format_double(buf, sizeof buf, r->ch[c].std);
      fprintf(out, "%s%s", c ? ", " : "", buf);
    }
    fputs("])\n", out);
  }
}

void ist_output_dataset(FILE *out, ist_output_format format,
                        const imgstat_dataset_result *r,
                        const ist_hist_cli *hist,
                        const imgstat_hist_figures *hf, unsigned long index,
                        int error_column) {
  switch (format) {
  case IMGSTAT_OUTPUT_JSON:
    ds_json(out, r, hist, hf);
    break;
  case IMGSTAT_OUTPUT_CSV:
    ds_csv(out, r, hist, hf, error_column);
    break;
  case IMGSTAT_OUTPUT_TEXT:
  case IMGSTAT_OUTPUT_BRIEF: /* the dataset's table, after a blank line */
    ds_text(out, r, hist, hf, index);
    break;
  }
}

void ist_record_from_job(ist_record *rec, const char *file,
                         const imgstat_job_result *res, int ddof,
                         const ist_hist_cli *hist, int jpeg_gpu) {
  memset(rec, 0, sizeof *rec);
  rec->file = file;
  rec->width = res->width;
  rec->height = res->height;
  rec->channels = res->channels;
  rec->colour = res->colour;
  rec->sample = res->sample;
  rec->pages = res->pages;
  rec->page = res->page;
  rec->backend = imgstat_backend_name(res->backend);
  /* a JPEG the job layer did not decode was decoded by the CPU's TurboJPEG
   * (nvJPEG refused it) */
  if (jpeg_gpu)
    rec->decoder = res->decoder ? res->decoder
                   : res->format && strcmp(res->format, "JPEG") == 0
                       ? IMGSTAT_DECODER_TURBOJPEG
                       : NULL;
  rec->ddof = ddof;
  for (int k = 0; k < res->nwarnings; k++)
    if (res->warning[k].from_decoder &&
        rec->nwarnings < IST_RECORD_MAX_WARNINGS)
      rec->warnings[rec->nwarnings++] = res->warning[k].text;
  for (int c = 0; c < res->channels; c++) {
    const imgstat_partial *p = &res->partial[c];
    imgstat_figures_compute(p, res->sample, res->width, ddof, &rec->figures[c]);
    /* exact for u8 / u16; f32: from the partial's m2 and mean */
    rec->exact_sum_sq[c] = p->sumsq;
    rec->sum_sq[c] = res->sample == IMGSTAT_F32
                         ? (double)((long double)p->m2 +
                                    (long double)p->count * p->mean * p->mean)
                         : (double)p->sumsq;
  }
  if (res->has_histograms && hist) {
    rec->hist = hist;
    rec->histograms = res->hist;
    rec->hist_figures = res->hist_figures;
  }
}

void ist_dataset_hist_figures(const imgstat_dataset_result *r,
                              const double *percentiles, int n,
                              imgstat_hist_figures hf[IMGSTAT_MAX_CHANNELS]) {
  memset(hf, 0, sizeof(imgstat_hist_figures) * IMGSTAT_MAX_CHANNELS);
  for (int c = 0; c < r->channels; c++) {
    if (!r->ch[c].has_histogram)
      continue;
    imgstat_moments m;
    imgstat_moments_from_histogram(&r->ch[c].hist, &m);
    imgstat_hist_figures_compute(&r->ch[c].hist, &m, percentiles, n, &hf[c]);
  }
}
