/*
 * The checks before nvJPEG (--jpeg-check, docs/gpu.md "What --jpeg-check
 * catches"), without libjpeg: a walk over a JPEG's marker segments and its
 * entropy-coded data that either finds the file sound or doubts it. A file
 * it doubts goes to libjpeg's check (ist_jpeg_check_entropy's TurboJPEG
 * path), which gives the verdict and the words; so the scanner only has to
 * be right about the files it accepts: it accepts only what libjpeg-turbo
 * 2.1 reads without an error or a warning, and doubts everything else
 * (anything odd, unusual or not handled here: arithmetic coding, 12-bit,
 * junk between segments, a progressive frame at the full level, ...).
 *
 * markers: SOI; the segments libjpeg reads (lengths and contents sound:
 *   SOF, DHT, DQT, DRI, SOS; APPn and COM skipped) with the quantization and
 *   Huffman tables each scan uses defined before it; in each scan's
 *   entropy-coded data only 0xFF xx is looked at: stuffed bytes, restart
 *   markers RST0..7 in their cyclic order and exactly as many as the
 *   restart interval gives for the scan's MCUs; EOI after the last scan
 *   (a file cut anywhere before lacks it).
 * full: the same walk, and every scan of a sequential Huffman frame decoded
 *   code by code as libjpeg's decode_mcu does, without coefficient arrays:
 *   every code must be one of its table's, a block's coefficients stay
 *   within its 64, each restart interval's data ends in its last byte
 *   (libjpeg warns about bytes it discards before a marker), a scan's data
 *   holds all its MCUs (libjpeg warns when it must invent bits).
 */
#include "imgstat/imgstat.h"
#include "io.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

enum { SCAN_DOUBT = 0, SCAN_SOUND = 1 };

/* A Huffman table as libjpeg's jpeg_make_d_derived_tbl makes it (codes
 * of up to LOOK_BITS bits by one lookup of the next LOOK_BITS bits, longer
 * ones by maxcode), and for AC tables a second lookup that takes a code and
 * its value bits at once when they fit in LOOK_BITS: the scanner needs no
 * AC value, only how far each code moves in the block. */
#define LOOK_BITS 11
#define AC_EOB 0x8000u /* an AC entry: end of block */
typedef struct huff {
  int defined;
  uint16_t look[1 << LOOK_BITS]; /* (length << 8) | symbol; 0: longer */
  /* AC: bits taken (1..LOOK_BITS) | positions moved << 5 (1..16) | AC_EOB;
   * 0: not in LOOK_BITS (a longer code, or value bits past them) */
  uint16_t fast[1 << LOOK_BITS];
  int32_t maxcode[18]; /* per length; -1: none */
  int32_t valoffset[18];
  uint8_t symbols[256];
} huff;

typedef struct comp {
  int id, h, v, tq;
  int seen; /* coded by a scan already (sequential) */
} comp;

typedef struct scanner {
  const unsigned char *p;
  size_t n, i;
  int full;
  int frame, progressive;
  uint32_t width, height;
  int ncomp, hmax, vmax;
  comp c[4];
  int qt_defined[4];
  unsigned restart; /* DRI interval in MCUs, 0: none */
  huff dc[4], ac[4];
} scanner;

/* ---- tables --------------------------------------------------------------*/

/* Builds t from counts[1..16] and the symbols; 0 where libjpeg would
 * refuse the table (too many codes, codes that overflow their length, a DC
 * symbol over 15). */
