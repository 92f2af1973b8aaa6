/*
 * FITS: the first HDU holding an image of 2 axes, or 3 with 1, 3 or 4 planes
 * (the planes are the channels: Y, RGB, RGBA).
 *
 * The headers are ours to read (cfitsio converts some keyword values into
 * fixed buffers and trusts sizes it reads): every card
 * imgstat uses is taken as a bounded string and parsed by the one number
 * grammar (imgstat_number_length), an out-of-range value refused naming its
 * card. Uncompressed images are read here, row by row from the source: no
 * copy of the file, and the memory follows the image, not the file.
 * Tile-compressed images (a BINTABLE with ZIMAGE = T) go to cfitsio, but only
 * after every keyword and every tile descriptor it will trust was checked
 * here, and cfitsio sees a header written here from the checked values (no
 * card of the file) over a copy of that HDU's table and heap alone.
 *
 * Values are the physical ones, BZERO + BSCALE * stored: BITPIX 8 is 8-bit;
 * BITPIX 16 with BZERO 32768 (unsigned 16-bit) is 16-bit; BITPIX -32
 * unscaled is float as stored; everything else (signed 16-bit, 32 and 64-bit
 * integers, -64, any other scaling) becomes 32-bit floats when every value
 * is exactly one, else is refused naming the first that is not. The test is
 * exact: stored integers are kept as 64-bit integers, and BZERO + BSCALE *
 * stored is computed without rounding (fits_exact). Integer images with a
 * BLANK keyword become floats with NaN for the blank pixels, which the float
 * path counts (nan_count), as it counts NaN in float data. Rows are not
 * flipped: FITS pixel (i, j) (from 1) is imgstat's (x, y) = (i - 1, j - 1),
 * numpy's data[j - 1, i - 1].
 */
#include "dlib.h"
#include "image_rows.h"
#include "imgstat/imgstat.h"
#include "io.h"

#ifdef IMGSTAT_HAVE_CFITSIO

#include <errno.h>
#include <fitsio.h>
#include <inttypes.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <zlib.h>

/* cfitsio, loaded when the first tile-compressed FITS file is opened (dlib.h):
 * the functions called below, through the loaded table. */
/* clang-format off */
#define FITS_SYMBOLS(X) \
  X(ffclos) \
  X(ffgerr) \
  X(ffgipr) \
  X(ffgpv) \
  X(ffmahd) \
  X(ffomem) \
  X(fits_is_compressed_image)
/* clang-format on */
IST_DLIB_TABLE(fits, FITS_SYMBOLS);
#define ffclos IST_DLIB_FN(fits, ffclos)
#define ffgerr IST_DLIB_FN(fits, ffgerr)
#define ffgipr IST_DLIB_FN(fits, ffgipr)
#define ffgpv IST_DLIB_FN(fits, ffgpv)
#define ffmahd IST_DLIB_FN(fits, ffmahd)
#define ffomem IST_DLIB_FN(fits, ffomem)
#define fits_is_compressed_image IST_DLIB_FN(fits, fits_is_compressed_image)
static const char *const fits_files[] = {IMGSTAT_SONAME_CFITSIO,
                                         IMGSTAT_PATH_CFITSIO, NULL};
static ist_dlib fits_dlib =
    IST_DLIB_ROW(fits, "tile-compressed FITS", "cfitsio", fits_files, 0);
ist_dlib *const ist_fits_dlibs[] = {&fits_dlib, NULL};

#define FITS_BLOCK 2880
#define FITS_MAX_AXES 999
/* the columns of a tile-compressed table imgstat takes */
#define FITS_MAX_FIELDS 5
/* the most pixels of one compression tile (cfitsio counts them in an int) */
#define FITS_MAX_TILE (UINT64_C(1) << 26)

/* ---- exact arithmetic: m * 2^e, m odd or 0 --------------------------------
 */

typedef __int128 fits_i128;
typedef struct fits_exact {
  fits_i128 m;
  int e;
} fits_exact;

static fits_exact exact_make(fits_i128 m, int e) {
  fits_exact x = {m, e};
  if (m == 0) {
    x.e = 0;
    return x;
  }
  while (x.m % 2 == 0) {
    x.m /= 2;
    x.e++;
  }
  return x;
}

static int bit_length(fits_i128 m) {
  unsigned __int128 u = m < 0 ? -(unsigned __int128)m : (unsigned __int128)m;
  int n = 0;
  while (u) {
    u >>= 1;
    n++;
  }
  return n;
}

/* A finite double, exactly. */
static fits_exact exact_of_double(double d) {
  int e;
  double f = frexp(d, &e); /* d = f * 2^e, 0.5 <= |f| < 1 */
  return exact_make((fits_i128)(int64_t)ldexp(f, 53), e - 53);
}

/* a * b; 0 when it does not fit (never for 64-bit operands). */
static int exact_mul(fits_exact a, fits_exact b, fits_exact *out) {
  if (bit_length(a.m) + bit_length(b.m) > 126)
    return 0;
  *out = exact_make(a.m * b.m, a.e + b.e);
  return 1;
}

/* a + b; 0 when the sum spans more than 126 bits (it is then no float). */
static int exact_add(fits_exact a, fits_exact b, fits_exact *out) {
  if (a.m == 0 || b.m == 0) {
    *out = a.m == 0 ? b : a;
    return 1;
  }
  if (a.e < b.e) {
    fits_exact t = a;
    a = b;
    b = t;
  }
  /* a has the higher exponent: shift it down to b's */
  int d = a.e - b.e;
  if (bit_length(a.m) + d > 125 || bit_length(b.m) > 125)
    return 0;
  *out = exact_make(a.m * ((fits_i128)1 << d) + b.m, b.e);
  return 1;
}

/* Whether x is exactly a 32-bit float; *f is that float. */
static int exact_to_float(fits_exact x, float *f) {
  if (x.m == 0) {
    *f = 0.0f;
    return 1;
  }
  int b = bit_length(x.m);
  if (b > 24 || x.e < -149 || x.e + b > 128)
    return 0;
  *f = ldexpf((float)(int32_t)x.m, x.e);
  return 1;
}

/* ---- header cards ----------------------------------------------------------
 * A card is 80 bytes: the keyword in bytes 0-7, "= " in 8-9 for a value,
 * then the value (a quoted string, or a token ending at a '/' or the end),
 * at most 70 bytes. */

typedef struct fits_hdu {
  uint64_t head_at;    /* the header's first byte */
  uint64_t data_at;    /* the data's first byte */
  uint64_t data_bytes; /* the data's size without its padding */
  int primary;
  char xtension[72];
  int64_t bitpix, naxis, pcount, gcount, tfields, theap;
  uint64_t naxes[FITS_MAX_AXES + 1]; /* NAXISn, from 1 */
  uint64_t zaxes[4];                 /* a tiled image's ZNAXISn, from 1 */
  unsigned char have_naxes[FITS_MAX_AXES + 1];
  int have_bitpix, have_naxis, have_pcount, have_gcount, have_tfields,
      have_theap, groups;
  /* the image's scaling and blank value */
  int have_bscale, have_bzero, have_blank;
  fits_exact bscale, bzero;
  int64_t blank;
  /* tile compression (the tiled image convention) */
  int zimage, have_zbitpix, have_znaxis, have_zdither0, have_zblank,
      have_zscale, have_zzero;
  char zcmptype[72], zquantiz[72];
  int64_t zbitpix, znaxis, zdither0, zblank;
  double zscale, zzero;
  int64_t znaxes[4], ztile[4]; /* from 1; 0: absent */
  char zname[3][72];           /* ZNAME1, ZNAME2 */
  char zval[3][72];            /* ZVAL1, ZVAL2 as written */
  char ttype[FITS_MAX_FIELDS + 1][72], tform[FITS_MAX_FIELDS + 1][72];
} fits_hdu;

/* A value for a message: printable ASCII, at most 24 characters. */
static const char *shown(const char *v, char out[32]) {
  size_t n = 0, i = 0;
  for (; v[i] && n < 24; i++)
    out[n++] = v[i] >= 32 && v[i] < 127 && v[i] != '"' ? v[i] : '?';
  if (v[i])
    memcpy(out + n, "...", 3), n += 3;
  out[n] = '\0';
  return out;
}

