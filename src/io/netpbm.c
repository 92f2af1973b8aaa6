/*
 * The one header tokenizer of the Netpbm family: PNM (P1-P6, pnm.c) and PFM
 * (pfm.c). A header is "P" and a type byte, then its fields (width, height,
 * and maxval or PFM's scale), each ended by whitespace; whitespace and
 * comments ('#' to the end of the line) may stand before every field. The
 * field ends at one whitespace byte (or at a comment's line end) after which
 * the data starts.
 *
 * The header is read as a stream, so it may be of any length up to
 * IST_NETPBM_HEADER_MAX bytes (a long comment is common: image tools write
 * their history there); past that it is refused with its own message.
 */
#include "imgstat/imgstat.h"
#include "io.h"

#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

/* A reader of the header's bytes that counts them and stops at the bound. */
typedef struct header_reader {
  ist_bytes *in;
  size_t pos;   /* bytes read */
  int too_long; /* the bound was reached */
} header_reader;

static int next(header_reader *r) {
  if (r->pos >= IST_NETPBM_HEADER_MAX) {
    r->too_long = 1;
    return -1;
  }
  int c = ist_bytes_next(r->in);
  if (c >= 0)
    r->pos++;
  return c;
}

/* Skips a comment whose '#' was read: returns the byte that ends it ('\n',
 * '\r') or -1. */
static int skip_comment(header_reader *r) {
  int c;
  do
    c = next(r);
  while (c >= 0 && c != '\n' && c != '\r');
  return c;
}

/* Reads the next field into tok (at most size - 1 bytes): returns the byte
 * that ended it (whitespace, '#'; -1: the end of the input), -2 when the
 * field is longer than tok, -3 when the input ends before a field. */
static int field(header_reader *r, char *tok, size_t size) {
  int c = next(r);
  for (;;) {
    while (ist_is_space(c))
      c = next(r);
    if (c != '#')
      break;
    c = skip_comment(r);
  }
  size_t k = 0;
  while (c >= 0 && !ist_is_space(c) && c != '#') {
    if (k + 1 >= size)
      return -2;
    tok[k++] = (char)c;
    c = next(r);
  }
  tok[k] = '\0';
  return k ? c : -3;
}

/* A field that must be a decimal number (up to INT_MAX, as every reader of
 * these formats takes). */
static imgstat_status number(const char *tok, const char *what,
                             const char *format, uint32_t *value,
                             imgstat_error *err) {
  uint64_t v = 0;
  for (const char *p = tok; *p; p++) {
    if (*p < '0' || *p > '9')
      return ist_corrupt(err, format, "header's %s \"%s\" is not a number",
                         what, tok);
    v = v * 10 + (uint64_t)(*p - '0');
    if (v > INT32_MAX)
      return ist_corrupt(err, format, "header's %s %s is too large", what, tok);
  }
  *value = (uint32_t)v;
  return IMGSTAT_OK;
}

imgstat_status ist_netpbm_header_read(ist_source *src, const char *format,
                                      ist_netpbm_header *h,
                                      imgstat_error *err) {
  memset(h, 0, sizeof *h);
  ist_bytes *in = malloc(sizeof *in);
  if (!in)
    return imgstat_error_set(err, IMGSTAT_ERR_NOMEM, "out of memory");
  imgstat_status s = ist_bytes_start(in, src, 0, format, err);
  if (s != IMGSTAT_OK) {
    free(in);
    return s;
  }
  header_reader r = {in, 0, 0};
  int p = next(&r);
  h->type = (char)next(&r);
  int pfm = h->type == 'F' || h->type == 'f';
  int bitmap = h->type == '1' || h->type == '4';
  const char *names[3] = {"width", "height", pfm ? "scale" : "maxval"};
  int fields = bitmap ? 2 : 3;
  int end = 0;
  if (p != 'P' || !(pfm || (h->type >= '1' && h->type <= '6')))
    s = ist_corrupt(err, format, "no Netpbm signature");
  h->maxval = 1;
  for (int f = 0; f < fields && s == IMGSTAT_OK; f++) {
    char tok[sizeof h->scale];
    end = field(&r, tok, sizeof tok);
    if (end == -2)
      s = ist_corrupt(err, format, "header's %s is longer than %zu bytes",
                      names[f], sizeof tok - 1);
    else if (r.too_long)
      break;
    else if (end == -3)
      s = ist_corrupt(err, format, "header ends before its %s", names[f]);
    else if (f == 2 && pfm)
      memcpy(h->scale, tok, sizeof tok);
    else
      s = number(tok, names[f], format,
                 f == 0   ? &h->width
                 : f == 1 ? &h->height
                          : &h->maxval,
                 err);
  }
  /* The last field's end: one whitespace byte, or a comment up to its line
   * end, then the data. */
  if (s == IMGSTAT_OK && end == '#')
    end = skip_comment(&r);
  if (s == IMGSTAT_OK && r.too_long)
    s = ist_corrupt(err, format, "header is longer than %u MiB",
                    (unsigned)(IST_NETPBM_HEADER_MAX >> 20));
  else if (s == IMGSTAT_OK && end < 0)
    s = ist_corrupt(err, format, "file ends in its header");
  if (s == IMGSTAT_OK) {
    h->data_offset = r.pos;
    h->crlf = end == '\r' && next(&r) == '\n';
  }
  if (s == IMGSTAT_OK && in->src->read_errno)
    s = imgstat_error_set(err, IMGSTAT_ERR_IO, "%s",
                          strerror(in->src->read_errno));
  free(in);
  return s;
}
