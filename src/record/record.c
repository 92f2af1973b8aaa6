/* The record formats of one image: JSON (through a sink), CSV, the text
 * table and its one-line form, and the record of an input that failed. */
#include "imgstat/record.h"
#include "record_parts.h"

#include <inttypes.h>
#include <math.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

/* A figure of the machine-readable formats: an exact integer for u8/u16
 * samples, the shortest round-trip double for f32. */
static void format_value(char *buf, size_t size, double v,
                         imgstat_sample sample) {
  if (sample != IMGSTAT_F32 && v >= 0 && v <= (double)UINT64_MAX)
    snprintf(buf, size, "%" PRIu64, (uint64_t)v);
  else
    imgstat_record_format_double(buf, size, v);
}

static void format_sum(char *buf, size_t size, const imgstat_record *rec,
                       const imgstat_figures *f) {
  if (f->sum_is_exact && rec->int16)
    snprintf(buf, size, "%" PRId64, (int64_t)f->exact_sum);
  else if (f->sum_is_exact)
    snprintf(buf, size, "%" PRIu64, f->exact_sum);
  else
    imgstat_record_format_double(buf, size, f->sum);
}

/* Channel c of a record: its figures, sums of squares and nodata count. */
typedef struct rec_channel {
  imgstat_figures f;
  uint64_t exact_sum_sq;
  double sum_sq;
  uint64_t nodata_count;
} rec_channel;

static void channel_from_partial(const imgstat_partial *p,
                                 imgstat_sample sample, uint32_t width,
                                 int ddof, imgstat_figures *f,
                                 uint64_t *exact_sum_sq, double *sum_sq) {
  imgstat_figures_compute(p, sample, width, ddof, f);
  /* exact for u8 / u16; f32: from the partial's m2 and mean */
  *exact_sum_sq = p->sumsq;
  *sum_sq = sample == IMGSTAT_F32
                ? (double)((long double)p->m2 +
                           (long double)p->count * p->mean * p->mean)
                : (double)p->sumsq;
}

static void int16_figures(const imgstat_partial *p, imgstat_figures *f,
                          uint64_t *exact_sum_sq, double *sum_sq);

/* The nodata samples of channel c of a record (inline or borrowed). */
static uint64_t nodata_of(const imgstat_record *rec, int c) {
  if (rec->wide_partial)
    return rec->wide_nodata_count ? rec->wide_nodata_count[c] : 0;
  return rec->nodata_count[c];
}

static void channel_of(const imgstat_record *rec, int c, rec_channel *ch) {
  if (rec->wide_partial) {
    channel_from_partial(&rec->wide_partial[c], rec->sample, rec->width,
                         rec->ddof, &ch->f, &ch->exact_sum_sq, &ch->sum_sq);
    if (rec->int16)
      int16_figures(&rec->wide_partial[c], &ch->f, &ch->exact_sum_sq,
                    &ch->sum_sq);
    ch->nodata_count = nodata_of(rec, c);
    return;
  }
  ch->f = rec->figures[c];
  ch->exact_sum_sq = rec->exact_sum_sq[c];
  ch->sum_sq = rec->sum_sq[c];
  ch->nodata_count = rec->nodata_count[c];
}

static void format_sum_sq(char *buf, size_t size, const rec_channel *ch) {
  if (ch->f.sum_is_exact)
    snprintf(buf, size, "%" PRIu64, ch->exact_sum_sq);
  else
    imgstat_record_format_double(buf, size, ch->sum_sq);
}

/* ---- histogram fields (--histogram) ------------------------------------
 * Text: a second table after the record's; JSON: inside each channel's
 * object, after its last field; CSV: columns at the end of each row. */

/* Whether the record carries histogram figures to print. */
static int with_hist(const imgstat_record *rec) {
  return rec->hist && rec->hist->fields && rec->histograms && rec->hist_figures;
}

/* A histogram figure of the text table: an integer for u8/u16. */
static void hist_value(char *buf, size_t size, imgstat_sample s, double v) {
  if (s != IMGSTAT_F32)
    imgstat_number_snprintf(buf, size, "%.0f", v);
  else
    imgstat_number_snprintf(buf, size, "%.6g", v);
}

