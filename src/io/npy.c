/*
 * numpy's .npy format (versions 1.0, 2.0 and 3.0): a magic string, a Python
 * dict literal ({'descr': ..., 'fortran_order': ..., 'shape': ...}) and the
 * array's bytes in C order.
 *
 * Sample types: uint8 and bool are 8-bit, uint16 16-bit, float32 32-bit
 * float, as stored; int16 is int16 (16-bit planes of the value + 32768,
 * imgstat.h IMGSTAT_INT16_OFFSET). int8 becomes 32-bit floats (every value
 * is one); int32, uint32 and float64 do too when every value converts exactly,
 * and are refused at the first one that does not (imgstat never rounds a
 * sample). Other dtypes (float16, 64-bit integers, complex, structured) and
 * Fortran-ordered arrays are refused.
 *
 * Axes: (H, W) is one channel; a 3-D shape (A, B, C) is (H, W, C) when C is
 * 1 to 4, else (C, H, W) when A is 1 to 4 (what `normalize --layout chw`
 * writes). So a channels-first array only 1 to 4 pixels wide reads as
 * channels-last: the shape alone cannot tell the two apart. Beyond 4, the
 * bands are the smallest axis of A and C, (H, W, C) when C < A and C <= B,
 * (C, H, W) when A < C and A <= B; anything else (A == C, or the bands
 * axis larger than the image's height or width) is refused, as is a bands
 * axis over IMGSTAT_MAX_CHANNELS. --npy-layout hwc or chw
 * (imgstat_load_options.npy_layout) says it instead of the shape.
 */
#include "image_rows.h"
#include "imgstat/imgstat.h"
#include "io.h"

#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

/* The numpy dtypes we read. */
typedef enum npy_type {
  NPY_U1,
  NPY_B1,
  NPY_I1,
  NPY_U2,
  NPY_I2,
  NPY_U4,
  NPY_I4,
  NPY_F4,
  NPY_F8
} npy_type;

typedef struct npy_state {
  npy_type type;
  int item; /* bytes of one item */
  int swap; /* the items' byte order is not the host's */
  int chw;  /* channels first */
  uint32_t width, height;
  int channels;
  size_t data_offset;
  unsigned char *row; /* one row of items as stored */
  float *frow;        /* the same as floats */
  ist_bytes in;
} npy_state;

/* ---- the header dict --------------------------------------------------- */

typedef struct dict_reader {
  const char *p, *end;
} dict_reader;

static void skip_space(dict_reader *r) {
  while (r->p < r->end &&
         (*r->p == ' ' || *r->p == '\t' || *r->p == '\n' || *r->p == '\r'))
    r->p++;
}

static int take(dict_reader *r, char c) {
  skip_space(r);
  if (r->p < r->end && *r->p == c) {
    r->p++;
    return 1;
  }
  return 0;
}

/* A quoted string (no escapes) into out (size bytes). */
static int read_string(dict_reader *r, char *out, size_t size) {
  skip_space(r);
  if (r->p >= r->end || (*r->p != '\'' && *r->p != '"'))
    return 0;
  char q = *r->p++;
  size_t n = 0;
  while (r->p < r->end && *r->p != q) {
    if (*r->p == '\\' || n + 1 >= size)
      return 0;
    out[n++] = *r->p++;
  }
  if (r->p >= r->end)
    return 0;
  r->p++;
  out[n] = '\0';
  return 1;
}

static int read_word(dict_reader *r, const char *word) {
  skip_space(r);
  size_t n = strlen(word);
  if ((size_t)(r->end - r->p) >= n && memcmp(r->p, word, n) == 0) {
    r->p += n;
    return 1;
  }
  return 0;
}

/* A tuple of up to 4 non-negative integers, "(3, 4)", "(5,)", "()". */
static int read_shape(dict_reader *r, uint64_t dims[4], int *ndim) {
  *ndim = 0;
  if (!take(r, '('))
    return 0;
  for (;;) {
    if (take(r, ')'))
      return 1;
    skip_space(r);
    uint64_t v = 0;
    int digits = 0;
    while (r->p < r->end && *r->p >= '0' && *r->p <= '9') {
      if (v > (UINT64_MAX - 9) / 10)
        return 0;
      v = v * 10 + (uint64_t)(*r->p++ - '0');
      digits++;
    }
    /* numpy writes Python ints; "3L" came from Python 2 */
    if (r->p < r->end && *r->p == 'L')
      r->p++;
    if (!digits || *ndim == 4)
      return 0;
    dims[(*ndim)++] = v;
    if (!take(r, ',')) {
      return take(r, ')');
    }
  }
}

