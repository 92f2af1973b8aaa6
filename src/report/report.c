/*
 * The report's gathering (imgstat/report.h): each input's mean and std per
 * channel, the table's deterministic sample (the table_max inputs whose
 * ordinals hash lowest, so that the rows do not depend on the order the
 * results come in), the failed inputs grouped by reason; the merge of two
 * reports (an MPI run's ranks, in rank order; the serialized form is in
 * report_codec.c); the page written through the safe path.
 */
#include "imgstat/report.h"

#include "report_state.h"

#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

static char *copy_text(const char *s) {
  size_t n = strlen(s ? s : "");
  char *c = malloc(n + 1);
  if (c)
    memcpy(c, s ? s : "", n + 1);
  return c;
}

imgstat_status imgstat_report_create(const imgstat_report_options *opts,
                                     imgstat_report **out, imgstat_error *err) {
  *out = NULL;
  imgstat_report *r = calloc(1, sizeof *r);
  if (!r)
    return imgstat_error_set(err, IMGSTAT_ERR_NOMEM, "out of memory");
  if (opts)
    r->opt = *opts;
  if (!r->opt.table_max)
    r->opt.table_max = IMGSTAT_REPORT_TABLE_MAX;
  if (!r->opt.thumbs_max)
    r->opt.thumbs_max = IMGSTAT_REPORT_THUMBS_MAX;
  if (!r->opt.thumb_size)
    r->opt.thumb_size = IMGSTAT_REPORT_THUMB_SIZE;
  if (!r->opt.list_max)
    r->opt.list_max = IMGSTAT_REPORT_LIST_MAX;
  r->rows = calloc(r->opt.table_max, sizeof *r->rows);
  r->groups = calloc(IST_REPORT_GROUPS_MAX, sizeof *r->groups);
  if (!r->rows || !r->groups) {
    imgstat_report_destroy(r);
    return imgstat_error_set(err, IMGSTAT_ERR_NOMEM, "out of memory");
  }
  *out = r;
  return IMGSTAT_OK;
}

void ist_report_row_free(ist_report_row *row) {
  free(row->file);
  free(row->error);
  memset(row, 0, sizeof *row);
}

void imgstat_report_destroy(imgstat_report *r) {
  if (!r)
    return;
  for (size_t k = 0; k < r->nrows; k++)
    ist_report_row_free(&r->rows[k]);
  free(r->rows);
  for (size_t g = 0; g < r->ngroups; g++) {
    free(r->groups[g].reason);
    for (size_t k = 0; k < r->groups[g].nfiles; k++)
      free(r->groups[g].files[k]);
    free(r->groups[g].files);
  }
  free(r->groups);
  free(r->channels);
  free(r->mean);
  free(r->std);
  for (size_t k = 0; k < r->nnames; k++)
    free(r->names[k]);
  free(r->names);
  free(r);
}

uint64_t ist_report_hash(uint64_t x) {
  x += 0x9e3779b97f4a7c15u;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9u;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebu;
  return x ^ (x >> 31);
}

/* The heap's order: the larger hash (then ordinal) on top. */
static int row_above(const ist_report_row *a, const ist_report_row *b) {
  return a->hash != b->hash ? a->hash > b->hash : a->ordinal > b->ordinal;
}

static void heap_down(ist_report_row *h, size_t n, size_t i) {
  for (;;) {
    size_t l = 2 * i + 1, m = i;
    if (l < n && row_above(&h[l], &h[m]))
      m = l;
    if (l + 1 < n && row_above(&h[l + 1], &h[m]))
      m = l + 1;
    if (m == i)
      return;
    ist_report_row t = h[i];
    h[i] = h[m];
    h[m] = t;
    i = m;
  }
}

static void heap_up(ist_report_row *h, size_t i) {
  while (i > 0 && row_above(&h[i], &h[(i - 1) / 2])) {
    ist_report_row t = h[i];
    h[i] = h[(i - 1) / 2];
    h[(i - 1) / 2] = t;
    i = (i - 1) / 2;
  }
}

ist_report_group *ist_report_group_of(imgstat_report *r, const char *reason) {
  size_t g = 0;
  while (g < r->ngroups && strcmp(r->groups[g].reason, reason) != 0 &&
         !(g == IST_REPORT_GROUPS_MAX - 1))
    g++;
  ist_report_group *gr = &r->groups[g];
  if (g == r->ngroups) {
    gr->reason =
        copy_text(g == IST_REPORT_GROUPS_MAX - 1 ? "other reasons" : reason);
    gr->files = calloc(r->opt.list_max, sizeof *gr->files);
    if (!gr->reason || !gr->files) {
      free(gr->reason);
      free(gr->files);
      memset(gr, 0, sizeof *gr);
      return NULL;
    }
    r->ngroups++;
  }
  return gr;
}