static int huff_build(huff *t, const unsigned char *counts,
                      const unsigned char *syms, int nsym, int is_dc) {
  memset(t, 0, sizeof *t);
  memcpy(t->symbols, syms, (size_t)nsym);
  int32_t code = 0;
  int k = 0, maxlen = 0;
  for (int len = 1; len <= 16; len++)
    if (counts[len - 1])
      maxlen = len;
  for (int len = 1; len <= 16; len++) {
    t->valoffset[len] = k - code;
    /* libjpeg: the codes of a length must leave its all-ones code free */
    if (len <= maxlen && code + counts[len - 1] >= (int32_t)1 << len)
      return 0;
    if (counts[len - 1]) {
      for (int j = 0; j < counts[len - 1]; j++, k++, code++) {
        if (len <= LOOK_BITS) {
          int shift = LOOK_BITS - len, rs = t->symbols[k];
          int r = rs >> 4, sz = rs & 15;
          unsigned fast = 0;
          if (sz && len + sz <= LOOK_BITS)
            fast = (unsigned)(len + sz) | (unsigned)(r + 1) << 5;
          else if (!sz)
            fast = r == 15 ? (unsigned)len | 16u << 5 : len | AC_EOB;
          for (int f = 0; f < 1 << shift; f++) {
            t->look[(code << shift) | f] = (uint16_t)(len << 8 | rs);
            t->fast[(code << shift) | f] = (uint16_t)fast;
          }
        }
      }
      t->maxcode[len] = code - 1;
    } else {
      t->maxcode[len] = -1;
    }
    code <<= 1;
  }
  t->maxcode[17] = INT32_MAX; /* sentinel, unused */
  if (is_dc)
    for (int j = 0; j < nsym; j++)
      if (syms[j] > 15)
        return 0;
  t->defined = 1;
  return 1;
}

static int read_dht(scanner *S, const unsigned char *s, size_t len) {
  while (len > 16) {
    int index = s[0];
    int total = 0;
    for (int j = 0; j < 16; j++)
      total += s[1 + j];
    if (total > 256 || (size_t)total > len - 17)
      return 0;
    int is_ac = index & 0x10;
    index &= ~0x10;
    if (index < 0 || index > 3)
      return 0;
    huff *t = is_ac ? &S->ac[index] : &S->dc[index];
    if (!huff_build(t, s + 1, s + 17, total, !is_ac))
      return 0;
    s += 17 + total;
    len -= 17 + (size_t)total;
  }
  return len == 0;
}

static int read_dqt(scanner *S, const unsigned char *s, size_t len) {
  while (len > 0) {
    int prec = s[0] >> 4, tq = s[0] & 15;
    size_t need = 1 + (prec ? 128 : 64);
    if (prec > 1 || tq > 3 || len < need)
      return 0;
    S->qt_defined[tq] = 1;
    s += need;
    len -= need;
  }
  return 1;
}

static int read_sof(scanner *S, unsigned m, const unsigned char *s,
                    size_t len) {
  if (S->frame || len < 6 || s[0] != 8)
    return 0;
  S->frame = 1;
  S->progressive = m == 0xC2;
  S->height = (uint32_t)s[1] << 8 | s[2];
  S->width = (uint32_t)s[3] << 8 | s[4];
  S->ncomp = s[5];
  if (!S->width || !S->height || S->ncomp < 1 || S->ncomp > 4 ||
      len != 6 + 3u * (size_t)S->ncomp)
    return 0;
  S->hmax = S->vmax = 1;
  for (int k = 0; k < S->ncomp; k++) {
    comp *c = &S->c[k];
    c->id = s[6 + 3 * k];
    c->h = s[7 + 3 * k] >> 4;
    c->v = s[7 + 3 * k] & 15;
    c->tq = s[8 + 3 * k];
    if (c->h < 1 || c->h > 4 || c->v < 1 || c->v > 4 || c->tq > 3)
      return 0;
    for (int j = 0; j < k; j++)
      if (S->c[j].id == c->id)
        return 0;
    S->hmax = c->h > S->hmax ? c->h : S->hmax;
    S->vmax = c->v > S->vmax ? c->v : S->vmax;
  }
  return 1;
}

/* ---- one scan ------------------------------------------------------------*/

typedef struct scan {
  int ns;
  comp *c[4];
  int td[4], ta[4];
  int ss, se, ah, al;
  uint64_t mcus;         /* MCUs in the scan */
  uint32_t mcus_per_row; /* interleaved: MCU columns; else blocks per row */
  int blocks;            /* blocks in an MCU */
} scan;