static imgstat_status bad_card(imgstat_error *err, const char *key,
                               const char *v, const char *why) {
  char s[32];
  return ist_corrupt(err, "FITS", "card %s: value \"%s\" %s", key, shown(v, s),
                     why);
}

/* An integer in [lo, hi] (no point, no exponent). */
static imgstat_status card_int(const char *key, const char *v, int64_t lo,
                               int64_t hi, int64_t *out, imgstat_error *err) {
  size_t n = strlen(v);
  if (n == 0 || imgstat_number_length(v) != n || strpbrk(v, ".eE"))
    return bad_card(err, key, v, "is not an integer");
  const char *p = v + (v[0] == '+' || v[0] == '-');
  uint64_t u = 0;
  for (; *p; p++) {
    if (u > (UINT64_MAX - 9) / 10)
      return bad_card(err, key, v, "is out of range");
    u = u * 10 + (uint64_t)(*p - '0');
  }
  fits_i128 x = v[0] == '-' ? -(fits_i128)u : (fits_i128)u;
  if (x < lo || x > hi) {
    char why[96];
    snprintf(why, sizeof why, "is out of range (%" PRId64 " to %" PRId64 ")",
             lo, hi);
    return bad_card(err, key, v, why);
  }
  *out = (int64_t)x;
  return IMGSTAT_OK;
}

/* A real number (FITS writes the exponent of doubles with D), exactly: an
 * integer of 64 bits as it is, else the nearest double (as every FITS
 * reader takes it). *d: its nearest double. */
static imgstat_status card_real(const char *key, const char *v, fits_exact *ex,
                                double *d, imgstat_error *err) {
  char t[72];
  size_t n = strlen(v);
  if (n == 0 || n >= sizeof t)
    return bad_card(err, key, v, "is not a number");
  for (size_t i = 0; i <= n; i++)
    t[i] = v[i] == 'D' || v[i] == 'd' ? 'E' : v[i];
  if (imgstat_number_length(t) != n)
    return bad_card(err, key, v, "is not a number");
  int64_t i64;
  imgstat_error ignored;
  if (!strpbrk(t, ".eE") &&
      card_int(key, t, INT64_MIN, INT64_MAX, &i64, &ignored) == IMGSTAT_OK) {
    if (ex)
      *ex = exact_make(i64, 0);
    if (d)
      *d = (double)i64;
    return IMGSTAT_OK;
  }
  double x;
  imgstat_number_read(t, &x);
  if (!isfinite(x))
    return bad_card(err, key, v, "is out of range");
  if (ex)
    *ex = exact_of_double(x);
  if (d)
    *d = x;
  return IMGSTAT_OK;
}

static imgstat_status card_logical(const char *key, const char *v, int *out,
                                   imgstat_error *err) {
  if (strcmp(v, "T") && strcmp(v, "F"))
    return bad_card(err, key, v, "is not T or F");
  *out = v[0] == 'T';
  return IMGSTAT_OK;
}

/* The value of a card into v (NUL-terminated, at most 70 bytes): 1 for a
 * string (quotes removed, '' made ', trailing spaces dropped), 0 for any
 * other value (spaces around it dropped), -1 for a card without one or a
 * string without its closing quote. */
static int card_value(const unsigned char *card, char v[72]) {
  if (card[8] != '=' || card[9] != ' ')
    return -1;
  size_t i = 10, n = 0;
  while (i < 80 && card[i] == ' ')
    i++;
  if (i < 80 && card[i] == '\'') {
    for (i++; i < 80; i++) {
      if (card[i] == '\'') {
        if (i + 1 < 80 && card[i + 1] == '\'') {
          v[n++] = '\'';
          i++;
          continue;
        }
        while (n > 0 && v[n - 1] == ' ')
          n--;
        v[n] = '\0';
        return 1;
      }
      v[n++] = (char)card[i];
    }
    v[0] = '\0';
    return -1;
  }
  for (; i < 80 && card[i] != '/'; i++)
    v[n++] = card[i] ? (char)card[i] : '?';
  while (n > 0 && v[n - 1] == ' ')
    n--;
  v[n] = '\0';
  return 0;
}

/* Keyword key followed by a number in [1, max]: that number, else 0. */
static int indexed(const char *key, const char *stem, int max) {
  size_t n = strlen(stem);
  if (strncmp(key, stem, n) || !key[n] || key[n] == '0')
    return 0;
  int i = 0;
  for (const char *p = key + n; *p; p++) {
    if (*p < '0' || *p > '9')
      return 0;
    i = i * 10 + (*p - '0');
  }
  return i <= max ? i : 0;
}

/* One card of an HDU's header (not its first), the first of each keyword
 * counting. */
static imgstat_status take_card(fits_hdu *h, const unsigned char *card,
                                imgstat_error *err) {
  char key[9], v[72];
  memcpy(key, card, 8);
  key[8] = '\0';
  for (int i = 7; i >= 0 && key[i] == ' '; i--)
    key[i] = '\0';
  int kind = card_value(card, v);
  if (kind < 0)
    return IMGSTAT_OK;
  if (kind == 1 && strcmp(key, "XTENSION") && strcmp(key, "ZCMPTYPE") &&
      strcmp(key, "ZQUANTIZ") && strncmp(key, "ZNAME", 5) &&
      strncmp(key, "TTYPE", 5) && strncmp(key, "TFORM", 5)) {
    /* a string where a number or T/F belongs: kept quoted, refused by the
     * parsers below if imgstat reads that card */
    char q[72];
    snprintf(q, sizeof q, "'%.68s'", v);
    memcpy(v, q, sizeof q);
  }
  int n;
  imgstat_status s = IMGSTAT_OK;
#define ONCE(flag) if (!(flag) && ((flag) = 1))
  if (!strcmp(key, "BITPIX")) {
    ONCE(h->have_bitpix) s = card_int(key, v, -64, 64, &h->bitpix, err);
  } else if (!strcmp(key, "NAXIS")) {
    ONCE(h->have_naxis)
    s = card_int(key, v, 0, FITS_MAX_AXES, &h->naxis, err);
  } else if ((n = indexed(key, "NAXIS", FITS_MAX_AXES)) != 0) {
    int64_t x;
    ONCE(h->have_naxes[n]) {
      s = card_int(key, v, 0, INT64_MAX, &x, err);
      h->naxes[n] = (uint64_t)x;
    }
  } else if (!strcmp(key, "PCOUNT")) {
    ONCE(h->have_pcount) s = card_int(key, v, 0, INT64_MAX, &h->pcount, err);
  } else if (!strcmp(key, "GCOUNT")) {
    ONCE(h->have_gcount) s = card_int(key, v, 0, INT64_MAX, &h->gcount, err);
  } else if (!strcmp(key, "GROUPS")) {
    s = card_logical(key, v, &h->groups, err);
  } else if (!strcmp(key, "BSCALE")) {
    ONCE(h->have_bscale) s = card_real(key, v, &h->bscale, NULL, err);
  } else if (!strcmp(key, "BZERO")) {
    ONCE(h->have_bzero) s = card_real(key, v, &h->bzero, NULL, err);
  } else if (!strcmp(key, "BLANK")) {
    ONCE(h->have_blank)
    s = card_int(key, v, INT64_MIN, INT64_MAX, &h->blank, err);
  } else if (!strcmp(key, "ZIMAGE")) {
    s = card_logical(key, v, &h->zimage, err);
  } else if (!strcmp(key, "ZCMPTYPE") && kind == 1) {
    snprintf(h->zcmptype, sizeof h->zcmptype, "%s", v);
  } else if (!strcmp(key, "ZQUANTIZ") && kind == 1) {
    snprintf(h->zquantiz, sizeof h->zquantiz, "%s", v);
  } else if (!strcmp(key, "ZBITPIX")) {
    ONCE(h->have_zbitpix) s = card_int(key, v, -64, 64, &h->zbitpix, err);
  } else if (!strcmp(key, "ZNAXIS")) {
    ONCE(h->have_znaxis)
    s = card_int(key, v, 0, FITS_MAX_AXES, &h->znaxis, err);
  } else if ((n = indexed(key, "ZNAXIS", 3)) != 0) {
    if (!h->znaxes[n])
      s = card_int(key, v, 1, INT64_MAX, &h->znaxes[n], err);
  } else if ((n = indexed(key, "ZTILE", 3)) != 0) {
    if (!h->ztile[n])
      s = card_int(key, v, 1, INT64_MAX, &h->ztile[n], err);
  } else if ((n = indexed(key, "ZNAME", 2)) != 0) {
    if (!h->zname[n][0])
      snprintf(h->zname[n], sizeof h->zname[n], "%s", kind == 1 ? v : "?");
  } else if ((n = indexed(key, "ZVAL", 2)) != 0) {
    if (!h->zval[n][0])
      snprintf(h->zval[n], sizeof h->zval[n], "%s", v);
  } else if (!strcmp(key, "ZDITHER0")) {
    ONCE(h->have_zdither0) s = card_int(key, v, 1, 10000, &h->zdither0, err);
  } else if (!strcmp(key, "ZBLANK")) {
    ONCE(h->have_zblank)
    s = card_int(key, v, INT32_MIN, INT32_MAX, &h->zblank, err);
  } else if (!strcmp(key, "ZSCALE")) {
    ONCE(h->have_zscale) s = card_real(key, v, NULL, &h->zscale, err);
  } else if (!strcmp(key, "ZZERO")) {
    ONCE(h->have_zzero) s = card_real(key, v, NULL, &h->zzero, err);
  } else if (!strcmp(key, "TFIELDS")) {
    ONCE(h->have_tfields) s = card_int(key, v, 0, 999, &h->tfields, err);
  } else if (!strcmp(key, "THEAP")) {
    ONCE(h->have_theap) s = card_int(key, v, 0, INT64_MAX, &h->theap, err);
  } else if ((n = indexed(key, "TTYPE", FITS_MAX_FIELDS)) != 0) {
    if (!h->ttype[n][0])
      snprintf(h->ttype[n], sizeof h->ttype[n], "%s", kind == 1 ? v : "?");
  } else if ((n = indexed(key, "TFORM", FITS_MAX_FIELDS)) != 0) {
    if (!h->tform[n][0])
      snprintf(h->tform[n], sizeof h->tform[n], "%s", kind == 1 ? v : "?");
  }
#undef ONCE
  return s;
}