int ist_report_group_list(imgstat_report *r, ist_report_group *gr,
                          const char *file) {
  if (gr->nfiles < r->opt.list_max) {
    char *c = copy_text(file);
    if (!c)
      return 0;
    gr->files[gr->nfiles++] = c;
  }
  return 1;
}

const char *ist_report_intern(imgstat_report *r, const char *s) {
  for (size_t k = 0; k < r->nformats; k++)
    if (strcmp(r->formats[k], s) == 0)
      return r->formats[k];
  for (size_t k = 0; k < r->nnames; k++)
    if (strcmp(r->names[k], s) == 0)
      return r->names[k];
  char **names = realloc(r->names, (r->nnames + 1) * sizeof *names);
  if (!names)
    return NULL;
  r->names = names;
  char *c = copy_text(s);
  if (c)
    r->names[r->nnames++] = c;
  return c;
}

void ist_report_count_format(imgstat_report *r, const char *name,
                             uint64_t count) {
  size_t k = 0;
  while (k < r->nformats && strcmp(r->formats[k], name) != 0)
    k++;
  if (k == r->nformats && k < IST_REPORT_FORMATS_MAX)
    r->formats[r->nformats++] = name;
  if (k < r->nformats)
    r->format_count[k] += count;
}

/* Room for n more images' means and stds; 0: out of memory. */
static int images_room(imgstat_report *r, uint64_t n) {
  if (r->nimages + n <= r->cap_images)
    return 1;
  uint64_t cap = r->cap_images ? r->cap_images : 1024;
  while (cap < r->nimages + n)
    cap *= 2;
  if (cap > SIZE_MAX / (IST_REPORT_CHANNELS * sizeof(float)))
    return 0;
  unsigned char *ch = realloc(r->channels, cap);
  if (ch)
    r->channels = ch;
  float *m =
      ch ? realloc(r->mean, cap * IST_REPORT_CHANNELS * sizeof *m) : NULL;
  if (m)
    r->mean = m;
  float *s = m ? realloc(r->std, cap * IST_REPORT_CHANNELS * sizeof *s) : NULL;
  if (!s)
    return 0;
  r->std = s;
  r->cap_images = cap;
  return 1;
}

void ist_report_table_offer(imgstat_report *r, ist_report_row *row) {
  if (r->nrows < r->opt.table_max) {
    r->rows[r->nrows] = *row;
    heap_up(r->rows, r->nrows++);
  } else if (row_above(&r->rows[0], row)) {
    ist_report_row_free(&r->rows[0]);
    r->rows[0] = *row;
    heap_down(r->rows, r->nrows, 0);
  } else {
    ist_report_row_free(row);
  }
  memset(row, 0, sizeof *row);
}

imgstat_status imgstat_report_add(imgstat_report *r, uint64_t ordinal,
                                  const char *file,
                                  const imgstat_job_result *res, int ddof,
                                  imgstat_error *err) {
  int ok = res->status == IMGSTAT_OK;
  ist_report_row row;
  memset(&row, 0, sizeof row);
  row.ordinal = ordinal;
  row.hash = ist_report_hash(ordinal);
  row.width = res->width;
  row.height = res->height;
  row.channels = res->channels;
  row.sample = res->width ? (int)res->sample : 0;
  row.format = res->format;
  for (int c = 0; c < IST_REPORT_CHANNELS; c++)
    row.mean[c] = row.std[c] = NAN;
  if (ok) {
    int nc = res->channels < IST_REPORT_CHANNELS ? res->channels
                                                 : IST_REPORT_CHANNELS;
    /* (an image of more than IMGSTAT_INLINE_CHANNELS: its wide arrays) */
    const imgstat_partial *part = IMGSTAT_JOB_CH(res, partial);
    for (int c = 0; c < nc; c++) {
      imgstat_figures fig;
      imgstat_figures_compute(&part[c], res->sample, res->width, ddof, &fig);
      if (fig.has_values)
        row.mean[c] = (float)fig.mean;
      if (fig.has_std)
        row.std[c] = (float)fig.std;
    }
    if (!images_room(r, 1))
      return imgstat_error_set(err, IMGSTAT_ERR_NOMEM, "out of memory");
    uint64_t i = r->nimages++;
    r->channels[i] = (unsigned char)nc;
    memcpy(r->mean + i * IST_REPORT_CHANNELS, row.mean, sizeof row.mean);
    memcpy(r->std + i * IST_REPORT_CHANNELS, row.std, sizeof row.std);
    int b = res->backend == IMGSTAT_BACKEND_CPU   ? 0
            : res->backend == IMGSTAT_BACKEND_GPU ? 1
                                                  : 2;
    r->backend_count[b]++;
    if (res->channels > IST_REPORT_CHANNELS)
      r->wide++;
    if (res->channels > r->max_channels)
      r->max_channels = res->channels;
    if (res->format)
      ist_report_count_format(r, res->format, 1);
  } else {
    r->failed++;
    const char *why = res->error.message[0] ? res->error.message : "failed";
    ist_report_group *gr = ist_report_group_of(r, why);
    if (!gr || !ist_report_group_list(r, gr, file))
      return imgstat_error_set(err, IMGSTAT_ERR_NOMEM, "out of memory");
    gr->count++;
  }
  r->inputs++;
  /* the table's sample */
  if (r->nrows == r->opt.table_max && !row_above(&r->rows[0], &row))
    return IMGSTAT_OK;
  row.file = copy_text(file);
  row.error = ok ? NULL : copy_text(res->error.message);
  if (!row.file || (!ok && !row.error)) {
    ist_report_row_free(&row);
    return imgstat_error_set(err, IMGSTAT_ERR_NOMEM, "out of memory");
  }
  ist_report_table_offer(r, &row);
  return IMGSTAT_OK;
}

