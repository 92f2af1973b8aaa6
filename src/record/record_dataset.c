/* The dataset record (--dataset) in each format, and the figures of its
 * pooled histograms. */
#include "imgstat/record.h"
#include "record_parts.h"

#include <inttypes.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

/* A pooled value: an integer for unscaled integer samples, else round-trip
 * digits. */
static void ds_value(char *buf, size_t size, const imgstat_dataset_result *r,
                     double v) {
  if (!r->scale_unit && !(r->depths & 4) && v >= 0)
    imgstat_number_snprintf(buf, size, "%.0f", v);
  else
    imgstat_record_format_double(buf, size, v);
}

static void ds_sum(char *buf, size_t size, const imgstat_dataset_channel *c,
                   int sq) {
  if (c->sums_exact)
    snprintf(buf, size, "%s", sq ? c->sum_sq_text : c->sum_text);
  else
    imgstat_record_format_double(buf, size, sq ? c->sum_sq : c->sum);
}

static int ds_depth(const imgstat_dataset_result *r) {
  return r->depths == 1   ? 8
         : r->depths == 2 ? 16
         : r->depths == 4 ? 32
         : r->depths == 8 ? 16 /* int16 */
                          : 0;
}

/* The bits of depth index k (int16, index 3: 16). */
static int ds_bits(int k) { return k == 3 ? 16 : 8 << k; }

static void ds_hist_json(FILE *out, const imgstat_record_hist *cfg,
                         const imgstat_dataset_result *r, int c,
                         const imgstat_hist_figures *f) {
  /* inside the channel's object, after its first items */
  ist_json_sink j;
  memset(&j, 0, sizeof j);
  j.out = out;
  j.depth = 1;
  j.items[0] = 1;
  const imgstat_record_sink k = ist_record_json_sink_of(&j);
  ist_record_emit_hist(&k, cfg, f, &r->ch[c].hist, r->hist_scale, 0);
}