/* ---- the decoder's state ------------------------------------------------- */

enum fits_mode {
  FITS_U8,  /* BITPIX 8, unscaled, no BLANK */
  FITS_U16, /* BITPIX 16, BZERO 32768, no BLANK */
  FITS_F32, /* BITPIX -32, unscaled */
  FITS_ANY  /* the rest: exact conversion to float */
};

typedef struct fits_state {
  fits_hdu hdu; /* the image's */
  uint32_t width, height;
  int channels;
  int bitpix; /* of the samples (ZBITPIX for a tiled image) */
  enum fits_mode mode;
  int identity; /* BSCALE 1, BZERO 0 */
  int blank;    /* an integer image with BLANK: its pixels NaN */
  int64_t blank_value;
  int tiled;          /* cfitsio reads it */
  void *mem;          /* tiled: cfitsio's file in memory */
  size_t memsize;     /* and its size */
  fitsfile *f;        /* tiled */
  unsigned char *raw; /* a row as stored */
  int64_t *irow;      /* a row of integers */
  double *drow;       /* a row of floats */
} fits_state;

static imgstat_status fits_failure(int status, imgstat_error *err) {
  char text[FLEN_STATUS];
  fits_get_errstatus(status, text);
  if (status == MEMORY_ALLOCATION)
    return imgstat_error_set(err, IMGSTAT_ERR_NOMEM, "out of memory");
  return ist_corrupt(err, "FITS", "%s (cfitsio status %d)", text, status);
}

static imgstat_status seek_to(ist_source *src, uint64_t at,
                              imgstat_error *err) {
  int e = ist_source_seek(src, at);
  if (e)
    return imgstat_error_set(err, IMGSTAT_ERR_IO, "%s", strerror(e));
  return IMGSTAT_OK;
}

/* The header at byte at into *h (zeroed first). *none: at holds no HDU
 * (past the end, or bytes that do not start one: what follows the last HDU
 * is ignored, as cfitsio does). */
static imgstat_status read_header(ist_source *src, uint64_t at, fits_hdu *h,
                                  int *none, imgstat_error *err) {
  memset(h, 0, sizeof *h);
  *none = 0;
  h->head_at = at;
  imgstat_status s = seek_to(src, at, err);
  if (s != IMGSTAT_OK)
    return s;
  unsigned char block[FITS_BLOCK];
  for (uint64_t k = 0;; k++) {
    size_t got = ist_source_read(src, block, sizeof block);
    if (src->read_errno)
      return imgstat_error_set(err, IMGSTAT_ERR_IO, "%s",
                               strerror(src->read_errno));
    if (got < sizeof block) {
      if (k == 0 && at > 0) {
        *none = 1;
        return IMGSTAT_OK;
      }
      return ist_corrupt(err, "FITS",
                         "file is truncated (the header at byte %" PRIu64
                         " has no END card)",
                         at);
    }
    for (int c = 0; c < FITS_BLOCK / 80; c++) {
      const unsigned char *card = block + 80 * c;
      if (k == 0 && c == 0) {
        char v[72];
        int kind = card_value(card, v);
        if (at == 0 && !memcmp(card, "SIMPLE  ", 8) && kind == 0 &&
            !strcmp(v, "T")) {
          h->primary = 1;
        } else if (at > 0 && !memcmp(card, "XTENSION", 8) && kind == 1) {
          snprintf(h->xtension, sizeof h->xtension, "%s", v);
        } else if (at == 0) {
          return ist_corrupt(err, "FITS", "the first card is not SIMPLE = T");
        } else {
          *none = 1;
          return IMGSTAT_OK;
        }
        continue;
      }
      if (!memcmp(card, "END     ", 8)) {
        h->data_at = at + (k + 1) * FITS_BLOCK;
        return IMGSTAT_OK;
      }
      s = take_card(h, card, err);
      if (s != IMGSTAT_OK)
        return s;
    }
  }
}

/* The HDU's data size (the standard's formula), its mandatory cards
 * checked. */
static imgstat_status hdu_size(fits_hdu *h, imgstat_error *err) {
  if (!h->have_bitpix)
    return ist_corrupt(err, "FITS", "HDU at byte %" PRIu64 " has no BITPIX",
                       h->head_at);
  int64_t b = h->bitpix;
  if (b != 8 && b != 16 && b != 32 && b != 64 && b != -32 && b != -64)
    return ist_corrupt(
        err, "FITS",
        "card BITPIX: value %" PRId64 " is not 8, 16, 32, 64, -32 or -64", b);
  if (!h->have_naxis)
    return ist_corrupt(err, "FITS", "HDU at byte %" PRIu64 " has no NAXIS",
                       h->head_at);
  for (int64_t i = 1; i <= h->naxis; i++)
    if (!h->have_naxes[i])
      return ist_corrupt(err, "FITS", "card NAXIS%" PRId64 " is missing", i);
  uint64_t pcount = 0, gcount = 1;
  int64_t first = 1;
  if (!h->primary || (h->groups && h->naxis >= 1 && h->naxes[1] == 0)) {
    pcount = (uint64_t)h->pcount;
    gcount = h->have_gcount ? (uint64_t)h->gcount : 1;
    if (h->primary)
      first = 2; /* random groups: NAXIS1 is 0 */
  }
  uint64_t n = h->naxis >= first ? 1 : 0;
  for (int64_t i = first; i <= h->naxis; i++)
    if (__builtin_mul_overflow(n, h->naxes[i], &n))
      goto too_large;
  uint64_t bits;
  if (__builtin_add_overflow(n, pcount, &n) ||
      __builtin_mul_overflow(n, gcount, &n) ||
      __builtin_mul_overflow(n, (uint64_t)llabs(b), &bits) ||
      bits / 8 > (UINT64_C(1) << 62) - h->data_at)
    goto too_large;
  h->data_bytes = bits / 8;
  return IMGSTAT_OK;
too_large:
  return ist_corrupt(err, "FITS",
                     "HDU at byte %" PRIu64 " declares more data than a file "
                     "can hold",
                     h->head_at);
}

/* Whether a shape is one imgstat takes: 2 axes, or 3 of 1, 3 or 4 planes,
 * each axis from 1 to UINT32_MAX. */
static int shape_taken(int64_t naxis, const uint64_t *axes) {
  if (naxis != 2 && naxis != 3)
    return 0;
  if (naxis == 3 &&
      (axes[3] == 0 || axes[3] == 2 || axes[3] > IMGSTAT_MAX_CHANNELS))
    return 0;
  return axes[1] >= 1 && axes[2] >= 1 && axes[1] <= UINT32_MAX &&
         axes[2] <= UINT32_MAX;
}

