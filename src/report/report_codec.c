/*
 * The report's serialized form (imgstat_report_serialize,
 * imgstat_report_deserialize): little-endian, checked by its FNV-1a sum, as
 * the dataset accumulator's. Every count is checked against the bytes left
 * and the options' bounds before anything is allocated for it, so that
 * damaged bytes are refused (IMGSTAT_ERR_FORMAT), never read past.
 *
 *   "IMGSRPRT", version
 *   inputs, failed, backend counts (cpu, gpu, other), wide, max_channels,
 *   nimages; nimages channel counts (one byte each); nimages x 4 means,
 *   nimages x 4 stds (binary32)
 *   nformats, each: name, count
 *   nrows, each: ordinal, width, height, channels, sample (u32 each), file,
 *     error (a flag byte, then the text when 1), format (likewise),
 *     4 means, 4 stds
 *   ngroups, each: reason, count, nfiles, the files
 *   the FNV-1a sum of all of the above
 *
 * Counts are u64, texts a u64 length and their bytes (no NUL among them).
 */
#include "byte_buf.h"
#include "checksum.h"
#include "imgstat/report.h"
#include "report_state.h"

#include <stdlib.h>
#include <string.h>

#define RP_MAGIC "IMGSRPRT"
#define RP_VERSION 1u

/* ---- writing -------------------------------------------------------------
 */

static void w_f32s(ist_wbuf *w, const float *v, size_t n) {
  uint8_t *p = ist_w_room(w, 4 * n);
  for (size_t k = 0; p && k < n; k++) {
    uint32_t b;
    memcpy(&b, &v[k], sizeof b);
    ist_le_put32(&p, b);
  }
}

static void w_text(ist_wbuf *w, const char *s) {
  size_t n = strlen(s);
  ist_w_u64(w, n);
  uint8_t *p = ist_w_room(w, n);
  if (p && n)
    memcpy(p, s, n);
}

/* A text that may be missing: a flag byte, then the text. */
static void w_maybe(ist_wbuf *w, const char *s) {
  uint8_t *p = ist_w_room(w, 1);
  if (p)
    *p = s != NULL;
  if (s)
    w_text(w, s);
}

static int row_order(const void *a, const void *b) {
  const ist_report_row *x = *(const ist_report_row *const *)a,
                       *y = *(const ist_report_row *const *)b;
  return x->ordinal < y->ordinal ? -1 : x->ordinal > y->ordinal;
}

imgstat_status imgstat_report_serialize(const imgstat_report *r, void **buf,
                                        size_t *size, imgstat_error *err) {
  *buf = NULL;
  *size = 0;
  if (!r)
    return imgstat_error_set(err, IMGSTAT_ERR_ARG,
                             "imgstat_report_serialize: no report");
  ist_wbuf w = {0};
  uint8_t *m = ist_w_room(&w, 8);
  if (m)
    memcpy(m, RP_MAGIC, 8);
  ist_w_u64(&w, RP_VERSION);
  ist_w_u64(&w, r->inputs);
  ist_w_u64(&w, r->failed);
  for (int k = 0; k < 3; k++)
    ist_w_u64(&w, r->backend_count[k]);
  ist_w_u64(&w, r->wide);
  ist_w_u64(&w, (uint64_t)r->max_channels);
  ist_w_u64(&w, r->nimages);
  uint8_t *ch = ist_w_room(&w, (size_t)r->nimages);
  if (ch && r->nimages)
    memcpy(ch, r->channels, (size_t)r->nimages);
  w_f32s(&w, r->mean, (size_t)r->nimages * IST_REPORT_CHANNELS);
  w_f32s(&w, r->std, (size_t)r->nimages * IST_REPORT_CHANNELS);
  ist_w_u64(&w, r->nformats);
  for (size_t k = 0; k < r->nformats; k++) {
    w_text(&w, r->formats[k]);
    ist_w_u64(&w, r->format_count[k]);
  }
  /* the rows in input order (not the heap's), so that equal reports
   * serialize alike */
  const ist_report_row **rows = malloc((r->nrows + 1) * sizeof *rows);
  if (!rows)
    w.failed = 1;
  for (size_t k = 0; rows && k < r->nrows; k++)
    rows[k] = &r->rows[k];
  if (rows)
    qsort(rows, r->nrows, sizeof *rows, row_order);
  ist_w_u64(&w, r->nrows);
  for (size_t k = 0; rows && k < r->nrows; k++) {
    const ist_report_row *row = rows[k];
    ist_w_u64(&w, row->ordinal);
    ist_w_u32(&w, row->width);
    ist_w_u32(&w, row->height);
    ist_w_u32(&w, (uint32_t)row->channels);
    ist_w_u32(&w, (uint32_t)row->sample);
    w_text(&w, row->file);
    w_maybe(&w, row->error);
    w_maybe(&w, row->format);
    w_f32s(&w, row->mean, IST_REPORT_CHANNELS);
    w_f32s(&w, row->std, IST_REPORT_CHANNELS);
  }
  free(rows);
  ist_w_u64(&w, r->ngroups);
  for (size_t g = 0; g < r->ngroups; g++) {
    const ist_report_group *gr = &r->groups[g];
    w_text(&w, gr->reason);
    ist_w_u64(&w, gr->count);
    ist_w_u64(&w, gr->nfiles);
    for (size_t k = 0; k < gr->nfiles; k++)
      w_text(&w, gr->files[k]);
  }
  return ist_w_seal(&w, buf, size, err);
}