static imgstat_status parse_descr(npy_state *ns, const char *d,
                                  imgstat_error *err) {
  static const struct {
    const char *code;
    npy_type type;
    int item;
  } known[] = {{"u1", NPY_U1, 1}, {"b1", NPY_B1, 1}, {"i1", NPY_I1, 1},
               {"u2", NPY_U2, 2}, {"i2", NPY_I2, 2}, {"u4", NPY_U4, 4},
               {"i4", NPY_I4, 4}, {"f4", NPY_F4, 4}, {"f8", NPY_F8, 8}};
  char order = d[0];
  const char *code = d;
  if (order == '<' || order == '>' || order == '|' || order == '=')
    code = d + 1;
  else
    order = '=';
  for (size_t i = 0; i < sizeof known / sizeof known[0]; i++)
    if (strcmp(code, known[i].code) == 0) {
      ns->type = known[i].type;
      ns->item = known[i].item;
      int little =
          order == '<' || (order != '>' && ist_host_is_little_endian());
      ns->swap = ns->item > 1 && little != ist_host_is_little_endian();
      return IMGSTAT_OK;
    }
  return imgstat_error_set(err, IMGSTAT_ERR_UNSUPPORTED,
                           "NPY dtype '%s' is not supported (uint8, bool, "
                           "int8, uint16, int16, uint32, int32, float32 and "
                           "float64 are)",
                           d);
}

/* The header: magic, version, dict. Fills ns and returns the header's
 * length in *data_offset. */
static imgstat_status parse_header(ist_source *src, npy_state *ns,
                                   uint64_t dims[4], int *ndim,
                                   imgstat_error *err) {
  unsigned char head[12];
  size_t got;
  imgstat_status s = ist_source_head(src, head, sizeof head, &got, err);
  if (s != IMGSTAT_OK)
    return s;
  if (got < 10)
    return ist_corrupt(err, "NPY", "header is truncated");
  int major = head[6];
  size_t len, pre;
  if (major == 1) {
    len = (size_t)head[8] | (size_t)head[9] << 8;
    pre = 10;
  } else if (major == 2 || major == 3) {
    if (got < 12)
      return ist_corrupt(err, "NPY", "header is truncated");
    len = (size_t)head[8] | (size_t)head[9] << 8 | (size_t)head[10] << 16 |
          (size_t)head[11] << 24;
    pre = 12;
  } else {
    return imgstat_error_set(err, IMGSTAT_ERR_UNSUPPORTED,
                             "NPY format version %d.%d is not supported", major,
                             head[7]);
  }
  /* numpy refuses headers over 10000 bytes unless told otherwise */
  if (len > 65536)
    return ist_corrupt(err, "NPY", "header of %zu bytes is too long", len);
  if (pre + len > src->size)
    return ist_corrupt(err, "NPY", "header is truncated");
  char *text = malloc(len + 1);
  if (!text)
    return imgstat_error_set(err, IMGSTAT_ERR_NOMEM, "out of memory");
  int e = ist_source_rewind(src);
  if (e) {
    free(text);
    return imgstat_error_set(err, IMGSTAT_ERR_IO, "%s", strerror(e));
  }
  unsigned char skip[12];
  if (ist_source_read(src, skip, pre) != pre ||
      ist_source_read(src, text, len) != len) {
    free(text);
    if (src->read_errno)
      return imgstat_error_set(err, IMGSTAT_ERR_IO, "%s",
                               strerror(src->read_errno));
    return ist_corrupt(err, "NPY", "header is truncated");
  }
  text[len] = '\0';
  ns->data_offset = pre + len;

  dict_reader r = {text, text + len};
  char descr[32] = "";
  int fortran = -1, have_shape = 0, ok = take(&r, '{');
  while (ok && !take(&r, '}')) {
    char key[32];
    ok = read_string(&r, key, sizeof key) && take(&r, ':');
    if (!ok)
      break;
    if (strcmp(key, "descr") == 0) {
      ok = read_string(&r, descr, sizeof descr);
      if (!ok) { /* a list: a structured dtype */
        free(text);
        return imgstat_error_set(err, IMGSTAT_ERR_UNSUPPORTED,
                                 "NPY arrays of structured dtypes are not "
                                 "supported");
      }
    } else if (strcmp(key, "fortran_order") == 0) {
      fortran = read_word(&r, "True") ? 1 : read_word(&r, "False") ? 0 : -1;
      ok = fortran >= 0;
    } else if (strcmp(key, "shape") == 0) {
      ok = read_shape(&r, dims, ndim);
      have_shape = ok;
    } else {
      ok = 0;
    }
    if (ok && !take(&r, ',')) {
      ok = take(&r, '}');
      break;
    }
  }
  free(text);
  if (!ok || !descr[0] || fortran < 0 || !have_shape)
    return ist_corrupt(err, "NPY", "header dict is malformed");
  if (fortran)
    return imgstat_error_set(err, IMGSTAT_ERR_UNSUPPORTED,
                             "NPY arrays in Fortran order are not supported "
                             "(save numpy.ascontiguousarray(a))");
  return parse_descr(ns, descr, err);
}