/* ---- tile compression -----------------------------------------------------
 */

static imgstat_status tiled_refuse(imgstat_error *err, const char *fmt,
                                   const char *what) {
  char why[160];
  snprintf(why, sizeof why, fmt, what);
  return imgstat_error_set(err, IMGSTAT_ERR_UNSUPPORTED,
                           "FITS tile-compressed image: %s (imgstat takes "
                           "RICE_1, GZIP_1, GZIP_2 and PLIO_1 tiles)",
                           why);
}

/* The columns of a tile-compressed table: what each holds. */
enum { COL_DATA, COL_GZIP, COL_ZSCALE, COL_ZZERO, COL_ZBLANK, COL_KINDS };
static const char *const col_names[COL_KINDS] = {
    "COMPRESSED_DATA", "GZIP_COMPRESSED_DATA", "ZSCALE", "ZZERO", "ZBLANK"};

typedef struct fits_col {
  int kind;
  char form[8]; /* as written for cfitsio: 1PB, 1QI, 1D, 1J */
  int desc;     /* 0, or a descriptor of 8 (P) or 16 (Q) bytes */
  int elem;     /* bytes of an element of the array it describes */
  uint64_t width, at;
} fits_col;

typedef struct fits_tiled {
  fits_col cols[FITS_MAX_FIELDS];
  int ncols;
  int blocksize, bytepix, quantized;
  uint64_t tile[4], across[4]; /* a tile's size, tiles along each axis */
  uint64_t tile_pixels, tiles_across;
} fits_tiled;

/* "1PB", "PB(123)", "1D", ...: *col from the TFORM of a column. */
static int parse_tform(const char *t, fits_col *col) {
  if (t[0] == '1')
    t++;
  if (t[0] == 'P' || t[0] == 'Q') {
    char e = t[1];
    col->desc = t[0] == 'P' ? 8 : 16;
    col->elem = e == 'B' ? 1 : e == 'I' ? 2 : 0;
    if (!col->elem)
      return 0;
    const char *r = t + 2;
    if (*r == '(') {
      r++;
      size_t d = strspn(r, "0123456789");
      if (!d || d > 18 || r[d] != ')' || r[d + 1])
        return 0;
    } else if (*r) {
      return 0;
    }
    snprintf(col->form, sizeof col->form, "1%c%c", t[0], e);
    col->width = (uint64_t)col->desc;
    return 1;
  }
  if ((t[0] == 'D' || t[0] == 'J') && !t[1]) {
    snprintf(col->form, sizeof col->form, "1%c", t[0]);
    col->width = t[0] == 'D' ? 8 : 4;
    return 1;
  }
  return 0;
}

static uint64_t be_u(const unsigned char *p, int n) {
  uint64_t v = 0;
  for (int i = 0; i < n; i++)
    v = v << 8 | p[i];
  return v;
}

/* Checks a tile-compressed HDU's keywords and columns (not its data). */
static imgstat_status tiled_check(const fits_hdu *h, fits_tiled *t,
                                  imgstat_error *err) {
  memset(t, 0, sizeof *t);
  const char *z = h->zcmptype;
  int rice = !strcmp(z, "RICE_1") || !strcmp(z, "RICE_ONE");
  int gzip = !strcmp(z, "GZIP_1") || !strcmp(z, "GZIP_2");
  int plio = !strcmp(z, "PLIO_1");
  if (!strcmp(z, "HCOMPRESS_1"))
    return tiled_refuse(err,
                        "%s tiles are not taken (cfitsio's decoder "
                        "reads them without a bound)",
                        z);
  if (!rice && !gzip && !plio) {
    char s[32];
    return tiled_refuse(err, "ZCMPTYPE '%s' is not taken", shown(z, s));
  }
  if (!h->have_zbitpix)
    return ist_corrupt(err, "FITS", "tile-compressed image without ZBITPIX");
  int64_t zb = h->zbitpix;
  if (zb != 8 && zb != 16 && zb != 32 && zb != -32 && zb != -64) {
    char s[24];
    snprintf(s, sizeof s, "%" PRId64, zb);
    return tiled_refuse(err,
                        "ZBITPIX %s is not taken (8, 16, 32, -32, -64 "
                        "are)",
                        s);
  }
  if (h->bitpix != 8 || h->naxis != 2 || (h->have_gcount && h->gcount != 1))
    return ist_corrupt(err, "FITS",
                       "tile-compressed image in a table that "
                       "is not a BINTABLE of BITPIX 8 and NAXIS 2");
  /* tiles: ZTILE1 defaults to a row, the others to 1 */
  uint64_t tiles = 1;
  t->tile_pixels = 1;
  for (int i = 1; i <= h->znaxis; i++) {
    int64_t tile = h->ztile[i] ? h->ztile[i] : i == 1 ? h->znaxes[1] : 1;
    if (tile > h->znaxes[i])
      return ist_corrupt(err, "FITS",
                         "ZTILE%d = %" PRId64
                         " is larger than ZNAXIS%d = %" PRId64,
                         i, tile, i, h->znaxes[i]);
    uint64_t across =
        ((uint64_t)h->znaxes[i] + (uint64_t)tile - 1) / (uint64_t)tile;
    if (i == 1)
      t->tiles_across = across;
    t->tile[i] = (uint64_t)tile;
    t->across[i] = across;
    if (__builtin_mul_overflow(tiles, across, &tiles))
      return ist_corrupt(err, "FITS",
                         "tile-compressed image of too many tiles");
    t->tile_pixels *= (uint64_t)tile;
    if (t->tile_pixels > FITS_MAX_TILE)
      return tiled_refuse(err, "tiles of more than %s pixels are not taken",
                          "2^26");
  }
  if (tiles != h->naxes[2])
    return ist_corrupt(err, "FITS",
                       "the table has %" PRIu64 " rows for %" PRIu64 " tiles",
                       h->naxes[2], tiles);
  /* algorithm parameters: cfitsio reads ZVALn for RICE_1 alone (ZVAL1 the
   * block size; ZVAL2 the bytes a pixel, unless ZNAME2 is 'NOISEBIT', the
   * older files' name, whose pixels are 4 bytes). GZIP_1, GZIP_2 and
   * PLIO_1 take none, and cfitsio ignores their ZNAMEn (astropy's GZIP
   * floats carry ZNAME1 = 'NOISEBIT'); the header written for cfitsio
   * holds none of them. */
  t->bytepix = 4;
  if (rice) {
    int64_t v;
    if (h->zname[1][0] && strcmp(h->zname[1], "BLOCKSIZE"))
      return ist_corrupt(err, "FITS",
                         "RICE_1 tiles with ZNAME1 other than "
                         "'BLOCKSIZE'");
    if (!h->zval[1][0])
      return ist_corrupt(err, "FITS",
                         "RICE_1 tiles without ZVAL1 (the "
                         "block size)");
    imgstat_status s = card_int("ZVAL1", h->zval[1], 16, 32, &v, err);
    if (s != IMGSTAT_OK)
      return s;
    if (v != 16 && v != 32)
      return ist_corrupt(err, "FITS",
                         "RICE_1 block size %" PRId64 " (16 or 32)", v);
    t->blocksize = (int)v;
    if (!strcmp(h->zname[2], "NOISEBIT")) {
      /* bytepix stays 4 */
    } else if (h->zname[2][0] && strcmp(h->zname[2], "BYTEPIX")) {
      return ist_corrupt(err, "FITS",
                         "RICE_1 tiles with ZNAME2 other than "
                         "'BYTEPIX' or 'NOISEBIT'");
    } else if (h->zval[2][0]) {
      s = card_int("ZVAL2", h->zval[2], 1, 4, &v, err);
      if (s != IMGSTAT_OK)
        return s;
      if (v == 3)
        return ist_corrupt(err, "FITS", "RICE_1 BYTEPIX 3 (1, 2 or 4)");
      t->bytepix = (int)v;
    }
  }
  /* floats: quantized (ZSCALE, ZZERO), or stored losslessly */
  if (zb < 0) {
    const char *q = h->zquantiz;
    if (q[0] && strcmp(q, "NO_DITHER") && strcmp(q, "SUBTRACTIVE_DITHER_1") &&
        strcmp(q, "SUBTRACTIVE_DITHER_2") && strcmp(q, "NONE")) {
      char s[32];
      return tiled_refuse(err, "ZQUANTIZ '%s' is not taken", shown(q, s));
    }
  } else if (h->zquantiz[0] || h->have_zscale || h->have_zzero) {
    return ist_corrupt(err, "FITS", "integer tiles with quantization cards");
  }
  /* columns */
  if (!h->have_tfields || h->tfields < 1 || h->tfields > FITS_MAX_FIELDS)
    return tiled_refuse(err,
                        "a table of %s columns is not taken (1 to 5 "
                        "are)",
                        h->have_tfields ? "more" : "no");
  uint64_t at = 0;
  int seen[COL_KINDS] = {0};
  for (int i = 1; i <= h->tfields; i++) {
    fits_col *c = &t->cols[t->ncols++];
    c->kind = -1;
    for (int k = 0; k < COL_KINDS; k++)
      if (!strcmp(h->ttype[i], col_names[k]))
        c->kind = k;
    char s[32];
    if (c->kind < 0)
      return tiled_refuse(err, "a column '%s' is not taken",
                          shown(h->ttype[i], s));
    if (seen[c->kind]++)
      return ist_corrupt(err, "FITS", "two %s columns", col_names[c->kind]);
    if (!parse_tform(h->tform[i], c))
      return ist_corrupt(err, "FITS", "column %s: TFORM '%s'",
                         col_names[c->kind], shown(h->tform[i], s));
    int want_desc = c->kind == COL_DATA || c->kind == COL_GZIP;
    if ((want_desc != (c->desc != 0)) ||
        (c->kind == COL_GZIP && c->elem != 1) ||
        (c->kind == COL_DATA && (c->elem == 2) != plio) ||
        ((c->kind == COL_ZSCALE || c->kind == COL_ZZERO) &&
         strcmp(c->form, "1D")) ||
        (c->kind == COL_ZBLANK && strcmp(c->form, "1J")))
      return ist_corrupt(err, "FITS", "column %s of TFORM '%s'",
                         col_names[c->kind], shown(h->tform[i], s));
    c->at = at;
    at += c->width;
  }
  if (!seen[COL_DATA])
    return ist_corrupt(err, "FITS",
                       "tile-compressed image without a "
                       "COMPRESSED_DATA column");
  if (at != h->naxes[1])
    return ist_corrupt(err, "FITS",
                       "table rows of %" PRIu64
                       " bytes (NAXIS1) whose columns take %" PRIu64,
                       h->naxes[1], at);
  /* quantized floats as cfitsio tells them: a ZSCALE or ZZERO column and
   * ZQUANTIZ not 'NONE' (ZSCALE and ZZERO as cards alone, or ZQUANTIZ
   * 'NONE', make it read the tiles as unquantized floats) */
  t->quantized = zb < 0 && (seen[COL_ZSCALE] || seen[COL_ZZERO]) &&
                 strcmp(h->zquantiz, "NONE");
  /* floats are stored as floats only by GZIP (RICE_1 and PLIO_1 hold
   * integers, quantized floats among them: cfitsio would read their tiles
   * as unquantized floats past the end) */
  if (zb < 0 && !t->quantized && !gzip)
    return ist_corrupt(err, "FITS",
                       "%s tiles of ZBITPIX %" PRId64
                       " without ZSCALE and ZZERO columns, or with ZQUANTIZ "
                       "'NONE' (unquantized floats are GZIP's alone)",
                       z, zb);
  if (zb > 0 && (seen[COL_GZIP] || seen[COL_ZSCALE] || seen[COL_ZZERO]))
    return ist_corrupt(err, "FITS", "integer tiles with float columns");
  if (zb < 0 && (seen[COL_ZSCALE] || h->have_zscale) !=
                    (seen[COL_ZZERO] || h->have_zzero))
    return ist_corrupt(err, "FITS", "ZSCALE without ZZERO, or the reverse");
  if (zb > 0 && (seen[COL_ZBLANK] || h->have_zblank) && h->have_blank)
    return ist_corrupt(err, "FITS", "both ZBLANK and BLANK");
  if (zb > 0 && seen[COL_ZBLANK])
    return tiled_refuse(err, "%s of integer tiles are not taken",
                        "ZBLANK columns");
  return IMGSTAT_OK;
}