static void hist_text(FILE *out, const imgstat_record *rec) {
  const imgstat_record_hist *cfg = rec->hist;
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

static void hist_csv_header(FILE *out, const imgstat_record_hist *cfg) {
  fputs(",median", out);
  for (int i = 0; i < cfg->npercentiles; i++)
    imgstat_number_fprintf(out, ",p%g", cfg->percentiles[i]);
  fputs(",entropy,skewness,kurtosis", out);
}

void ist_record_hist_csv_number(FILE *out, int defined, double v) {
  char buf[40];
  putc(',', out);
  if (defined && isfinite(v)) {
    imgstat_record_format_double(buf, sizeof buf, v);
    fputs(buf, out);
  }
}

static void hist_csv(FILE *out, const imgstat_record *rec, int c) {
  const imgstat_record_hist *cfg = rec->hist;
  const imgstat_hist_figures *f = &rec->hist_figures[c];
  ist_record_hist_csv_number(out, f->has_values, f->median);
  for (int i = 0; i < cfg->npercentiles; i++)
    ist_record_hist_csv_number(out, f->has_values, f->percentile[i]);
  ist_record_hist_csv_number(out, f->has_values, f->entropy);
  ist_record_hist_csv_number(out, f->has_shape, f->skewness);
  ist_record_hist_csv_number(out, f->has_shape, f->kurtosis);
}

/* ---- JSON Lines -------------------------------------------------------------
 */

/* ---- the record's JSON shape, for any sink ------------------------------ */

/* A number that may be undefined (null). */
static void emit_real(const imgstat_record_sink *k, const char *key,
                      int defined, double v) {
  if (defined && isfinite(v))
    k->real(k->ctx, key, v);
  else
    k->null(k->ctx, key);
}

/* A figure: an exact integer for u8/u16 samples, else a double (null when
 * undefined). */
static void emit_value(const imgstat_record_sink *k, const char *key,
                       int defined, double v, imgstat_sample sample) {
  if (!defined)
    k->null(k->ctx, key);
  else if (sample != IMGSTAT_F32 && v >= 0 && v <= (double)UINT64_MAX)
    k->uint(k->ctx, key, (uint64_t)v);
  else
    k->real(k->ctx, key, v);
}

static void emit_uint_or_null(const imgstat_record_sink *k, const char *key,
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
void ist_record_emit_hist(const imgstat_record_sink *k,
                          const imgstat_record_hist *cfg,
                          const imgstat_hist_figures *f,
                          const imgstat_histogram *h, double scale, int shape) {
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

static void emit_channels(const imgstat_record *rec,
                          const imgstat_record_sink *k);
static void label_record(const imgstat_record *rec, uint32_t k,
                         imgstat_record *sub);

void imgstat_record_emit(const imgstat_record *rec,
                         const imgstat_record_sink *k) {
  k->open(k->ctx, NULL, 0);
  k->text(k->ctx, "file", rec->file);
  k->uint(k->ctx, "width", rec->width);
  k->uint(k->ctx, "height", rec->height);
  k->uint(k->ctx, "channels", (uint64_t)rec->channels);
  k->uint(k->ctx, "depth", (uint64_t)imgstat_sample_depth(rec->sample));
  if (rec->int16)
    k->text(k->ctx, "sample", "int16");
  k->text(k->ctx, "backend", rec->backend);
  if (rec->decoder)
    k->text(k->ctx, "decoder", rec->decoder);
  if (rec->pages) { /* a multi-page input: which page, of how many */
    k->uint(k->ctx, "page", rec->page);
    k->uint(k->ctx, "pages", rec->pages);
  }
  k->uint(k->ctx, "ddof", (uint64_t)rec->ddof);
  if (rec->masked)
    k->uint(k->ctx, "mask_pixels", rec->mask_pixels);
  emit_channels(rec, k);
  if (rec->has_labels) {
    k->open(k->ctx, "labels", 1);
    for (uint32_t j = 0; j < rec->nlabels; j++) {
      imgstat_record sub;
      label_record(rec, j, &sub);
      k->open(k->ctx, NULL, 0);
      k->uint(k->ctx, "label", rec->labels[j].label);
      k->uint(k->ctx, "pixels", rec->labels[j].pixels);
      emit_channels(&sub, k);
      k->close(k->ctx, 0);
    }
    k->close(k->ctx, 1);
  }
  if (rec->nwarnings) {
    k->open(k->ctx, "warnings", 1);
    for (int w = 0; w < rec->nwarnings; w++)
      k->text(k->ctx, NULL, rec->warnings[w]);
    k->close(k->ctx, 1);
  }
  k->close(k->ctx, 0);
}

/* "stats":[...]: one object per channel of rec. */
static void emit_channels(const imgstat_record *rec,
                          const imgstat_record_sink *k) {
  k->open(k->ctx, "stats", 1);
  for (int c = 0; c < rec->channels; c++) {
    rec_channel ch;
    channel_of(rec, c, &ch);
    const imgstat_figures *f = &ch.f;
    int v = f->has_values;
    k->open(k->ctx, NULL, 0);
    k->text(k->ctx, "channel",
            imgstat_colour_channel_name(rec->colour, rec->channels, c));
    const char *name = imgstat_band_name(rec->band_names, rec->channels, c);
    if (name[0])
      k->text(k->ctx, "name", name);
    k->uint(k->ctx, "count", f->count);
    emit_value(k, "min", v, f->min, rec->sample);
    emit_value(k, "max", v, f->max, rec->sample);
    emit_uint_or_null(k, "min_x", v, f->min_x);
    emit_uint_or_null(k, "min_y", v, f->min_y);
    emit_uint_or_null(k, "max_x", v, f->max_x);
    emit_uint_or_null(k, "max_y", v, f->max_y);
    /* The sum of no values is 0, which is a number, not a missing one. */
    if (f->sum_is_exact && rec->int16 && (int64_t)f->exact_sum < 0) {
      /* exact in a double: |sum| < 2^53 (at most 2^38 samples) */
      k->real(k->ctx, "sum", (double)(int64_t)f->exact_sum);
      k->uint(k->ctx, "sum_sq", ch.exact_sum_sq);
    } else if (f->sum_is_exact) {
      k->uint(k->ctx, "sum", f->exact_sum);
      k->uint(k->ctx, "sum_sq", ch.exact_sum_sq);
    } else {
      emit_real(k, "sum", 1, f->sum);
      emit_real(k, "sum_sq", 1, ch.sum_sq);
    }
    emit_real(k, "mean", v, f->mean);
    emit_real(k, "std", f->has_std, f->std);
    if (rec->sample == IMGSTAT_F32) {
      k->uint(k->ctx, "nan_count", f->nan_count);
      k->uint(k->ctx, "inf_count", f->inf_count);
    }
    if (rec->has_nodata)
      k->uint(k->ctx, "nodata_count", ch.nodata_count);
    if (with_hist(rec))
      ist_record_emit_hist(k, rec->hist, &rec->hist_figures[c],
                           &rec->histograms[c], 1, 1);
    k->close(k->ctx, 0);
  }
  k->close(k->ctx, 1);
}

static void json_item(ist_json_sink *j, const char *key) {
  if (j->depth > 0 && j->items[j->depth - 1]++)
    putc(',', j->out);
  if (key) {
    putc('"', j->out);
    fputs(key, j->out);
    fputs("\":", j->out);
  }
}

static void json_open(void *ctx, const char *key, int array) {
  ist_json_sink *j = ctx;
  json_item(j, key);
  putc(array ? '[' : '{', j->out);
  if (j->depth < 16)
    j->items[j->depth] = 0;
  j->depth++;
}

static void json_close(void *ctx, int array) {
  ist_json_sink *j = ctx;
  j->depth--;
  putc(array ? ']' : '}', j->out);
}

static void json_uint(void *ctx, const char *key, uint64_t v) {
  ist_json_sink *j = ctx;
  char buf[24];
  json_item(j, key);
  fwrite(buf, 1, ist_record_format_uint(buf, v), j->out);
}

static void json_real(void *ctx, const char *key, double v) {
  ist_json_sink *j = ctx;
  char buf[40];
  json_item(j, key);
  imgstat_record_format_double(buf, sizeof buf, v);
  fputs(buf, j->out);
}

static void json_text(void *ctx, const char *key, const char *s) {
  ist_json_sink *j = ctx;
  json_item(j, key);
  imgstat_record_json_string(j->out, s);
}

static void json_null(void *ctx, const char *key) {
  ist_json_sink *j = ctx;
  json_item(j, key);
  fputs("null", j->out);
}

imgstat_record_sink ist_record_json_sink_of(ist_json_sink *j) {
  const imgstat_record_sink k = {j,         json_open, json_close, json_uint,
                                 json_real, json_text, json_null};
  return k;
}

static void json_record(FILE *out, const imgstat_record *rec) {
  ist_json_sink j;
  memset(&j, 0, sizeof j);
  j.out = out;
  const imgstat_record_sink k = ist_record_json_sink_of(&j);
  imgstat_record_emit(rec, &k);
  putc('\n', out);
}

/* ---- CSV -------------------------------------------------------------------
 */

const char ist_record_csv_header[] =
    "file,width,height,channels,depth,backend,ddof,channel,count,min,max,"
    "min_x,min_y,max_x,max_y,sum,sum_sq,mean,std,nan_count,inf_count\n";

void ist_record_csv_field(FILE *out, int defined, const char *text) {
  putc(',', out);
  if (defined)
    fputs(text, out);
}

/* The rows of rec's channels; label: rec is label k's record (the
 * label's number in the label column, its pixels in mask_pixels), or
 * NULL. */
static void csv_rows(FILE *out, const imgstat_record *rec,
                     const imgstat_job_label *label) {
  char buf[64];
  for (int c = 0; c < rec->channels; c++) {
    rec_channel ch;
    channel_of(rec, c, &ch);
    const imgstat_figures *f = &ch.f;
    int v = f->has_values;
    ist_record_csv_string(out, rec->file);
    fprintf(out, ",%" PRIu32 ",%" PRIu32 ",%d,%d,%s,%d,%s,%" PRIu64, rec->width,
            rec->height, rec->channels, imgstat_sample_depth(rec->sample),
            rec->backend, rec->ddof,
            imgstat_colour_channel_name(rec->colour, rec->channels, c),
            f->count);
    format_value(buf, sizeof buf, f->min, rec->sample);
    ist_record_csv_field(out, v, buf);
    format_value(buf, sizeof buf, f->max, rec->sample);
    ist_record_csv_field(out, v, buf);
    snprintf(buf, sizeof buf, "%" PRIu32, f->min_x);
    ist_record_csv_field(out, v, buf);
    snprintf(buf, sizeof buf, "%" PRIu32, f->min_y);
    ist_record_csv_field(out, v, buf);
    snprintf(buf, sizeof buf, "%" PRIu32, f->max_x);
    ist_record_csv_field(out, v, buf);
    snprintf(buf, sizeof buf, "%" PRIu32, f->max_y);
    ist_record_csv_field(out, v, buf);
    format_sum(buf, sizeof buf, rec, f);
    ist_record_csv_field(out, isfinite(f->sum) || f->sum_is_exact, buf);
    format_sum_sq(buf, sizeof buf, &ch);
    ist_record_csv_field(out, isfinite(ch.sum_sq) || f->sum_is_exact, buf);
    imgstat_record_format_double(buf, sizeof buf, f->mean);
    ist_record_csv_field(out, v && isfinite(f->mean), buf);
    imgstat_record_format_double(buf, sizeof buf, f->std);
    ist_record_csv_field(out, f->has_std && isfinite(f->std), buf);
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
    putc(',', out);
    if (rec->has_nodata)
      fprintf(out, "%" PRIu64, nodata_of(rec, c));
    putc(',', out);
    if (label)
      fprintf(out, "%" PRIu64 ",%" PRIu32, label->pixels, label->label);
    else if (rec->masked)
      fprintf(out, "%" PRIu64 ",", rec->mask_pixels);
    else
      putc(',', out);
    if (rec->error_column)
      putc(',', out);
    putc('\n', out);
  }
}

static void csv_record(FILE *out, const imgstat_record *rec) {
  csv_rows(out, rec, NULL);
  for (uint32_t j = 0; rec->has_labels && j < rec->nlabels; j++) {
    imgstat_record sub;
    label_record(rec, j, &sub);
    csv_rows(out, &sub, &rec->labels[j]);
  }
}

/* ---- text -------------------------------------------------------------------
 */

enum { TEXT_COLUMNS = 10, TEXT_CELL = 48, TEXT_MAX_DECIMALS = 8 };

typedef char text_row[TEXT_COLUMNS][TEXT_CELL];

/* Over IMGSTAT_INLINE_CHANNELS channels, the nodata counts are a column of
 * the table (one row a band) instead of a line after it. */
static int nodata_column(const imgstat_record *rec) {
  return rec->has_nodata && rec->channels > IMGSTAT_INLINE_CHANNELS;
}

/* Rows for the text cells of rec: *stack when they fit there, else the heap
 * (NULL: out of memory). */
static text_row *text_rows(const imgstat_record *rec,
                           text_row stack[IMGSTAT_INLINE_CHANNELS]) {
  if (rec->channels <= IMGSTAT_INLINE_CHANNELS)
    return stack;
  return malloc((size_t)rec->channels * sizeof(text_row));
}

void ist_float_column_add(ist_float_column *col, double v) {
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

void ist_float_column_format(const ist_float_column *col, char *buf,
                             size_t size, double v) {
  if (col->exponent)
    imgstat_number_snprintf(buf, size, "%.5e", v);
  else
    imgstat_number_snprintf(buf, size, "%.*f",
                            col->decimals < 4 ? 4 : col->decimals, v);
}

/* The cells of the text table of rec (its figures as the table and the
 * one-line form print them); returns how many columns to show. */
static int text_cells(const imgstat_record *rec, text_row *cells) {
  int is_float = rec->sample == IMGSTAT_F32;
  int columns = 7;
  ist_float_column col[5]; /* min, max, mean, std of float images */
  memset(col, 0, sizeof col);

  for (int c = 0; c < rec->channels; c++) {
    rec_channel ch;
    channel_of(rec, c, &ch);
    const imgstat_figures *f = &ch.f;
    if (f->nan_count || f->inf_count)
      columns = 9; /* show the counts only where there is something */
    if (f->has_values) {
      ist_float_column_add(&col[1], f->min); /* min and max: one format */
      ist_float_column_add(&col[1], f->max);
      ist_float_column_add(&col[3], f->mean);
    }
    if (f->has_std)
      ist_float_column_add(&col[4], f->std);
  }

  for (int c = 0; c < rec->channels; c++) {
    rec_channel ch;
    channel_of(rec, c, &ch);
    const imgstat_figures *f = &ch.f;
    char(*cell)[TEXT_CELL] = cells[c];
    const char *name = imgstat_band_name(rec->band_names, rec->channels, c);
    snprintf(cell[0], TEXT_CELL, "%s%s%s",
             imgstat_colour_channel_name(rec->colour, rec->channels, c),
             name[0] ? " " : "", name);
    if (!f->has_values) {
      for (int k = 1; k <= 6; k++)
        if (k != 4)
          strcpy(cell[k], "-");
    } else {
      if (is_float) {
        ist_float_column_format(&col[1], cell[1], TEXT_CELL, f->min);
        ist_float_column_format(&col[1], cell[2], TEXT_CELL, f->max);
        ist_float_column_format(&col[3], cell[3], TEXT_CELL, f->mean);
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
      ist_float_column_format(&col[4], cell[4], TEXT_CELL, f->std);
    else
      imgstat_number_snprintf(cell[4], TEXT_CELL, "%.4f", f->std);
    snprintf(cell[7], TEXT_CELL, "%" PRIu64, f->nan_count);
    snprintf(cell[8], TEXT_CELL, "%" PRIu64, f->inf_count);
    snprintf(cell[9], TEXT_CELL, "%" PRIu64, ch.nodata_count);
  }
  return nodata_column(rec) ? 10 : columns;
}

/* The header line of an image: file, size, layout, depth, backend. */
static void text_header(FILE *out, const imgstat_record *rec) {
  imgstat_record_escape(out, rec->file, IMGSTAT_ESCAPE_TEXT);
  fprintf(out, "  %" PRIu32 "x%" PRIu32 "  %s  %d-bit%s  backend=%s",
          rec->width, rec->height,
          imgstat_colour_layout_name(rec->colour, rec->channels),
          imgstat_sample_depth(rec->sample),
          rec->sample == IMGSTAT_F32 ? " float"
          : rec->int16               ? " signed"
                                     : "",
          rec->backend);
}

/* The valid samples' lines after the table: the pixels inside the mask,
 * the nodata samples left out of each channel. */
static void valid_text(FILE *out, const imgstat_record *rec) {
  if (rec->masked)
    fprintf(out, "mask: %" PRIu64 " of %" PRIu64 " pixels inside\n",
            rec->mask_pixels, (uint64_t)rec->width * rec->height);
  if (!rec->has_nodata || nodata_column(rec))
    return;
  fputs("nodata:", out);
  for (int c = 0; c < rec->channels; c++)
    fprintf(out, " %s %" PRIu64,
            imgstat_colour_channel_name(rec->colour, rec->channels, c),
            nodata_of(rec, c));
  putc('\n', out);
}

static void text_table(FILE *out, const imgstat_record *rec);

static void text_record(FILE *out, const imgstat_record *rec,
                        unsigned long index) {
  /* The std column says which one it is: numpy's (N) or vips' (N-1); the
   * positions are those of the first minimum and maximum in raster order
   * (the hot pixel). */
  if (index > 0)
    putc('\n', out);
  text_header(out, rec);
  /* rows as the file stores them (docs/formats.md): DS9 and vips stats
   * number them from the bottom */
  if (rec->format && strcmp(rec->format, "FITS") == 0)
    fputs("  (FITS: rows as stored, row 0 first; DS9 shows y flipped)", out);
  putc('\n', out);
  if (rec->pages)
    fprintf(out, "page %" PRIu32 " of %" PRIu32 "\n", rec->page, rec->pages);
  for (int k = 0; k < rec->nwarnings; k++) {
    fputs("warning: ", out);
    imgstat_record_escape(out, rec->warnings[k], IMGSTAT_ESCAPE_TEXT);
    putc('\n', out);
  }
  text_table(out, rec);
  for (uint32_t j = 0; rec->has_labels && j < rec->nlabels; j++) {
    imgstat_record sub;
    label_record(rec, j, &sub);
    fprintf(out, "label %" PRIu32 ": %" PRIu64 " pixel%s\n",
            rec->labels[j].label, rec->labels[j].pixels,
            rec->labels[j].pixels == 1 ? "" : "s");
    text_table(out, &sub);
  }
  if (rec->has_labels && rec->nlabels == 0)
    fputs("labels: none\n", out);
}

/* The table of rec's channels, its valid samples' lines, its histogram
 * table. */
static void text_table(FILE *out, const imgstat_record *rec) {
  const char *const heads[TEXT_COLUMNS] = {
      "channel", "min",    "max", "mean", rec->ddof ? "std (N-1)" : "std (N)",
      "min at",  "max at", "nan", "inf",  "nodata"};
  text_row stack[IMGSTAT_INLINE_CHANNELS];
  text_row *cells = text_rows(rec, stack);
  if (!cells) {
    fputs("(out of memory for the table)\n", out);
    return;
  }
  int width[TEXT_COLUMNS] = {0};
  int columns = text_cells(rec, cells);

  for (int k = 0; k < columns; k++) {
    width[k] = (int)strlen(heads[k]);
    for (int c = 0; c < rec->channels; c++) {
      int len = (int)strlen(cells[c][k]);
      if (len > width[k])
        width[k] = len;
    }
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
  if (cells != stack)
    free(cells);
  valid_text(out, rec);
  if (with_hist(rec))
    hist_text(out, rec);
}

/* --brief: one line per image, the header and then, for mean, std, min and
 * max, each channel's figure (the table's numbers; NaN/Inf counts when
 * there are any); then with a nodata value each channel's nodata count,
 * with a mask the pixels inside ("mask P/N"), with a label image the
 * number of labels (their figures are in the other formats). */
static void brief_record(FILE *out, const imgstat_record *rec) {
  text_row stack[IMGSTAT_INLINE_CHANNELS];
  text_row *cells = text_rows(rec, stack);
  if (!cells) {
    fputs("(out of memory for the line)\n", out);
    return;
  }
  int columns = text_cells(rec, cells);
  columns = columns > 9 ? 9 : columns;
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
  if (rec->has_nodata) {
    fputs("  nodata", out);
    for (int c = 0; c < rec->channels; c++)
      fprintf(out, " %" PRIu64, nodata_of(rec, c));
  }
  if (rec->masked)
    fprintf(out, "  mask %" PRIu64 "/%" PRIu64, rec->mask_pixels,
            (uint64_t)rec->width * rec->height);
  if (rec->has_labels)
    fprintf(out, "  labels %" PRIu32, rec->nlabels);
  putc('\n', out);
  if (cells != stack)
    free(cells);
}

/* ---- entry points ---------------------------------------------------------
 */

void imgstat_record_begin(FILE *out, imgstat_record_format format,
                          const imgstat_record_hist *hist, int error_column) {
  if (format != IMGSTAT_RECORD_CSV)
    return;
  /* The header without its line end, so that histogram columns can follow. */
  fwrite(ist_record_csv_header, 1, sizeof ist_record_csv_header - 2, out);
  if (hist && hist->fields)
    hist_csv_header(out, hist);
  if (hist && hist->dataset_columns)
    fputs(IST_CSV_DATASET_COLUMNS, out);
  if (hist && hist->decoder_column)
    fputs(",decoder", out);
  fputs(IST_CSV_VALID_COLUMNS, out);
  if (error_column)
    fputs(",error", out);
  putc('\n', out);
}

void imgstat_record_write_error(FILE *out, imgstat_record_format format,
                                const char *file, const char *message,
                                const imgstat_record_hist *hist) {
  if (format == IMGSTAT_RECORD_JSON) {
    fputs("{\"file\":", out);
    imgstat_record_json_string(out, file);
    fputs(",\"error\":", out);
    imgstat_record_json_string(out, message);
    fputs("}\n", out);
  } else if (format == IMGSTAT_RECORD_CSV) {
    ist_record_csv_string(out, file);
    /* the empty columns from width to inf_count, then the histogram's */
    int empty = 0;
    for (const char *p = ist_record_csv_header; *p; p++)
      empty += *p == ',';
    if (hist && hist->fields)
      empty += 4 + hist->npercentiles;
    if (hist && hist->dataset_columns)
      empty += 5;
    if (hist && hist->decoder_column)
      empty += 1;
    empty += 3; /* IST_CSV_VALID_COLUMNS */
    for (int k = 0; k < empty; k++)
      putc(',', out);
    putc(',', out);
    ist_record_csv_string(out, message);
    putc('\n', out);
  }
}

void imgstat_record_write(FILE *out, imgstat_record_format format,
                          const imgstat_record *rec, unsigned long index) {
  switch (format) {
  case IMGSTAT_RECORD_JSON:
    json_record(out, rec);
    break;
  case IMGSTAT_RECORD_CSV:
    csv_record(out, rec);
    break;
  case IMGSTAT_RECORD_TEXT:
    text_record(out, rec, index);
    break;
  case IMGSTAT_RECORD_BRIEF:
    brief_record(out, rec);
    break;
  }
}

/* ---- the dataset record (--dataset) ----------------------------------------
 */

/* rec's figures and sums of squares from one partial per channel (rec's
 * channels, sample, width and ddof set). */
/* The figures of rec's channels from their partials (and nodata counts):
 * computed here up to IMGSTAT_INLINE_CHANNELS channels, else borrowed and
 * computed as they are written. */
static void record_figures(imgstat_record *rec, const imgstat_partial *part,
                           const uint64_t *nodata_count) {
  if (rec->channels > IMGSTAT_INLINE_CHANNELS) {
    rec->wide_partial = part;
    rec->wide_nodata_count = nodata_count;
    return;
  }
  rec->wide_partial = NULL;
  rec->wide_nodata_count = NULL;
  for (int c = 0; c < rec->channels; c++) {
    channel_from_partial(&part[c], rec->sample, rec->width, rec->ddof,
                         &rec->figures[c], &rec->exact_sum_sq[c],
                         &rec->sum_sq[c]);
    rec->nodata_count[c] = nodata_count[c];
  }
}

/* An int16 channel's figures f (of its partial p) taken back from the
 * stored samples (the value + 32768) to the values, exactly: min, max and
 * mean shifted (the mean the double nearest to the signed sum over the
 * count), the sum (two's complement in exact_sum) and the sum of squares
 * sum (s - 32768)^2 = sumsq - 65536 sum + 2^30 count, exact modulo 2^64
 * and so exact while the true value is below 2^64 (at most 2^34 samples;
 * an image has at most 2^32); std is the same. */
static void int16_figures(const imgstat_partial *p, imgstat_figures *f,
                          uint64_t *exact_sum_sq, double *sum_sq) {
  const double off = IMGSTAT_INT16_OFFSET;
  uint64_t shift = (uint64_t)IMGSTAT_INT16_OFFSET * p->count;
  f->exact_sum = p->sum - shift;
  f->sum = (double)(int64_t)f->exact_sum;
  *exact_sum_sq = p->sumsq - 2 * (uint64_t)IMGSTAT_INT16_OFFSET * p->sum +
                  (uint64_t)IMGSTAT_INT16_OFFSET * shift;
  *sum_sq = (double)*exact_sum_sq;
  if (f->has_values) {
    f->min -= off;
    f->max -= off;
    f->mean = (double)(int64_t)f->exact_sum / (double)p->count;
  }
}

/* An int16 record taken back to the values: the figures of its channels
 * (int16_figures; a record of more than IMGSTAT_INLINE_CHANNELS channels
 * has them computed and shifted as they are written, channel_of), and its
 * histograms and their figures as copies with the values shifted (the
 * counts borrowed). */
static void record_int16(imgstat_record *rec, const imgstat_partial *part) {
  if (!rec->int16)
    return;
  const double off = IMGSTAT_INT16_OFFSET;
  for (int c = 0; c < rec->channels; c++) {
    if (!rec->wide_partial)
      int16_figures(&part[c], &rec->figures[c], &rec->exact_sum_sq[c],
                    &rec->sum_sq[c]);
    if (rec->histograms && rec->hist_figures) {
      imgstat_histogram *h = &rec->int16_hist[c];
      imgstat_hist_figures *hf = &rec->int16_hist_figures[c];
      *h = rec->histograms[c];
      h->lo -= off;
      h->hi -= off;
      *hf = rec->hist_figures[c];
      hf->median -= off;
      for (int i = 0; i < hf->npercentiles && i < IMGSTAT_MAX_PERCENTILES; i++)
        hf->percentile[i] -= off;
    }
  }
  if (rec->histograms && rec->hist_figures) {
    rec->histograms = rec->int16_hist;
    rec->hist_figures = rec->int16_hist_figures;
  }
}

/* A record's int16 copies of histograms and their figures, bytes
 * [INT16_FROM, INT16_TO): IMGSTAT_MAX_CHANNELS of each, nearly all of its
 * 370 KB. record_int16 fills them for the record's channels when it has
 * histograms, and nothing else reads them: they are neither cleared nor
 * copied with the other fields (once an image and a label on the printing
 * thread). */
#define INT16_FROM offsetof(imgstat_record, int16_hist)
#define INT16_TO                                                               \
  (offsetof(imgstat_record, int16_hist_figures) +                              \
   sizeof(((imgstat_record *)0)->int16_hist_figures))
_Static_assert(offsetof(imgstat_record, int16_hist_figures) ==
                   INT16_FROM + sizeof(((imgstat_record *)0)->int16_hist),
               "the int16 copies are adjacent");

/* *rec zeroed but for its int16 copies. */
static void record_clear(imgstat_record *rec) {
  memset(rec, 0, INT16_FROM);
  memset((char *)rec + INT16_TO, 0, sizeof *rec - INT16_TO);
}

/* *sub = *rec but for the int16 copies. */
static void record_copy(imgstat_record *sub, const imgstat_record *rec) {
  memcpy(sub, rec, INT16_FROM);
  memcpy((char *)sub + INT16_TO, (const char *)rec + INT16_TO,
         sizeof *sub - INT16_TO);
}

/* The record of label k of rec: rec's own fields with the label's
 * figures, nodata counts and histograms, no mask and no labels. */
static void label_record(const imgstat_record *rec, uint32_t k,
                         imgstat_record *sub) {
  const imgstat_job_label *l = &rec->labels[k];
  record_copy(sub, rec);
  sub->has_labels = 0;
  sub->masked = 0;
  sub->nwarnings = 0;
  record_figures(sub, IMGSTAT_JOB_CH(l, partial),
                 IMGSTAT_JOB_CH(l, nodata_count));
  if (rec->histograms) {
    sub->histograms = IMGSTAT_JOB_CH(l, hist);
    sub->hist_figures = IMGSTAT_JOB_CH(l, hist_figures);
  }
  record_int16(sub, IMGSTAT_JOB_CH(l, partial));
}

void imgstat_record_from_job(imgstat_record *rec, const char *file,
                             const imgstat_job_result *res, int ddof,
                             const imgstat_record_hist *hist, int jpeg_gpu) {
  record_clear(rec);
  rec->file = file;
  rec->width = res->width;
  rec->height = res->height;
  rec->channels = res->channels;
  rec->colour = res->colour;
  rec->sample = res->sample;
  rec->int16 = res->int16 && res->sample == IMGSTAT_U16;
  rec->pages = res->pages;
  rec->page = res->page;
  rec->backend = imgstat_backend_name(res->backend);
  rec->format = res->format;
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
        rec->nwarnings < IMGSTAT_RECORD_MAX_WARNINGS)
      rec->warnings[rec->nwarnings++] = res->warning[k].text;
  record_figures(rec, IMGSTAT_JOB_CH(res, partial),
                 IMGSTAT_JOB_CH(res, nodata_count));
  rec->has_nodata = res->has_nodata;
  rec->band_names = res->band_names;
  rec->masked = res->masked;
  rec->mask_pixels = res->mask_pixels;
  rec->has_labels = res->has_labels;
  rec->nlabels = res->nlabels;
  rec->labels = res->labels;
  if (res->has_histograms && hist) {
    rec->hist = hist;
    rec->histograms = IMGSTAT_JOB_CH(res, hist);
    rec->hist_figures = IMGSTAT_JOB_CH(res, hist_figures);
  }
  record_int16(rec, IMGSTAT_JOB_CH(res, partial));
}