/* ---- reading -------------------------------------------------------------
 */

static void r_f32s(ist_rbuf *r, float *v, size_t n) {
  const uint8_t *b = ist_r_bytes(r, 4 * n);
  for (size_t k = 0; b && k < n; k++) {
    uint32_t x = ist_le_get32(&b);
    memcpy(&v[k], &x, sizeof x);
  }
}

/* A count of items of at least `each` bytes: no more than the bytes left
 * hold, and at most max. */
static uint64_t r_count(ist_rbuf *r, size_t each, uint64_t max) {
  uint64_t n = ist_r_u64(r);
  if (!r->failed && (n > max || n > (r->n - r->at) / each))
    r->failed = 1;
  return r->failed ? 0 : n;
}

/* A text, a new NUL-terminated copy (NULL when damaged or out of memory:
 * *nomem says which). */
static char *r_text(ist_rbuf *r, int *nomem) {
  uint64_t n = r_count(r, 1, SIZE_MAX - 1);
  const uint8_t *b = ist_r_bytes(r, (size_t)n);
  if (!b || memchr(b, '\0', (size_t)n)) {
    r->failed = 1;
    return NULL;
  }
  char *s = malloc((size_t)n + 1);
  if (!s) {
    *nomem = 1;
    return NULL;
  }
  memcpy(s, b, (size_t)n);
  s[n] = '\0';
  return s;
}

/* A text that may be missing (w_maybe): *present says whether it is. */
static char *r_maybe(ist_rbuf *r, int *present, int *nomem) {
  const uint8_t *f = ist_r_bytes(r, 1);
  *present = f && *f == 1;
  if (f && *f > 1)
    r->failed = 1;
  return *present ? r_text(r, nomem) : NULL;
}