/* Whether cfitsio's Rice decoder (fits_rdecomp, _short, _byte: bytepix 4,
 * 2, 1) stays inside a tile's n compressed bytes c while it decodes nx
 * pixels in blocks of nblock. It checks its input's end only after each
 * block, and a run of zero bytes keeps it reading (fuzz_fits found it:
 * tests/data/fuzz/fits-rice-zero-run.bin). The same reads, counted. */
static int rice_stays_inside(const unsigned char *c, uint64_t n, uint64_t nx,
                             int bytepix, int nblock) {
  int fsbits = bytepix == 1 ? 3 : bytepix == 2 ? 4 : 5;
  int fsmax = bytepix == 1 ? 6 : bytepix == 2 ? 14 : 25;
  int bbits = 1 << fsbits;
  uint64_t at = (uint64_t)bytepix; /* the first pixel, as stored */
  if (n <= at)
    return 0;
  unsigned int b = c[at++];
  int nbits = 8;
#define RICE_NEXT(v)                                                           \
  do {                                                                         \
    if (at >= n)                                                               \
      return 0;                                                                \
    (v) = c[at++];                                                             \
  } while (0)
  for (uint64_t i = 0; i < nx;) {
    unsigned int byte;
    nbits -= fsbits;
    while (nbits < 0) {
      RICE_NEXT(byte);
      b = (b << 8) | byte;
      nbits += 8;
    }
    int fs = (int)(b >> nbits) - 1;
    b &= (1u << nbits) - 1;
    uint64_t imax = i + (uint64_t)nblock < nx ? i + (uint64_t)nblock : nx;
    if (fs < 0) {
      i = imax;
    } else if (fs == fsmax) {
      for (; i < imax; i++) {
        int k = bbits - nbits;
        for (k -= 8; k >= 0; k -= 8)
          RICE_NEXT(byte);
        if (nbits > 0) {
          RICE_NEXT(b);
          b &= (1u << nbits) - 1;
        } else {
          b = 0;
        }
      }
    } else {
      for (; i < imax; i++) {
        /* a run of zero bits (the quotient: any length, a valid tile's
         * large differences make long ones), counted by the decoder in
         * nbits; what it keeps after the run depends on b alone (< 2^8) */
        while (b == 0)
          RICE_NEXT(b);
        int top = 0;
        for (unsigned int v = b; v; v >>= 1)
          top++;
        nbits = top - 1; /* nbits - nzero - 1, nzero = nbits - top */
        b ^= 1u << nbits;
        nbits -= fs;
        while (nbits < 0) {
          RICE_NEXT(byte);
          b = (b << 8) | byte;
          nbits += 8;
        }
        b &= (1u << nbits) - 1;
      }
    }
  }
#undef RICE_NEXT
  return 1;
}

/* Whether a GZIP tile's n bytes c inflate, as cfitsio inflates them (one
 * gzip member), to at most most bytes (scratch: most + 1 bytes); *size:
 * how many. cfitsio takes a tile's type from the size it inflates to, and
 * when inflating fails it tests that size uninitialised (valgrind saw it; a
 * size that happened to match a wider type would make it swap past its
 * buffer); it also grows its buffer without a bound while it inflates. */
static int gzip_inflates(const unsigned char *c, uint64_t n, uint64_t most,
                         unsigned char *scratch, uint64_t *size) {
  z_stream z;
  memset(&z, 0, sizeof z);
  if (n > UINT32_MAX || most >= UINT32_MAX || inflateInit2(&z, 15 + 16) != Z_OK)
    return 0;
  z.next_in = (unsigned char *)c;
  z.avail_in = (uInt)n;
  z.next_out = scratch;
  z.avail_out = (uInt)most + 1;
  int r = inflate(&z, Z_FINISH);
  int ok = r == Z_STREAM_END && z.total_out <= most;
  *size = z.total_out;
  inflateEnd(&z);
  return ok;
}

/* Checks every tile's descriptors against the heap: table (the table's
 * rows, then the heap from theap) as copied. */