static void ds_notes_json(FILE *out, const char *key,
                          const imgstat_dataset_note *n, size_t count) {
  fprintf(out, ",\"%s\":[", key);
  for (size_t i = 0; i < count; i++) {
    fputs(i ? ",{\"file\":" : "{\"file\":", out);
    imgstat_record_json_string(out, n[i].file);
    fputs(",\"reason\":", out);
    imgstat_record_json_string(out, n[i].reason);
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
    imgstat_record_json_string(out, at->file);
  else
    fputs("null", out);
  snprintf(name, sizeof name, "%s_x", key);
  snprintf(buf, sizeof buf, "%" PRIu32, at->x);
  json_number_or_null(out, name, v, buf);
  snprintf(name, sizeof name, "%s_y", key);
  snprintf(buf, sizeof buf, "%" PRIu32, at->y);
  json_number_or_null(out, name, v, buf);
}

/* The text's constants: the --emit forms asked for, "FORM: TEXT" each
 * (a form r cannot give is left out: the front end says why), else
 * torchvision's Normalize line with scale_unit. */
static void ds_emit_text(FILE *out, const imgstat_dataset_result *r,
                         const imgstat_record_hist *cfg) {
  char line[IMGSTAT_EMIT_MAX];
  unsigned mask = cfg ? cfg->dataset_emit : 0;
  if (!mask) {
    if (imgstat_dataset_emit(r, IMGSTAT_EMIT_TORCHVISION, line, sizeof line,
                             NULL) == IMGSTAT_OK)
      fprintf(out, "%s\n", line);
    return;
  }
  for (int k = 0; k < IMGSTAT_EMIT_COUNT; k++)
    if (mask & (1u << k) &&
        imgstat_dataset_emit(r, (imgstat_emit)k, line, sizeof line, NULL) ==
            IMGSTAT_OK)
      fprintf(out, "%s: %s\n", imgstat_emit_name((imgstat_emit)k), line);
}

/* ,"emit":{"FORM":"TEXT"|null,...} of the forms asked for. */
static void ds_emit_json(FILE *out, const imgstat_dataset_result *r,
                         const imgstat_record_hist *cfg) {
  char line[IMGSTAT_EMIT_MAX];
  unsigned mask = cfg ? cfg->dataset_emit : 0;
  if (!mask)
    return;
  fputs(",\"emit\":{", out);
  for (int k = 0, first = 1; k < IMGSTAT_EMIT_COUNT; k++) {
    if (!(mask & (1u << k)))
      continue;
    fprintf(out, "%s\"%s\":", first ? "" : ",",
            imgstat_emit_name((imgstat_emit)k));
    first = 0;
    if (imgstat_dataset_emit(r, (imgstat_emit)k, line, sizeof line, NULL) ==
        IMGSTAT_OK)
      imgstat_record_json_string(out, line);
    else
      fputs("null", out);
  }
  putc('}', out);
}

/* The inputs a --sample run read: min(asked, of). */
static uint64_t ds_sample_taken(const imgstat_dataset_result *r) {
  return r->sample < r->sample_of ? r->sample : r->sample_of;
}

/* The note beside the constants when 16-bit images were pooled (text and
 * JSON "depth_note"): Pillow's convert('RGB') clips 16-bit gray (mode I;16)
 * to 0..255. 0 when there is none, or when the pool holds bands (no
 * Pillow mode). */
static int ds_depth_note(char *buf, size_t size,
                         const imgstat_dataset_result *r) {
  uint64_t n = r->pooled_depth[1];
  if (!n || r->channels > 4)
    return 0;
  snprintf(buf, size,
           "%" PRIu64 " 16-bit image%s pooled, scaled by 65535; a loader using "
           "Pillow's convert('RGB') clips 16-bit gray to 0..255, so its "
           "constants differ",
           n, n == 1 ? "" : "s");
  return 1;
}

/* ,"layout_rule":"as"|"majority"|"tie","layout_counts":[...] and, for a
 * sampled run, ,"sample":{...}. */
static void ds_rule_json(FILE *out, const imgstat_dataset_result *r) {
  fprintf(out, ",\"layout_rule\":\"%s\",\"layout_counts\":[",
          r->as != IMGSTAT_AS_KEEP ? "as"
          : r->layout_tie          ? "tie"
                                   : "majority");
  for (int l = 1, first = 1; l < r->nlayout_count; l++)
    for (int k = 0; k < 4; k++) {
      if (!r->layout_count[l][k])
        continue;
      fprintf(out, "%s{\"layout\":", first ? "" : ",");
      imgstat_record_json_string(out, imgstat_layout_name(l));
      if (r->scale_unit)
        fputs(",\"depth\":null", out);
      else
        fprintf(out, ",\"depth\":%d%s", ds_bits(k),
                k == 3 ? ",\"sample\":\"int16\"" : "");
      fprintf(out, ",\"images\":%" PRIu64 "}", r->layout_count[l][k]);
      first = 0;
    }
  putc(']', out);
  if (r->sample)
    fprintf(out,
            ",\"sample\":{\"asked\":%" PRIu64 ",\"taken\":%" PRIu64
            ",\"of\":%" PRIu64 ",\"seed\":%" PRIu64 "}",
            r->sample, ds_sample_taken(r), r->sample_of, r->sample_seed);
}

/* The "stats" array of r's channels (hf: their histograms' figures, NULL:
 * none). */
static void ds_stats_json(FILE *out, const imgstat_dataset_result *r,
                          const imgstat_record_hist *cfg,
                          const imgstat_hist_figures *hf) {
  char buf[64];
  fputs(",\"stats\":[", out);
  for (int c = 0; c < r->channels; c++) {
    const imgstat_dataset_channel *d = &r->ch[c];
    int v = d->has_values;
    fputs(c ? ",{\"channel\":" : "{\"channel\":", out);
    imgstat_record_json_string(out, imgstat_channel_name(r->channels, c));
    fprintf(out, ",\"count\":%" PRIu64, d->count);
    json_extremum(out, r, "min", v, d->min, &d->min_at);
    json_extremum(out, r, "max", v, d->max, &d->max_at);
    ds_sum(buf, sizeof buf, d, 0);
    json_number_or_null(out, "sum", 1, buf);
    ds_sum(buf, sizeof buf, d, 1);
    json_number_or_null(out, "sum_sq", 1, buf);
    imgstat_record_format_double(buf, sizeof buf, d->mean);
    json_number_or_null(out, "mean", v && isfinite(d->mean), buf);
    imgstat_record_format_double(buf, sizeof buf, d->std);
    json_number_or_null(out, "std", d->has_std && isfinite(d->std), buf);
    if (r->depths & 4)
      fprintf(out, ",\"nan_count\":%" PRIu64 ",\"inf_count\":%" PRIu64,
              d->nan_count, d->inf_count);
    if (hf && d->has_histogram)
      ds_hist_json(out, cfg, r, c, &hf[c]);
    putc('}', out);
  }
  putc(']', out);
}

/* The labels' pools: "labels":[{"label":L,"images":N,"stats":[...]}] (with
 * hist, each one's histogram figures as the dataset's own). */
static void ds_labels_json(FILE *out, const imgstat_dataset_result *r,
                           const imgstat_record_hist *cfg, int hist) {
  if (r->nlabels == 0)
    return;
  imgstat_hist_figures *hf =
      hist ? malloc(sizeof *hf * IMGSTAT_MAX_CHANNELS) : NULL;
  fputs(",\"labels\":[", out);
  for (size_t k = 0; k < r->nlabels; k++) {
    const imgstat_dataset_result *l = r->labels[k].pool;
    fprintf(out, "%s{\"label\":%" PRIu32 ",\"images\":%" PRIu64, k ? "," : "",
            r->labels[k].label, l->pooled);
    if (hf)
      imgstat_dataset_hist_figures(l, cfg->percentiles, cfg->npercentiles, hf);
    ds_stats_json(out, l, cfg, hf);
    putc('}', out);
  }
  putc(']', out);
  free(hf);
}

static void ds_json(FILE *out, const imgstat_dataset_result *r,
                    const imgstat_record_hist *cfg,
                    const imgstat_hist_figures *hf) {
  char buf[64];
  fprintf(out,
          "{\"dataset\":{\"images\":%" PRIu64 ",\"pooled\":%" PRIu64
          ",\"failed\":%" PRIu64 ",\"layout\":",
          r->images, r->pooled, r->failed);
  if (r->channels)
    imgstat_record_json_string(out, imgstat_layout_name(r->channels));
  else
    fputs("null", out);
  fprintf(out, ",\"channels\":%d,\"depth\":", r->channels);
  if (ds_depth(r))
    fprintf(out, "%d", ds_depth(r));
  else
    fputs("null", out);
  if (r->depths == 8)
    fputs(",\"sample\":\"int16\"", out);
  fputs(",\"depths\":[", out);
  for (int k = 0, first = 1; k < 4; k++)
    if (r->depths & (1 << k)) {
      fprintf(out, "%s%d", first ? "" : ",", ds_bits(k));
      first = 0;
    }
  fprintf(out, "],\"as\":\"%s\",\"scale\":\"%s\",\"ddof\":%d",
          imgstat_dataset_as_name(r->as), r->scale_unit ? "unit" : "none",
          r->ddof);
  ds_rule_json(out, r);
  char note[192];
  if (ds_depth_note(note, sizeof note, r)) {
    fputs(",\"depth_note\":", out);
    imgstat_record_json_string(out, note);
  }
  ds_stats_json(out, r, cfg, hf);
  ds_labels_json(out, r, cfg, hf != NULL);
  if (hf && r->histogram_note[0]) {
    fputs(",\"histogram_note\":", out);
    imgstat_record_json_string(out, r->histogram_note);
  }
  ds_notes_json(out, "excluded", r->excluded, r->nexcluded);
  fputs(",\"outlier_z\":", out);
  imgstat_record_format_double(buf, sizeof buf, r->outlier_z);
  fputs(buf, out);
  ds_notes_json(out, "outliers", r->outliers, r->noutliers);
  ds_emit_json(out, r, cfg);
  fputs("}}\n", out);
}

static void ds_csv_tail(FILE *out, const imgstat_record_hist *cfg,
                        int error_column) {
  if (cfg && cfg->decoder_column)
    putc(',', out);
  fputs(",,,", out); /* nodata_count, mask_pixels, label */
  if (error_column)
    putc(',', out);
  putc('\n', out);
}

static void ds_csv(FILE *out, const imgstat_dataset_result *r,
                   const imgstat_record_hist *cfg,
                   const imgstat_hist_figures *hf, int error_column) {
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
    ist_record_csv_field(out, v, buf);
    ds_value(buf, sizeof buf, r, d->max);
    ist_record_csv_field(out, v, buf);
    snprintf(buf, sizeof buf, "%" PRIu32, d->min_at.x);
    ist_record_csv_field(out, v, buf);
    snprintf(buf, sizeof buf, "%" PRIu32, d->min_at.y);
    ist_record_csv_field(out, v, buf);
    snprintf(buf, sizeof buf, "%" PRIu32, d->max_at.x);
    ist_record_csv_field(out, v, buf);
    snprintf(buf, sizeof buf, "%" PRIu32, d->max_at.y);
    ist_record_csv_field(out, v, buf);
    ds_sum(buf, sizeof buf, d, 0);
    ist_record_csv_field(out, 1, buf);
    ds_sum(buf, sizeof buf, d, 1);
    ist_record_csv_field(out, 1, buf);
    imgstat_record_format_double(buf, sizeof buf, d->mean);
    ist_record_csv_field(out, v, buf);
    imgstat_record_format_double(buf, sizeof buf, d->std);
    ist_record_csv_field(out, d->has_std && isfinite(d->std), buf);
    fprintf(out, ",%" PRIu64 ",%" PRIu64, d->nan_count, d->inf_count);
    if (nhist && hf && d->has_histogram) {
      imgstat_hist_figures f = hf[c];
      f.median *= r->hist_scale;
      for (int i = 0; i < f.npercentiles; i++)
        f.percentile[i] *= r->hist_scale;
      ist_record_hist_csv_number(out, f.has_values, f.median);
      for (int i = 0; i < cfg->npercentiles; i++)
        ist_record_hist_csv_number(out, f.has_values, f.percentile[i]);
      ist_record_hist_csv_number(out, f.has_values, f.entropy);
      fputs(",,", out); /* no skewness / kurtosis for the pool */
    } else {
      for (int k = 0; k < nhist; k++)
        putc(',', out);
    }
    fprintf(out, ",%" PRIu64 ",%" PRIu64 ",", r->images, r->failed);
    if (v)
      ist_record_csv_string(out, d->min_at.file);
    putc(',', out);
    if (v)
      ist_record_csv_string(out, d->max_at.file);
    putc(',', out);
    ds_csv_tail(out, cfg, error_column);
  }
  for (int pass = 0; pass < 2; pass++) {
    const imgstat_dataset_note *n = pass ? r->outliers : r->excluded;
    size_t count = pass ? r->noutliers : r->nexcluded;
    int empty = 0;
    for (const char *p = ist_record_csv_header; *p; p++)
      empty += *p == ',';
    for (size_t i = 0; i < count; i++) {
      ist_record_csv_string(out, n[i].file);
      /* width .. backend: empty but backend; the rest empty */
      fprintf(out, ",,,,,%s", pass ? "outlier" : "excluded");
      for (int k = 5; k < empty + nhist + 4; k++)
        putc(',', out);
      putc(',', out);
      ist_record_csv_string(out, n[i].reason);
      ds_csv_tail(out, cfg, error_column);
    }
  }
}