imgstat_status imgstat_report_merge(imgstat_report *a, const imgstat_report *b,
                                    imgstat_error *err) {
  if (!a || !b || a == b)
    return imgstat_error_set(err, IMGSTAT_ERR_ARG,
                             "imgstat_report_merge: no reports, or one twice");
  if (!images_room(a, b->nimages))
    return imgstat_error_set(err, IMGSTAT_ERR_NOMEM, "out of memory");
  for (size_t k = 0; k < b->nformats; k++) {
    const char *name = ist_report_intern(a, b->formats[k]);
    if (!name)
      return imgstat_error_set(err, IMGSTAT_ERR_NOMEM, "out of memory");
    ist_report_count_format(a, name, b->format_count[k]);
  }
  for (size_t g = 0; g < b->ngroups; g++) {
    const ist_report_group *bg = &b->groups[g];
    ist_report_group *gr = ist_report_group_of(a, bg->reason);
    for (size_t k = 0; gr && k < bg->nfiles; k++)
      if (!ist_report_group_list(a, gr, bg->files[k]))
        gr = NULL;
    if (!gr)
      return imgstat_error_set(err, IMGSTAT_ERR_NOMEM, "out of memory");
    gr->count += bg->count;
  }
  for (size_t k = 0; k < b->nrows; k++) {
    const ist_report_row *w = &b->rows[k];
    if (a->nrows == a->opt.table_max && !row_above(&a->rows[0], w))
      continue;
    ist_report_row row = *w;
    row.file = copy_text(w->file);
    row.error = w->error ? copy_text(w->error) : NULL;
    row.format = w->format ? ist_report_intern(a, w->format) : NULL;
    if (!row.file || (w->error && !row.error) || (w->format && !row.format)) {
      ist_report_row_free(&row);
      return imgstat_error_set(err, IMGSTAT_ERR_NOMEM, "out of memory");
    }
    ist_report_table_offer(a, &row);
  }
  if (b->nimages) {
    memcpy(a->channels + a->nimages, b->channels, b->nimages);
    memcpy(a->mean + a->nimages * IST_REPORT_CHANNELS, b->mean,
           b->nimages * IST_REPORT_CHANNELS * sizeof *b->mean);
    memcpy(a->std + a->nimages * IST_REPORT_CHANNELS, b->std,
           b->nimages * IST_REPORT_CHANNELS * sizeof *b->std);
  }
  a->nimages += b->nimages;
  a->inputs += b->inputs;
  a->failed += b->failed;
  for (int k = 0; k < 3; k++)
    a->backend_count[k] += b->backend_count[k];
  a->wide += b->wide;
  if (b->max_channels > a->max_channels)
    a->max_channels = b->max_channels;
  return IMGSTAT_OK;
}

imgstat_status imgstat_report_write(imgstat_report *r, const char *path,
                                    const imgstat_report_run *run,
                                    const imgstat_dataset_result *ds,
                                    const imgstat_write_options *opts,
                                    imgstat_error *err) {
  char *buf = NULL;
  size_t len = 0;
  FILE *f = open_memstream(&buf, &len);
  if (!f)
    return imgstat_error_set(err, IMGSTAT_ERR_NOMEM, "%s: out of memory", path);
  imgstat_status st = ist_report_page(f, r, path, run, ds, err);
  if (fclose(f) != 0 && st == IMGSTAT_OK)
    st = imgstat_error_set(err, IMGSTAT_ERR_NOMEM, "%s: out of memory", path);
  if (st == IMGSTAT_OK) {
    imgstat_error e;
    memset(&e, 0, sizeof e);
    st = imgstat_bytes_write(path, buf, len, opts, &e);
    if (st != IMGSTAT_OK)
      imgstat_error_set(err, st, "%s: %s", path, e.message);
  }
  free(buf);
  return st;
}