static imgstat_status tiled_check_rows(const fits_hdu *h, fits_tiled *t,
                                       const unsigned char *table,
                                       uint64_t theap, uint64_t heap,
                                       imgstat_error *err) {
  int plio = !strcmp(h->zcmptype, "PLIO_1");
  int gzip = !strncmp(h->zcmptype, "GZIP_", 5);
  int rice = t->blocksize != 0;
  unsigned char *scratch = NULL; /* a GZIP tile, inflated */
  for (uint64_t r = 0; r < h->naxes[2]; r++) {
    const unsigned char *row = table + r * h->naxes[1];
    /* the pixels of this tile (those at the far edges are cut) */
    uint64_t pixels = 1, k = r;
    for (int i = 1; i <= h->znaxis; i++) {
      uint64_t at = k % t->across[i] * t->tile[i];
      uint64_t left = (uint64_t)h->znaxes[i] - at;
      pixels *= left < t->tile[i] ? left : t->tile[i];
      k /= t->across[i];
    }
    for (int i = 0; i < t->ncols; i++) {
      const fits_col *c = &t->cols[i];
      if (!c->desc)
        continue;
      int w = c->desc / 2;
      uint64_t count = be_u(row + c->at, w), off = be_u(row + c->at + w, w);
      if (w == 4) { /* P: signed 32-bit */
        if (count >> 31 || off >> 31)
          goto bad;
      } else if (count >> 62 || off >> 62) {
        goto bad;
      }
      if (count > heap / (uint64_t)c->elem ||
          off > heap - count * (uint64_t)c->elem)
        goto bad;
      if (plio && c->kind == COL_DATA && count > 0) {
        /* pl_l2pi reads as many 16-bit words as the list's header says */
        const unsigned char *ll = table + theap + off;
        if (count < 7)
          goto bad;
        int64_t w3 = (int16_t)be_u(ll + 4, 2);
        int64_t len = w3 > 0 ? w3
                             : (int64_t)(int16_t)be_u(ll + 8, 2) * 32768 +
                                   (int16_t)be_u(ll + 6, 2);
        int64_t first = w3 > 0 ? 4 : (int16_t)be_u(ll + 2, 2) + 1;
        if (len > (int64_t)count || first < 1)
          goto bad;
      }
      if (rice && c->kind == COL_DATA && count > 0 &&
          !rice_stays_inside(table + theap + off, count, pixels, t->bytepix,
                             t->blocksize))
        goto bad_rice;
      if ((gzip || c->kind == COL_GZIP) && count > 0) {
        /* Integers (and quantized floats) in 1, 2 or 4 bytes a pixel,
         * whatever ZBITPIX (cfitsio takes the tile's type from its size:
         * m13_gzip.fits's 16-bit image has tiles of 4-byte integers; 8
         * bytes would be doubles, which it leaves unconverted into
         * integers); unquantized floats at their stored width (it reads
         * those of another size past their end). */
        int ints = h->zbitpix > 0 || (t->quantized && c->kind == COL_DATA);
        uint64_t width = ints ? 4 : (uint64_t)-h->zbitpix / 8, size;
        if (!scratch)
          scratch = malloc(t->tile_pixels * 8 + 1);
        if (!scratch)
          return imgstat_error_set(err, IMGSTAT_ERR_NOMEM, "out of memory");
        if (!gzip_inflates(table + theap + off, count, pixels * width, scratch,
                           &size) ||
            (size != pixels * width &&
             !(ints && (size == pixels || size == pixels * 2))))
          goto bad_size;
      }
    }
  }
  free(scratch);
  return IMGSTAT_OK;
bad:
  free(scratch);
  return ist_corrupt(err, "FITS", "a tile's data lies outside the heap");
bad_rice:
  free(scratch);
  return ist_corrupt(err, "FITS",
                     "a RICE_1 tile's data ends before its "
                     "pixels");
bad_size:
  free(scratch);
  return ist_corrupt(err, "FITS",
                     "a GZIP tile does not inflate to its %s pixels",
                     h->zbitpix > 0 ? "integer" : "float");
}

static void put_card(char **p, const char *key, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 3, 4)))
#endif
    ;
static void put_card(char **p, const char *key, const char *fmt, ...) {
  char v[72], card[81];
  va_list ap;
  va_start(ap, fmt);
  imgstat_number_vsnprintf(v, sizeof v, fmt, ap);
  va_end(ap);
  snprintf(card, sizeof card, "%-8.8s= %-70.70s", key, v);
  memcpy(*p, card, 80);
  *p += 80;
}

/* cfitsio's file: a primary HDU without data, then this HDU with a header
 * written here from the checked values and the HDU's table and heap. */
static imgstat_status tiled_open(imgstat_decoder *d, fits_state *fs,
                                 const fits_tiled *t, imgstat_error *err) {
  /* only tile-compressed data is cfitsio's */
  imgstat_status loaded = ist_dlib_need(&fits_dlib, err);
  if (loaded != IMGSTAT_OK)
    return loaded;
  const fits_hdu *h = &fs->hdu;
  uint64_t table = h->naxes[1] * h->naxes[2];
  uint64_t bytes = h->data_bytes; /* table + PCOUNT */
  uint64_t theap = h->have_theap ? (uint64_t)h->theap : table;
  if (theap < table || theap > bytes)
    return ist_corrupt(err, "FITS", "THEAP %" PRIu64 " outside the data",
                       theap);
  /* at most 2 header blocks hold the cards written here */
  uint64_t head = 2 * FITS_BLOCK;
  uint64_t size =
      FITS_BLOCK + head + (bytes + FITS_BLOCK - 1) / FITS_BLOCK * FITS_BLOCK;
  char *mem = calloc(1, size);
  if (!mem)
    return imgstat_error_set(err, IMGSTAT_ERR_NOMEM, "out of memory");
  fs->mem = mem;
  fs->memsize = size;
  memset(mem, ' ', FITS_BLOCK + head);
  char *p = mem;
  put_card(&p, "SIMPLE", "%20s", "T");
  put_card(&p, "BITPIX", "%20d", 8);
  put_card(&p, "NAXIS", "%20d", 0);
  put_card(&p, "EXTEND", "%20s", "T");
  memcpy(p, "END", 3);
  p = mem + FITS_BLOCK;
  put_card(&p, "XTENSION", "'BINTABLE'");
  put_card(&p, "BITPIX", "%20d", 8);
  put_card(&p, "NAXIS", "%20d", 2);
  put_card(&p, "NAXIS1", "%20" PRIu64, h->naxes[1]);
  put_card(&p, "NAXIS2", "%20" PRIu64, h->naxes[2]);
  put_card(&p, "PCOUNT", "%20" PRIu64, bytes - table);
  put_card(&p, "GCOUNT", "%20d", 1);
  put_card(&p, "TFIELDS", "%20d", t->ncols);
  for (int i = 0; i < t->ncols; i++) {
    char key[24]; /* TTYPEn, TFORMn (room for any int: -Wformat) */
    snprintf(key, sizeof key, "TTYPE%d", i + 1);
    put_card(&p, key, "'%s'", col_names[t->cols[i].kind]);
    snprintf(key, sizeof key, "TFORM%d", i + 1);
    put_card(&p, key, "'%s'", t->cols[i].form);
  }
  if (theap != table)
    put_card(&p, "THEAP", "%20" PRIu64, theap);
  put_card(&p, "ZIMAGE", "%20s", "T");
  put_card(&p, "ZCMPTYPE", "'%s'", h->zcmptype);
  put_card(&p, "ZBITPIX", "%20" PRId64, h->zbitpix);
  put_card(&p, "ZNAXIS", "%20" PRId64, h->znaxis);
  for (int i = 1; i <= h->znaxis; i++) {
    char key[24]; /* ZNAXISn, ZTILEn (room for any int: -Wformat) */
    snprintf(key, sizeof key, "ZNAXIS%d", i);
    put_card(&p, key, "%20" PRId64, h->znaxes[i]);
    snprintf(key, sizeof key, "ZTILE%d", i);
    put_card(&p, key, "%20" PRId64,
             h->ztile[i] ? h->ztile[i]
             : i == 1    ? h->znaxes[1]
                         : 1);
  }
  if (t->blocksize) {
    put_card(&p, "ZNAME1", "'BLOCKSIZE'");
    put_card(&p, "ZVAL1", "%20d", t->blocksize);
    put_card(&p, "ZNAME2", "'BYTEPIX'");
    put_card(&p, "ZVAL2", "%20d", t->bytepix);
  }
  if (h->zbitpix < 0) {
    if (h->zquantiz[0])
      put_card(&p, "ZQUANTIZ", "'%s'", h->zquantiz);
    put_card(&p, "ZDITHER0", "%20" PRId64, h->have_zdither0 ? h->zdither0 : 1);
    if (h->have_zscale)
      put_card(&p, "ZSCALE", "%.17g", h->zscale);
    if (h->have_zzero)
      put_card(&p, "ZZERO", "%.17g", h->zzero);
    if (h->have_zblank)
      put_card(&p, "ZBLANK", "%20" PRId64, h->zblank);
  }
  memcpy(p, "END", 3);
  /* the data start at the block after the END card */
  uint64_t used = (uint64_t)(p + 80 - (mem + FITS_BLOCK));
  head = (used + FITS_BLOCK - 1) / FITS_BLOCK * FITS_BLOCK;
  fs->memsize =
      FITS_BLOCK + head + (bytes + FITS_BLOCK - 1) / FITS_BLOCK * FITS_BLOCK;
  unsigned char *data = (unsigned char *)mem + FITS_BLOCK + head;
  imgstat_status s = seek_to(&d->src, h->data_at, err);
  if (s != IMGSTAT_OK)
    return s;
  if (ist_source_read(&d->src, data, bytes) != bytes)
    return ist_truncated(&d->src, "FITS", err);
  fits_tiled copy = *t;
  s = tiled_check_rows(h, &copy, data, theap, bytes - theap, err);
  if (s != IMGSTAT_OK)
    return s;
  int status = 0;
  if (fits_open_memfile(&fs->f, "input.fits", READONLY, &fs->mem, &fs->memsize,
                        0, NULL, &status))
    return fits_failure(status, err);
  int type = 0, bitpix = 0, naxis = 0;
  long axes[3] = {0};
  if (fits_movabs_hdu(fs->f, 2, &type, &status) ||
      fits_get_img_param(fs->f, 3, &bitpix, &naxis, axes, &status))
    return fits_failure(status, err);
  if (!fits_is_compressed_image(fs->f, &status) || naxis != h->znaxis ||
      (uint64_t)axes[0] != fs->width || (uint64_t)axes[1] != fs->height)
    return ist_corrupt(err, "FITS", "cfitsio reads the tiles otherwise");
  return IMGSTAT_OK;
}