/* The body into r (fresh); 0 when damaged or out of memory (*nomem). */
static int read_body(ist_rbuf *in, imgstat_report *r, int *nomem) {
  r->inputs = ist_r_u64(in);
  r->failed = ist_r_u64(in);
  uint64_t backends = 0;
  for (int k = 0; k < 3; k++) {
    r->backend_count[k] = ist_r_u64(in);
    backends += r->backend_count[k];
  }
  r->wide = ist_r_u64(in);
  uint64_t maxc = ist_r_u64(in);
  /* each image: its channel count and 8 binary32 */
  uint64_t n = r_count(in, 1 + 8 * 4, UINT64_MAX);
  if (in->failed || r->failed > r->inputs || n != r->inputs - r->failed ||
      backends != n || r->wide > n || maxc > IMGSTAT_MAX_CHANNELS ||
      (r->wide > 0) != (maxc > IST_REPORT_CHANNELS) || (n > 0) != (maxc > 0))
    return 0;
  r->max_channels = (int)maxc;
  if (n) {
    r->channels = malloc((size_t)n);
    r->mean = malloc((size_t)n * IST_REPORT_CHANNELS * sizeof *r->mean);
    r->std = malloc((size_t)n * IST_REPORT_CHANNELS * sizeof *r->std);
    if (!r->channels || !r->mean || !r->std) {
      *nomem = 1;
      return 0;
    }
    r->nimages = r->cap_images = n;
    const uint8_t *ch = ist_r_bytes(in, (size_t)n);
    for (uint64_t i = 0; ch && i < n; i++)
      if (ch[i] < 1 || ch[i] > IST_REPORT_CHANNELS || ch[i] > maxc)
        return 0;
    if (ch)
      memcpy(r->channels, ch, (size_t)n);
    r_f32s(in, r->mean, (size_t)n * IST_REPORT_CHANNELS);
    r_f32s(in, r->std, (size_t)n * IST_REPORT_CHANNELS);
  }
  uint64_t nf = r_count(in, 16, IST_REPORT_FORMATS_MAX), counted = 0;
  for (uint64_t k = 0; k < nf && !in->failed; k++) {
    char *name = r_text(in, nomem);
    uint64_t count = ist_r_u64(in);
    const char *kept = name ? ist_report_intern(r, name) : NULL;
    free(name);
    if (!kept) {
      *nomem = *nomem || !in->failed;
      return 0;
    }
    size_t before = r->nformats;
    ist_report_count_format(r, kept, count);
    counted += count;
    if (r->nformats == before || count == 0 || count > n || counted > n)
      return 0; /* a name twice, or more counted than images */
  }
  /* each row: the ordinal and 4 u32, a file's length, two flags, 8
   * binary32 */
  uint64_t nrows = r_count(in, 8 + 4 * 4 + 8 + 2 + 8 * 4, r->opt.table_max);
  if (nrows > r->inputs)
    return 0;
  for (uint64_t k = 0; k < nrows && !in->failed; k++) {
    ist_report_row row;
    memset(&row, 0, sizeof row);
    row.ordinal = ist_r_u64(in);
    row.hash = ist_report_hash(row.ordinal);
    row.width = ist_r_u32(in);
    row.height = ist_r_u32(in);
    uint32_t channels = ist_r_u32(in), sample = ist_r_u32(in);
    row.file = r_text(in, nomem);
    int has_error = 0, has_format = 0;
    row.error = row.file ? r_maybe(in, &has_error, nomem) : NULL;
    char *format = !in->failed && !*nomem && (row.error || !has_error)
                       ? r_maybe(in, &has_format, nomem)
                       : NULL;
    row.format = format ? ist_report_intern(r, format) : NULL;
    if (format && !row.format)
      *nomem = 1;
    free(format);
    r_f32s(in, row.mean, IST_REPORT_CHANNELS);
    r_f32s(in, row.std, IST_REPORT_CHANNELS);
    if (in->failed || *nomem || channels > IMGSTAT_MAX_CHANNELS || sample > 8) {
      ist_report_row_free(&row);
      return 0;
    }
    row.channels = (int)channels;
    row.sample = (int)sample;
    ist_report_table_offer(r, &row);
  }
  /* each group: a reason's length, a count, a file count */
  uint64_t ngroups = r_count(in, 24, IST_REPORT_GROUPS_MAX), failures = 0;
  for (uint64_t g = 0; g < ngroups && !in->failed; g++) {
    char *reason = r_text(in, nomem);
    uint64_t count = ist_r_u64(in);
    /* each file: its length */
    uint64_t nfiles = r_count(in, 8, r->opt.list_max);
    ist_report_group *gr = reason ? ist_report_group_of(r, reason) : NULL;
    free(reason);
    if (!gr) {
      *nomem = *nomem || !in->failed;
      return 0;
    }
    failures += count;
    if (in->failed || count == 0 || nfiles > count || failures > r->failed)
      return 0;
    for (uint64_t k = 0; k < nfiles; k++) {
      char *file = r_text(in, nomem);
      int ok = file && ist_report_group_list(r, gr, file);
      *nomem = *nomem || (file && !ok);
      free(file);
      if (!ok)
        return 0;
    }
    gr->count += count;
  }
  return !in->failed && failures == r->failed;
}

imgstat_status imgstat_report_deserialize(const void *buf, size_t size,
                                          const imgstat_report_options *opts,
                                          imgstat_report **out,
                                          imgstat_error *err) {
  *out = NULL;
  const uint8_t *p = buf;
  if (!p || size < 24 || memcmp(p, RP_MAGIC, 8) != 0)
    return imgstat_error_set(err, IMGSTAT_ERR_FORMAT,
                             "not a serialized imgstat report");
  ist_rbuf sum = {p, size, size - 8, 0};
  if (ist_r_u64(&sum) != ist_fnv1a(p, size - 8))
    return imgstat_error_set(err, IMGSTAT_ERR_FORMAT,
                             "a serialized imgstat report, damaged (its "
                             "checksum differs)");
  ist_rbuf in = {p, size - 8, 8, 0};
  uint64_t version = ist_r_u64(&in);
  if (version != RP_VERSION)
    return imgstat_error_set(err, IMGSTAT_ERR_FORMAT,
                             "a serialized imgstat report of version %llu "
                             "(this imgstat reads version %u)",
                             (unsigned long long)version, RP_VERSION);
  imgstat_report *r = NULL;
  imgstat_status s = imgstat_report_create(opts, &r, err);
  if (s != IMGSTAT_OK)
    return s;
  int nomem = 0;
  if (!read_body(&in, r, &nomem) || in.at != in.n) {
    imgstat_report_destroy(r);
    if (nomem)
      return imgstat_error_set(err, IMGSTAT_ERR_NOMEM, "out of memory");
    return imgstat_error_set(err, IMGSTAT_ERR_FORMAT,
                             "a serialized imgstat report, damaged (its "
                             "counts do not fit its bytes or its bounds)");
  }
  *out = r;
  return IMGSTAT_OK;
}