static uint32_t div_up(uint64_t a, uint64_t b) {
  return (uint32_t)((a + b - 1) / b);
}

static int read_sos(scanner *S, const unsigned char *s, size_t len, scan *sc) {
  memset(sc, 0, sizeof *sc);
  if (!S->frame || len < 1)
    return 0;
  sc->ns = s[0];
  if (sc->ns < 1 || sc->ns > 4 || len != 4 + 2u * (size_t)sc->ns)
    return 0;
  for (int k = 0; k < sc->ns; k++) {
    comp *c = NULL;
    for (int j = 0; j < S->ncomp; j++)
      if (S->c[j].id == s[1 + 2 * k])
        c = &S->c[j];
    if (!c)
      return 0;
    for (int j = 0; j < k; j++)
      if (sc->c[j] == c)
        return 0;
    sc->c[k] = c;
    sc->td[k] = s[2 + 2 * k] >> 4;
    sc->ta[k] = s[2 + 2 * k] & 15;
    if (sc->td[k] > 3 || sc->ta[k] > 3 || !S->qt_defined[c->tq])
      return 0;
  }
  const unsigned char *t = s + 1 + 2 * sc->ns;
  sc->ss = t[0];
  sc->se = t[1];
  sc->ah = t[2] >> 4;
  sc->al = t[2] & 15;
  if (!S->progressive) {
    if (sc->ss != 0 || sc->se != 63 || sc->ah != 0 || sc->al != 0)
      return 0; /* libjpeg warns */
    for (int k = 0; k < sc->ns; k++) {
      if (sc->c[k]->seen || !S->dc[sc->td[k]].defined ||
          !S->ac[sc->ta[k]].defined)
        return 0;
      sc->c[k]->seen = 1;
    }
  } else {
    /* only what the marker walk needs; the full level doubts progressive
     * frames. DC scans may interleave, AC scans may not. */
    if (sc->ss > 63 || sc->se > 63 || sc->ss > sc->se || sc->al > 13 ||
        (sc->ss == 0 && sc->se != 0) || (sc->ss != 0 && sc->ns != 1) ||
        (sc->ah != 0 && sc->al != sc->ah - 1))
      return 0;
    for (int k = 0; k < sc->ns; k++)
      if (sc->ss == 0 ? (sc->ah == 0 && !S->dc[sc->td[k]].defined)
                      : !S->ac[sc->ta[k]].defined)
        return 0;
  }
  if (sc->ns == 1) {
    const comp *c = sc->c[0];
    uint32_t bw = div_up((uint64_t)S->width * (uint64_t)c->h, 8u * S->hmax);
    uint32_t bh = div_up((uint64_t)S->height * (uint64_t)c->v, 8u * S->vmax);
    sc->mcus_per_row = bw;
    sc->mcus = (uint64_t)bw * bh;
    sc->blocks = 1;
  } else {
    uint32_t mw = div_up(S->width, 8u * S->hmax);
    uint32_t mh = div_up(S->height, 8u * S->vmax);
    sc->mcus_per_row = mw;
    sc->mcus = (uint64_t)mw * mh;
    for (int k = 0; k < sc->ns; k++)
      sc->blocks += sc->c[k]->h * sc->c[k]->v;
    if (sc->blocks > 10)
      return 0; /* libjpeg's D_MAX_BLOCKS_IN_MCU */
  }
  return 1;
}

/* ---- the bit reader ------------------------------------------------------
 * As libjpeg's: 0xFF 0x00 is a data byte 0xFF; 0xFF then anything else is a
 * marker, where the data ends: past it the reader gives zero bits and
 * counts none (S->i stays on the marker). */
typedef struct bits {
  const unsigned char *p, *end;
  uint64_t buf; /* next bits at the top */
  int n;        /* real bits in buf */
  int at_marker;
} bits;