imgstat_status ist_npy_open(imgstat_decoder *d, imgstat_error *err) {
  ist_source *src = &d->src;
  npy_state *ns = calloc(1, sizeof *ns);
  if (!ns)
    return imgstat_error_set(err, IMGSTAT_ERR_NOMEM, "out of memory");
  d->state = ns;
  uint64_t dims[4] = {0};
  int ndim = 0;
  imgstat_status s = parse_header(src, ns, dims, &ndim, err);
  if (s != IMGSTAT_OK)
    return s;
  uint64_t h, w, c = 1;
  if (ndim == 2) {
    h = dims[0];
    w = dims[1];
  } else if (ndim == 3 && d->npy_layout == 1) {
    h = dims[0];
    w = dims[1];
    c = dims[2];
  } else if (ndim == 3 && d->npy_layout == 2) {
    ns->chw = 1;
    c = dims[0];
    h = dims[1];
    w = dims[2];
  } else if (ndim == 3 && dims[2] >= 1 && dims[2] <= 4) {
    h = dims[0];
    w = dims[1];
    c = dims[2];
  } else if (ndim == 3 && dims[0] >= 1 && dims[0] <= 4) {
    ns->chw = 1;
    c = dims[0];
    h = dims[1];
    w = dims[2];
  } else if (ndim == 3 && dims[2] < dims[0] && dims[2] <= dims[1]) {
    h = dims[0];
    w = dims[1];
    c = dims[2];
  } else if (ndim == 3 && dims[0] < dims[2] && dims[0] <= dims[1]) {
    ns->chw = 1;
    c = dims[0];
    h = dims[1];
    w = dims[2];
  } else {
    char shape[96] = "";
    size_t at = 0;
    for (int i = 0; i < ndim && at < sizeof shape; i++)
      at += (size_t)snprintf(shape + at, sizeof shape - at, "%s%" PRIu64,
                             i ? ", " : "", dims[i]);
    imgstat_error_set(err, IMGSTAT_ERR_UNSUPPORTED,
                      "NPY array of shape (%s) is no image: (H, W), "
                      "(H, W, C) or (C, H, W) with 1 to 4 channels, "
                      "or bands on the smaller end axis; the axes can be "
                      "given (npy_layout)",
                      shape);
    return imgstat_error_cause(err, IMGSTAT_CAUSE_SETTING, 0, 0, "npy_layout");
  }
  if (h == 0 || w == 0 || h > UINT32_MAX || w > UINT32_MAX)
    return imgstat_error_set(err, IMGSTAT_ERR_UNSUPPORTED,
                             "NPY image is %" PRIu64 "x%" PRIu64, w, h);
  if (c > IMGSTAT_MAX_CHANNELS)
    return imgstat_error_set(err, IMGSTAT_ERR_UNSUPPORTED,
                             "NPY array has %" PRIu64 " bands (%s): more than "
                             "%d are not supported",
                             c, ns->chw ? "channels first" : "channels last",
                             IMGSTAT_MAX_CHANNELS);
  ns->width = (uint32_t)w;
  ns->height = (uint32_t)h;
  ns->channels = (int)c;
  imgstat_sample sample = ns->type == NPY_U1 || ns->type == NPY_B1 ? IMGSTAT_U8
                          : ns->type == NPY_U2 || ns->type == NPY_I2
                              ? IMGSTAT_U16
                              : IMGSTAT_F32;
  /* The data is stored whole: exactly the items' bytes after the header.
   * The peak: the planes, a row as stored and as floats. */
  uint64_t items = w * h * c;
  uint64_t plane = w * h * (uint64_t)sample;
  uint64_t row = (ns->chw ? w : w * c) * (uint64_t)(ns->item + 4);
  s = ist_decode_check(&d->lim, ns->width, ns->height, plane * c + row,
                       (uint64_t)ns->data_offset + items * (uint64_t)ns->item,
                       src->size, "NPY", err);
  if (s != IMGSTAT_OK)
    return s;
  ist_header_set(&d->header, ns->width, ns->height, ns->channels, sample,
                 "NPY");
  d->header.int16 = ns->type == NPY_I2;
  return IMGSTAT_OK;
}