/* The text lists at most this many images left out and outliers each;
 * --json lists all. */
#define DS_TEXT_LISTED 10

static void ds_plural(FILE *out, uint64_t n, const char *what) {
  fprintf(out, "%" PRIu64 " %s%s", n, what, n == 1 ? "" : "s");
}

/* The images left out (outliers: 0) or the outliers (1): one line per kind
 * of reason, then at most DS_TEXT_LISTED of them by name, those with a
 * reason other than the layout first (the layout's are summed up by the
 * kind's line and, when converted, by the conversion's). */
static void ds_notes_text(FILE *out, const imgstat_dataset_result *r,
                          int outliers) {
  const imgstat_dataset_note *n = outliers ? r->outliers : r->excluded;
  size_t count = outliers ? r->noutliers : r->nexcluded;
  static const struct {
    unsigned kind;
    const char *left_out, *outlier;
  } kinds[] = {
      {IMGSTAT_DATASET_NOTE_LAYOUT, "layout differs from the pool's",
       "layout differs from most images'"},
      {IMGSTAT_DATASET_NOTE_DEPTH, "depth differs from the pool's",
       "depth differs from most images'"},
      {IMGSTAT_DATASET_NOTE_SIZE, NULL, "size differs from most images'"},
      {IMGSTAT_DATASET_NOTE_CONSTANT, NULL, "constant"},
      {IMGSTAT_DATASET_NOTE_Z, NULL,
       "a channel's mean or std far from the "
       "dataset's"}};
  for (size_t k = 0; k < sizeof kinds / sizeof *kinds; k++) {
    uint64_t with = 0;
    for (size_t i = 0; i < count; i++)
      with += (n[i].kinds & kinds[k].kind) != 0;
    if (!with)
      continue;
    if (outliers) {
      ds_plural(out, with, "outlier");
      fprintf(out, ": %s", kinds[k].outlier);
      if (kinds[k].kind == IMGSTAT_DATASET_NOTE_Z)
        imgstat_number_fprintf(out, " (robust z beyond %g)", r->outlier_z);
    } else {
      ds_plural(out, with, "image");
      fprintf(out, " left out: %s", kinds[k].left_out);
    }
    putc('\n', out);
  }
  size_t listed = 0;
  for (int pass = 0; pass < 2; pass++)
    for (size_t i = 0; i < count && listed < DS_TEXT_LISTED; i++) {
      int layout_only = n[i].kinds == IMGSTAT_DATASET_NOTE_LAYOUT;
      if (layout_only != pass)
        continue;
      fputs(outliers ? "outlier: " : "left out: ", out);
      imgstat_record_escape(out, n[i].file, IMGSTAT_ESCAPE_TEXT);
      fprintf(out, ": %s\n", n[i].reason);
      listed++;
    }
  if (listed < count)
    fprintf(out, "... and %zu more %s; --json lists all\n", count - listed,
            outliers ? "outliers" : "images left out");
}