/* ---- open, read, close ----------------------------------------------------
 */

imgstat_status ist_fits_open(imgstat_decoder *d, imgstat_error *err) {
  ist_source *src = &d->src;
  fits_state *fs = calloc(1, sizeof *fs);
  if (!fs)
    return imgstat_error_set(err, IMGSTAT_ERR_NOMEM, "out of memory");
  d->state = fs;
  fits_hdu *h = &fs->hdu;
  /* the first HDU that holds an image imgstat takes */
  uint64_t at = 0;
  const uint64_t *axes;
  int64_t naxis;
  for (;;) {
    int none;
    imgstat_status s = read_header(src, at, h, &none, err);
    if (s != IMGSTAT_OK)
      return s;
    if (none)
      return imgstat_error_set(err, IMGSTAT_ERR_UNSUPPORTED,
                               "FITS file has no image HDU of 2 axes (or 3 "
                               "with 1, or 3 to %d planes)",
                               IMGSTAT_MAX_CHANNELS);
    s = hdu_size(h, err);
    if (s != IMGSTAT_OK)
      return s;
    fs->tiled = !strcmp(h->xtension, "BINTABLE") && h->zimage;
    int image = h->primary || !strcmp(h->xtension, "IMAGE");
    if (fs->tiled && h->have_znaxis && h->znaxis <= 3) {
      for (int i = 1; i <= h->znaxis; i++)
        h->zaxes[i] = (uint64_t)h->znaxes[i];
      if (shape_taken(h->znaxis, h->zaxes))
        break;
    } else if (image && !(h->primary && h->groups) &&
               shape_taken(h->naxis, h->naxes)) {
      break;
    }
    at =
        h->data_at + (h->data_bytes + FITS_BLOCK - 1) / FITS_BLOCK * FITS_BLOCK;
    if (at >= src->size)
      return imgstat_error_set(err, IMGSTAT_ERR_UNSUPPORTED,
                               "FITS file has no image HDU of 2 axes (or 3 "
                               "with 1, or 3 to %d planes)",
                               IMGSTAT_MAX_CHANNELS);
  }
  naxis = fs->tiled ? h->znaxis : h->naxis;
  axes = fs->tiled ? h->zaxes : h->naxes;
  fs->width = (uint32_t)axes[1];
  fs->height = (uint32_t)axes[2];
  fs->channels = naxis == 3 ? (int)axes[3] : 1;
  fs->bitpix = (int)(fs->tiled ? h->zbitpix : h->bitpix);
  if (h->data_at + h->data_bytes > src->size)
    return ist_corrupt(err, "FITS",
                       "file is truncated (its image ends at byte %" PRIu64
                       ", the file has %zu)",
                       h->data_at + h->data_bytes, src->size);

  fits_tiled t = {0};
  if (fs->tiled) {
    imgstat_status s = tiled_check(h, &t, err);
    if (s != IMGSTAT_OK)
      return s;
  }
  /* the scaling and the blank value */
  fits_exact one = {1, 0}, zero = {0, 0};
  if (!h->have_bscale)
    h->bscale = one;
  if (!h->have_bzero)
    h->bzero = zero;
  if (h->bscale.m == 0)
    return ist_corrupt(err, "FITS", "card BSCALE: value is 0");
  fs->identity = h->bscale.m == 1 && h->bscale.e == 0 && h->bzero.m == 0;
  fs->blank =
      fs->bitpix > 0 && (h->have_blank || (fs->tiled && h->have_zblank));
  fs->blank_value = h->have_blank ? h->blank : h->zblank;
  if (fs->blank) {
    int64_t lim =
        fs->bitpix == 64 ? INT64_MAX : (INT64_C(1) << (fs->bitpix - 1)) - 1;
    int64_t lo = fs->bitpix == 8 ? 0 : -lim - 1;
    if (fs->bitpix == 8)
      lim = 255;
    if (fs->blank_value < lo || fs->blank_value > lim)
      return ist_corrupt(err, "FITS",
                         "card BLANK: value %" PRId64
                         " is out of range for BITPIX %d",
                         fs->blank_value, fs->bitpix);
  }
  imgstat_sample sample = IMGSTAT_F32;
  fs->mode = FITS_ANY;
  int bzero_32768 = h->bscale.m == 1 && h->bscale.e == 0 && h->bzero.m == 1 &&
                    h->bzero.e == 15;
  if (!fs->blank && fs->bitpix == 8 && fs->identity) {
    sample = IMGSTAT_U8;
    fs->mode = FITS_U8;
  } else if (!fs->blank && fs->bitpix == 16 && bzero_32768) {
    sample = IMGSTAT_U16;
    fs->mode = FITS_U16;
  } else if (fs->bitpix == -32 && fs->identity) {
    fs->mode = FITS_F32;
  }
  /* The peak: the planes, three rows of 64-bit values (as stored, as
   * integers, as doubles); tiled, also cfitsio's file (this HDU's data),
   * a tile's compressed bytes in cfitsio (at most twice the heap: PLIO's
   * words) and the tile buffers (cfitsio's cache of a row of tiles, its
   * work buffer, the inflated GZIP tile checked here). */
  uint64_t plane = (uint64_t)fs->width * fs->height;
  uint64_t peak = plane * (uint64_t)sample * (uint64_t)fs->channels +
                  24 * (uint64_t)fs->width;
  if (fs->tiled)
    peak += 3 * FITS_BLOCK + 3 * h->data_bytes +
            (t.tiles_across + 3) * t.tile_pixels * 8;
  imgstat_status s = ist_decode_check(
      &d->lim, fs->width, fs->height, peak,
      fs->tiled ? 0 : h->data_at + h->data_bytes, src->size, "FITS", err);
  if (s != IMGSTAT_OK)
    return s;
  if (fs->tiled) {
    s = tiled_open(d, fs, &t, err);
    if (s != IMGSTAT_OK)
      return s;
  }
  ist_header_set(&d->header, fs->width, fs->height, fs->channels, sample,
                 "FITS");
  return IMGSTAT_OK;
}