static inline void fill(bits *b) {
  while (b->n <= 56 && !b->at_marker) {
    if (b->p >= b->end) {
      b->at_marker = 1;
      break;
    }
    unsigned c = *b->p;
    if (c == 0xFF) {
      if (b->p + 1 < b->end && b->p[1] == 0) {
        b->p += 2;
      } else {
        b->at_marker = 1;
        break;
      }
    } else {
      b->p++;
    }
    b->buf |= (uint64_t)c << (56 - b->n);
    b->n += 8;
  }
}

/* Keeps at least 32 bits in the reader (short of a marker): 8 bytes are
 * loaded at once when none of them is 0xFF. */
static inline void refill(bits *b) {
  if (b->n >= 32)
    return;
  if (b->end - b->p >= 8) {
    uint64_t w = 0;
    for (int k = 0; k < 8; k++)
      w = w << 8 | b->p[k];
    const uint64_t ones = UINT64_C(0x0101010101010101);
    uint64_t inv = ~w; /* a byte 0xFF of w is a zero byte of inv */
    if (!((inv - ones) & ~inv & (ones << 7))) {
      int nb = (64 - b->n) >> 3;
      uint64_t v = nb == 8 ? w : w >> (64 - 8 * nb);
      b->buf |= v << (64 - b->n - 8 * nb);
      b->n += 8 * nb;
      b->p += nb;
      return;
    }
  }
  fill(b);
}

/* The next Huffman symbol of t, or -1 (not a code, or bits past the data's
 * end). */
static inline int decode(bits *b, const huff *t) {
  refill(b);
  unsigned look = (unsigned)(b->buf >> (64 - LOOK_BITS));
  unsigned e = t->look[look];
  int len;
  int sym;
  if (e) {
    len = (int)(e >> 8);
    sym = (int)(e & 255);
  } else {
    len = LOOK_BITS + 1;
    int32_t code = (int32_t)(b->buf >> (64 - len));
    while (len <= 16 && code > t->maxcode[len]) {
      len++;
      code = (int32_t)(b->buf >> (64 - len));
    }
    if (len > 16)
      return -1;
    sym = t->symbols[(code + t->valoffset[len]) & 255];
  }
  if (len > b->n)
    return -1;
  b->buf <<= len;
  b->n -= len;
  return sym;
}

/* Takes s value bits; returns their value as libjpeg's HUFF_EXTEND makes
 * it, in *v; 0 when they run past the data's end. */
static inline int take(bits *b, int s, int32_t *v) {
  if (!s) {
    *v = 0;
    return 1;
  }
  refill(b);
  if (s > b->n)
    return 0;
  int32_t r = (int32_t)(b->buf >> (64 - s));
  b->buf <<= s;
  b->n -= s;
  *v = r < ((int32_t)1 << (s - 1)) ? r - ((int32_t)1 << s) + 1 : r;
  return 1;
}

/* One sequential block: a DC difference and up to 63 AC coefficients. */
static inline int block(bits *b, const huff *dc, const huff *ac,
                        int64_t *pred) {
  int s = decode(b, dc);
  int32_t v;
  if (s < 0 || !take(b, s, &v))
    return 0;
  *pred += v;
  if (*pred > INT32_MAX / 2 || *pred < -(INT32_MAX / 2))
    return 0; /* libjpeg refuses an overflowing DC value */
  /* pos: the next coefficient's place; a code moves it by run + 1, ZRL by
   * 16; past 64 libjpeg ignores silently what we doubt */
  for (int pos = 1; pos < 64;) {
    refill(b);
    unsigned e = ac->fast[b->buf >> (64 - LOOK_BITS)];
    if (e) {
      int len = (int)(e & 31);
      if (len > b->n)
        return 0;
      b->buf <<= len;
      b->n -= len;
      if (e & AC_EOB)
        break;
      pos += (int)(e >> 5 & 31);
      if (pos > 64)
        return 0;
      continue;
    }
    int rs = decode(b, ac);
    if (rs < 0)
      return 0;
    int r = rs >> 4;
    s = rs & 15;
    if (s) {
      if (s > b->n)
        return 0;
      b->buf <<= s;
      b->n -= s;
      pos += r + 1;
    } else if (r == 15) {
      pos += 16;
    } else {
      break; /* end of block */
    }
    if (pos > 64)
      return 0;
  }
  return 1;
}