static void ds_text(FILE *out, const imgstat_dataset_result *r,
                    const imgstat_record_hist *cfg,
                    const imgstat_hist_figures *hf, unsigned long index) {
  char mn[48], mx[48], mean[48], sd[48];
  int as_float = r->scale_unit || (r->depths & 4);
  if (index > 0)
    putc('\n', out);
  fprintf(out,
          "dataset  %" PRIu64 " images, %" PRIu64 " pooled, %" PRIu64 " failed",
          r->images, r->pooled, r->failed);
  if (r->channels) {
    fprintf(out, "  %s  ", imgstat_layout_name(r->channels));
    for (int k = 0, first = 1; k < 4; k++)
      if (r->depths & (1 << k)) {
        fprintf(out, "%s%d", first ? "" : "+", ds_bits(k));
        first = 0;
      }
    fputs(r->depths == 8 ? "-bit signed" : "-bit", out);
  }
  fprintf(out, "  as=%s  scale=%s\n", imgstat_dataset_as_name(r->as),
          r->scale_unit ? "unit" : "none");
  if (r->sample && r->sample < r->sample_of)
    fprintf(out,
            "sampled: %" PRIu64 " of %" PRIu64 " inputs (--sample %" PRIu64
            " --seed %" PRIu64 ")\n",
            r->sample, r->sample_of, r->sample, r->sample_seed);
  else if (r->sample)
    fprintf(out,
            "sampled: all %" PRIu64 " inputs (--sample %" PRIu64
            " is not fewer; --seed %" PRIu64 ")\n",
            r->sample_of, r->sample, r->sample_seed);
  /* why this layout: --as keep pools the one most images have */
  int odd = 0;
  for (size_t i = 0; i < r->nexcluded; i++)
    odd |= (r->excluded[i].kinds &
            (IMGSTAT_DATASET_NOTE_LAYOUT | IMGSTAT_DATASET_NOTE_DEPTH)) != 0;
  if (r->as == IMGSTAT_AS_KEEP && r->channels && odd)
    fprintf(out,
            "pooled: the layout%s most images have (ties: more channels%s); "
            "--as rgb converts instead\n",
            r->scale_unit ? "" : " and depth",
            r->scale_unit ? "" : ", then more bits");
  /* what was left out, converted or flagged, before the pooled figures */
  ds_notes_text(out, r, 0);
  if (r->converted) {
    ds_plural(out, r->converted, "image");
    fputs(" converted from ", out);
    for (int c = 1, first = 1; c <= 4; c++) /* (--as: 1 to 4 channels) */
      if (r->converted_from & (1 << c)) {
        fprintf(out, "%s%s", first ? "" : "/", imgstat_layout_name(c));
        first = 0;
      }
    fprintf(out, " to %s (as=%s)\n", imgstat_layout_name(r->channels),
            imgstat_dataset_as_name(r->as));
  }
  ds_notes_text(out, r, 1);
  if (r->channels) {
    fprintf(out, "%-8s %14s %12s %12s %12s %12s\n", "channel", "count", "min",
            "max", "mean", r->ddof ? "std (N-1)" : "std (N)");
    ist_float_column col[4]; /* min, max, mean, std: one format each */
    memset(col, 0, sizeof col);
    for (int c = 0; c < r->channels; c++)
      if (r->ch[c].has_values) {
        ist_float_column_add(&col[0], r->ch[c].min); /* min and max: one */
        ist_float_column_add(&col[0], r->ch[c].max);
        ist_float_column_add(&col[2], r->ch[c].mean);
        if (r->ch[c].has_std)
          ist_float_column_add(&col[3], r->ch[c].std);
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
        ist_float_column_format(&col[0], mn, sizeof mn, d->min);
        ist_float_column_format(&col[0], mx, sizeof mx, d->max);
        ist_float_column_format(&col[2], mean, sizeof mean, d->mean);
        ist_float_column_format(&col[3], sd, sizeof sd, d->std);
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
    /* over IMGSTAT_INLINE_CHANNELS bands the table is all (one line a
     * band, as an image's): the sums and places are in --json */
    if (r->channels > IMGSTAT_INLINE_CHANNELS)
      fputs("(each band's sums and where its min and max are: --json)\n", out);
    for (int c = 0; c < r->channels && r->channels <= IMGSTAT_INLINE_CHANNELS;
         c++) {
      const imgstat_dataset_channel *d = &r->ch[c];
      if (!d->has_values)
        continue;
      ds_sum(mn, sizeof mn, d, 0);
      ds_sum(mx, sizeof mx, d, 1);
      fprintf(out, "%s: sum %s  sum_sq %s\n",
              imgstat_channel_name(r->channels, c), mn, mx);
      fprintf(out, "%s: min at ", imgstat_channel_name(r->channels, c));
      imgstat_record_escape(out, d->min_at.file, IMGSTAT_ESCAPE_TEXT);
      fprintf(out, " (%" PRIu32 ", %" PRIu32 "), max at ", d->min_at.x,
              d->min_at.y);
      imgstat_record_escape(out, d->max_at.file, IMGSTAT_ESCAPE_TEXT);
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
  char note[192];
  if (ds_depth_note(note, sizeof note, r))
    fprintf(out, "note: %s\n", note);
  ds_emit_text(out, r, cfg);
}

void imgstat_record_write_dataset(FILE *out, imgstat_record_format format,
                                  const imgstat_dataset_result *r,
                                  const imgstat_record_hist *hist,
                                  const imgstat_hist_figures *hf,
                                  unsigned long index, int error_column) {
  switch (format) {
  case IMGSTAT_RECORD_JSON:
    ds_json(out, r, hist, hf);
    break;
  case IMGSTAT_RECORD_CSV:
    ds_csv(out, r, hist, hf, error_column);
    break;
  case IMGSTAT_RECORD_TEXT:
  case IMGSTAT_RECORD_BRIEF: /* the dataset's table, after a blank line */
    ds_text(out, r, hist, hf, index);
    break;
  }
}

void imgstat_dataset_hist_figures(const imgstat_dataset_result *r,
                                  const double *percentiles, int n,
                                  imgstat_hist_figures *hf) {
  memset(hf, 0, sizeof(imgstat_hist_figures) * (size_t)r->channels);
  for (int c = 0; c < r->channels; c++) {
    if (!r->ch[c].has_histogram)
      continue;
    imgstat_moments m;
    imgstat_moments_from_histogram(&r->ch[c].hist, &m);
    imgstat_hist_figures_compute(&r->ch[c].hist, &m, percentiles, n, &hf[c]);
    /* float pools: the exact values a second read found */
    imgstat_dataset_channel_percentile(&r->ch[c], 50.0, &hf[c].median);
    for (int i = 0; i < hf[c].npercentiles; i++)
      imgstat_dataset_channel_percentile(&r->ch[c], percentiles[i],
                                         &hf[c].percentile[i]);
  }
}