static void swap_items(unsigned char *p, size_t n, int item) {
  for (size_t i = 0; i < n; i++, p += item)
    for (int a = 0, b = item - 1; a < b; a++, b--) {
      unsigned char t = p[a];
      p[a] = p[b];
      p[b] = t;
    }
}

static const char *type_name(npy_type t) {
  static const char *const names[] = {"uint8",  "bool",    "int8",
                                      "uint16", "int16",   "uint32",
                                      "int32",  "float32", "float64"};
  return names[t];
}

/* n items of raw (host order) as floats into out; returns the index of the
 * first that is not exactly a float, or n. */
static size_t items_to_float(const npy_state *ns, const unsigned char *raw,
                             size_t n, float *out, double *bad) {
  for (size_t i = 0; i < n; i++) {
    const unsigned char *p = raw + i * (size_t)ns->item;
    double v;
    switch (ns->type) {
    case NPY_I1:
      v = (int8_t)p[0];
      break;
    case NPY_I2: {
      int16_t t;
      memcpy(&t, p, 2);
      v = t;
      break;
    }
    case NPY_U4: {
      uint32_t t;
      memcpy(&t, p, 4);
      v = t;
      break;
    }
    case NPY_I4: {
      int32_t t;
      memcpy(&t, p, 4);
      v = t;
      break;
    }
    case NPY_F4:
      memcpy(&out[i], p, 4);
      continue;
    default: /* NPY_F8 */
      memcpy(&v, p, 8);
      break;
    }
    if (!ist_f32_exact(v, &out[i])) {
      *bad = v;
      return i;
    }
  }
  return n;
}

imgstat_status ist_npy_read(imgstat_decoder *d, imgstat_image *img,
                            imgstat_error *err) {
  npy_state *ns = d->state;
  ist_source *src = &d->src;
  imgstat_status s = ist_bytes_start(&ns->in, src, ns->data_offset, "NPY", err);
  if (s != IMGSTAT_OK)
    return s;
  /* A row as stored: W items (channels first) or W x C (channels last). */
  size_t per_row = ns->chw ? ns->width : (size_t)ns->width * ns->channels;
  ns->row = malloc(per_row * (size_t)ns->item);
  ns->frow = malloc(per_row * sizeof *ns->frow);
  if (!ns->row || !ns->frow)
    return imgstat_error_set(err, IMGSTAT_ERR_NOMEM, "out of memory");
  int rows_per_pass = ns->chw ? ns->channels : 1;
  for (int pass = 0; pass < rows_per_pass; pass++)
    for (uint32_t y = 0; y < ns->height; y++) {
      size_t bytes = per_row * (size_t)ns->item;
      if (ist_bytes_read(&ns->in, ns->row, bytes) != bytes)
        return ist_truncated(src, "NPY", err);
      if (ns->swap)
        swap_items(ns->row, per_row, ns->item);
      const void *out = ns->row;
      if (img->sample == IMGSTAT_F32) {
        double bad = 0;
        size_t k = items_to_float(ns, ns->row, per_row, ns->frow, &bad);
        if (k < per_row)
          return ist_f32_refuse(
              err, "NPY", type_name(ns->type), bad,
              (uint32_t)(ns->chw ? k : k / (size_t)ns->channels), y);
        out = ns->frow;
      } else if (ns->type == NPY_I2) { /* the value + 32768 */
        uint16_t *u = (uint16_t *)ns->row;
        for (size_t i = 0; i < per_row; i++)
          u[i] ^= 0x8000u;
      } else if (ns->type == NPY_B1) {
        for (size_t i = 0; i < per_row; i++)
          if (ns->row[i] > 1)
            return ist_corrupt(err, "NPY", "bool item of value %u", ns->row[i]);
      }
      if (ns->chw)
        memcpy(ist_image_row(img, pass, y), out,
               (size_t)ns->width * (size_t)img->sample);
      else
        ist_pixels_split(img, out, y, 0, ns->width, 1);
    }
  return IMGSTAT_OK;
}

void ist_npy_close(imgstat_decoder *d) {
  npy_state *ns = d->state;
  if (!ns)
    return;
  free(ns->row);
  free(ns->frow);
  free(ns);
  d->state = NULL;
}