/* Decodes MCUs [from, to) of sc from b. */
static int decode_mcus(const scanner *S, const scan *sc, bits *b,
                       uint64_t count, int64_t pred[4]) {
  const huff *dc[4], *ac[4];
  for (int k = 0; k < sc->ns; k++) {
    dc[k] = &S->dc[sc->td[k]];
    ac[k] = &S->ac[sc->ta[k]];
  }
  for (uint64_t m = 0; m < count; m++)
    for (int k = 0; k < sc->ns; k++) {
      int nb = sc->ns == 1 ? 1 : sc->c[k]->h * sc->c[k]->v;
      for (int j = 0; j < nb; j++)
        if (!block(b, dc[k], ac[k], &pred[k]))
          return 0;
    }
  return 1;
}

/* At the end of a restart interval or of a scan: the bits left in the
 * reader must be the padding of its last byte (libjpeg warns about bytes it
 * discards), and the data must stop there, at a marker. Returns the
 * position of that marker's 0xFF. */
static int interval_end(bits *b, size_t base, const unsigned char *p,
                        size_t *at) {
  if (b->n >= 8)
    return 0;
  if (!b->at_marker) {
    /* the reader stopped short of the marker: the next byte must be it */
    if (b->p >= b->end || b->p[0] != 0xFF || b->p + 1 >= b->end || b->p[1] == 0)
      return 0;
  }
  *at = base + (size_t)(b->p - p);
  return 1;
}

/* Walks (markers) or decodes (full) the entropy-coded data of sc, which
 * starts at S->i; leaves S->i on the marker after it. */
static int scan_data(scanner *S, const scan *sc) {
  const unsigned char *p = S->p;
  size_t n = S->n;
  uint64_t intervals = 1, per = sc->mcus;
  if (S->restart) {
    per = S->restart;
    intervals = (sc->mcus + per - 1) / per;
  }
  if (S->full && S->progressive)
    return 0; /* libjpeg's to decode */
  if (!S->full) {
    /* markers only: RSTn in order, as many as the intervals need */
    uint64_t rst = 0;
    size_t i = S->i;
    for (;;) {
      const unsigned char *ff = memchr(p + i, 0xFF, n - i);
      if (!ff)
        return 0; /* no EOI */
      i = (size_t)(ff - p);
      while (i + 1 < n && p[i + 1] == 0xFF)
        i++; /* 0xFF 0xFF ...: libjpeg reads the run as one 0xFF */
      if (i + 1 >= n)
        return 0;
      unsigned m = p[i + 1];
      if (m == 0x00) {
        i += 2;
        continue;
      }
      if (m >= 0xD0 && m <= 0xD7) {
        if (m != 0xD0 + (rst & 7))
          return 0;
        rst++;
        i += 2;
        continue;
      }
      break;
    }
    if (rst != intervals - 1)
      return 0;
    S->i = i;
    return 1;
  }
  size_t i = S->i;
  for (uint64_t r = 0; r < intervals; r++) {
    bits b;
    memset(&b, 0, sizeof b);
    b.p = p + i;
    b.end = p + n;
    int64_t pred[4] = {0, 0, 0, 0};
    uint64_t count = r + 1 < intervals ? per : sc->mcus - r * per;
    if (!decode_mcus(S, sc, &b, count, pred))
      return 0;
    size_t at;
    if (!interval_end(&b, 0, p, &at))
      return 0;
    if (r + 1 < intervals) {
      if (at + 1 >= n || p[at + 1] != 0xD0 + (r & 7))
        return 0;
      i = at + 2;
    } else {
      i = at;
    }
  }
  S->i = i;
  return 1;
}