/* Decimal digits of x, into out. */
static const char *i128_text(fits_i128 x, char out[48]) {
  char t[48];
  int n = 0;
  unsigned __int128 u = x < 0 ? -(unsigned __int128)x : (unsigned __int128)x;
  do {
    t[n++] = (char)('0' + (int)(u % 10));
    u /= 10;
  } while (u);
  int k = 0;
  if (x < 0)
    out[k++] = '-';
  while (n)
    out[k++] = t[--n];
  out[k] = '\0';
  return out;
}

static double exact_approx(fits_exact v) { return ldexp((double)v.m, v.e); }

/* The refusal of a value that is no float (exact: 1 when v is the value,
 * 0 when approx is its nearest double): written exactly when it is an
 * integer. */
static imgstat_status refuse_sample(const fits_state *fs, fits_exact v,
                                    int exact, double approx, uint32_t x,
                                    uint32_t y, imgstat_error *err) {
  char text[64];
  if (exact && v.e >= 0 && bit_length(v.m) + v.e <= 126)
    i128_text(v.m * ((fits_i128)1 << v.e), text);
  else
    imgstat_number_snprintf(text, sizeof text, "%.17g",
                            exact ? exact_approx(v) : approx);
  const char *type = fs->bitpix < 0 ? "float"
                     : fs->identity ? (fs->bitpix == 64   ? "64-bit integer"
                                       : fs->bitpix == 32 ? "32-bit integer"
                                                          : "integer")
                                    : "scaled integer";
  return ist_f32_refuse_text(err, "FITS", type, text, x, y);
}

/* One row of values (irow: integers; drow: floats) into the plane's row. */
static imgstat_status finish_row(fits_state *fs, float *o, uint32_t y,
                                 imgstat_error *err) {
  const fits_hdu *h = &fs->hdu;
  for (uint32_t x = 0; x < fs->width; x++) {
    fits_exact v, prod;
    if (fs->bitpix > 0) {
      int64_t r = fs->irow[x];
      if (fs->blank && r == fs->blank_value) {
        o[x] = NAN;
        continue;
      }
      if (fs->identity && r >= -(INT64_C(1) << 24) && r <= INT64_C(1) << 24) {
        o[x] = (float)r;
        continue;
      }
      v = exact_make(r, 0);
    } else {
      double r = fs->drow[x];
      if (fs->identity) {
        if (!ist_f32_exact(r, &o[x]))
          return refuse_sample(fs, exact_of_double(r), 1, r, x, y, err);
        continue;
      }
      if (!isfinite(r)) {
        o[x] = (float)(ldexp((double)h->bscale.m, h->bscale.e) * r);
        continue;
      }
      v = exact_of_double(r);
    }
    if (!fs->identity) {
      double approx =
          exact_approx(h->bscale) * exact_approx(v) + exact_approx(h->bzero);
      if (!exact_mul(h->bscale, v, &prod) || !exact_add(prod, h->bzero, &v))
        return refuse_sample(fs, v, 0, approx, x, y, err);
    }
    if (!exact_to_float(v, &o[x]))
      return refuse_sample(fs, v, 1, 0, x, y, err);
  }
  return IMGSTAT_OK;
}

/* A row as stored (big-endian) into o (FITS_U8, FITS_U16, FITS_F32) or
 * into irow / drow. */
static void decode_row(fits_state *fs, void *o) {
  const unsigned char *r = fs->raw;
  uint32_t w = fs->width;
  switch (fs->mode) {
  case FITS_U8:
    memcpy(o, r, w);
    return;
  case FITS_U16:
    for (uint32_t x = 0; x < w; x++)
      ((uint16_t *)o)[x] = (uint16_t)(be_u(r + 2 * x, 2) ^ 0x8000u);
    return;
  case FITS_F32:
    for (uint32_t x = 0; x < w; x++) {
      uint32_t b = (uint32_t)be_u(r + 4 * x, 4);
      memcpy((float *)o + x, &b, 4);
    }
    return;
  case FITS_ANY:
    break;
  }
  int bps = abs(fs->bitpix) / 8;
  for (uint32_t x = 0; x < w; x++) {
    uint64_t b = be_u(r + (size_t)bps * x, bps);
    switch (fs->bitpix) {
    case 8:
      fs->irow[x] = (int64_t)b;
      break;
    case 16:
      fs->irow[x] = (int16_t)b;
      break;
    case 32:
      fs->irow[x] = (int32_t)b;
      break;
    case 64:
      fs->irow[x] = (int64_t)b;
      break;
    case -32: {
      uint32_t b32 = (uint32_t)b;
      float f;
      memcpy(&f, &b32, 4);
      fs->drow[x] = f;
      break;
    }
    default:
      memcpy(&fs->drow[x], &b, 8);
    }
  }
}

imgstat_status ist_fits_read(imgstat_decoder *d, imgstat_image *img,
                             imgstat_error *err) {
  fits_state *fs = d->state;
  size_t w = fs->width;
  fs->raw = malloc(w * 8);
  fs->irow = malloc(w * sizeof *fs->irow);
  fs->drow = malloc(w * sizeof *fs->drow);
  if (!fs->raw || !fs->irow || !fs->drow)
    return imgstat_error_set(err, IMGSTAT_ERR_NOMEM, "out of memory");
  size_t row_bytes = w * (size_t)(abs(fs->bitpix) / 8);
  if (!fs->tiled) {
    imgstat_status s = seek_to(&d->src, fs->hdu.data_at, err);
    if (s != IMGSTAT_OK)
      return s;
  }
  int status = 0;
  double nan_value = NAN;
  for (int c = 0; c < fs->channels; c++)
    for (uint32_t y = 0; y < fs->height; y++) {
      void *out = ist_image_row(img, c, y);
      if (!fs->tiled) {
        if (ist_source_read(&d->src, fs->raw, row_bytes) != row_bytes)
          return ist_truncated(&d->src, "FITS", err);
        decode_row(fs, out);
        if (fs->mode != FITS_ANY)
          continue;
      } else {
        LONGLONG first = 1 + ((LONGLONG)c * fs->height + y) * (LONGLONG)w;
        int anynul = 0;
        /* integers (of at most 32 bits) as int, no null value (BLANK is
         * applied here); floats as double, NaN for ZBLANK */
        /* ZBITPIX -32 as float: quantized tiles are dequantized into
         * float32, the image's type (cfitsio's arithmetic is double) */
        int32_t *ints = (int32_t *)fs->raw;
        float *floats = (float *)fs->raw;
        int type = fs->bitpix > 0 ? TINT : fs->bitpix == -32 ? TFLOAT : TDOUBLE;
        float fnan = NAN;
        void *null = fs->bitpix > 0   ? NULL
                     : type == TFLOAT ? (void *)&fnan
                                      : (void *)&nan_value;
        if (fits_read_img(fs->f, type, first, (LONGLONG)w, null,
                          type == TDOUBLE ? (void *)fs->drow : fs->raw, &anynul,
                          &status))
          return fits_failure(status, err);
        for (size_t x = 0; type != TDOUBLE && x < w; x++) {
          if (type == TINT)
            fs->irow[x] = ints[x];
          else
            fs->drow[x] = floats[x];
        }
        if (fs->mode == FITS_U8 || fs->mode == FITS_U16) {
          for (size_t x = 0; x < w; x++) {
            int64_t v = fs->irow[x] + (fs->mode == FITS_U16 ? 32768 : 0);
            if (v < 0 || v > (fs->mode == FITS_U8 ? 255 : 65535))
              return ist_corrupt(err, "FITS", "tile sample out of range");
            if (fs->mode == FITS_U8)
              ((uint8_t *)out)[x] = (uint8_t)v;
            else
              ((uint16_t *)out)[x] = (uint16_t)v;
          }
          continue;
        }
      }
      imgstat_status s = finish_row(fs, out, y, err);
      if (s != IMGSTAT_OK)
        return s;
    }
  return IMGSTAT_OK;
}

void ist_fits_close(imgstat_decoder *d) {
  fits_state *fs = d->state;
  if (!fs)
    return;
  int status = 0;
  if (fs->f)
    fits_close_file(fs->f, &status);
  free(fs->mem);
  free(fs->raw);
  free(fs->irow);
  free(fs->drow);
  free(fs);
  d->state = NULL;
}

#endif