/* ---- the walk ------------------------------------------------------------*/

static int walk(scanner *S) {
  const unsigned char *p = S->p;
  size_t n = S->n;
  if (n < 4 || p[0] != 0xFF || p[1] != 0xD8)
    return 0;
  S->i = 2;
  int scans = 0;
  for (;;) {
    /* a marker here, after optional fill bytes; anything else is junk
     * (libjpeg warns) */
    if (S->i + 1 >= n || p[S->i] != 0xFF)
      return 0;
    while (S->i + 1 < n && p[S->i + 1] == 0xFF)
      S->i++;
    if (S->i + 1 >= n)
      return 0;
    unsigned m = p[S->i + 1];
    if (m == 0xD9)
      return scans > 0;
    if (S->i + 4 > n)
      return 0;
    size_t len = (size_t)p[S->i + 2] << 8 | p[S->i + 3];
    if (len < 2 || len > n - S->i - 2)
      return 0;
    const unsigned char *s = p + S->i + 4;
    len -= 2;
    S->i += 4 + len;
    if (m == 0xC0 || m == 0xC1 || m == 0xC2) {
      if (!read_sof(S, m, s, len))
        return 0;
    } else if (m == 0xC4) {
      if (!read_dht(S, s, len))
        return 0;
    } else if (m == 0xDB) {
      if (!read_dqt(S, s, len))
        return 0;
    } else if (m == 0xDD) {
      if (len != 2)
        return 0;
      S->restart = (unsigned)s[0] << 8 | s[1];
    } else if (m == 0xDA) {
      scan sc;
      if (!read_sos(S, s, len, &sc) || ++scans > IMGSTAT_JPEG_MAX_SCANS)
        return 0;
      if (!scan_data(S, &sc))
        return 0;
    } else if ((m >= 0xE0 && m <= 0xEF) || m == 0xFE) {
      /* APPn, COM: skipped */
    } else {
      return 0; /* anything else: libjpeg's to judge */
    }
  }
}

int ist_jpeg_scan(const unsigned char *bytes, size_t size, int full) {
  /* about 70 KB of tables: not on a worker's stack */
  scanner *S = calloc(1, sizeof *S);
  if (!S)
    return SCAN_DOUBT; /* libjpeg judges */
  S->p = bytes;
  S->n = size;
  S->full = full;
  int verdict = walk(S);
  /* sequential frames: every component coded (ist_jpeg_open refuses the
   * others anyway) */
  if (!S->progressive)
    for (int k = 0; k < S->ncomp; k++)
      if (!S->c[k].seen)
        verdict = SCAN_DOUBT;
  free(S);
  return verdict;
}

imgstat_status ist_jpeg_check_entropy(imgstat_decoder *d, imgstat_error *err) {
  const unsigned char *bytes;
  size_t size;
  if (ist_jpeg_gpu_input(d, &bytes, &size) && ist_jpeg_scan(bytes, size, 1))
    return IMGSTAT_OK;
  return ist_jpeg_check_libjpeg(d, err);
}

imgstat_status ist_jpeg_check(imgstat_decoder *d, int level,
                              imgstat_error *err) {
  const unsigned char *bytes;
  size_t size;
  if (level == IMGSTAT_JPEG_CHECK_NONE)
    return IMGSTAT_OK;
  if (!ist_jpeg_gpu_input(d, &bytes, &size))
    return imgstat_error_set(err, IMGSTAT_ERR_ARG, "not a TurboJPEG input");
  if (level == IMGSTAT_JPEG_CHECK_MARKERS && ist_jpeg_scan(bytes, size, 0))
    return IMGSTAT_OK;
  /* full, or a file the marker walk doubts: libjpeg's verdict, unless the
   * full scan finds the file sound */
  return ist_jpeg_check_entropy(d, err);
}
