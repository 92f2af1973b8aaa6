/*
 * Pooled partials of many images (imgstat_pool.h): exact accumulation, the
 * figures rounded once from the exact values, and the serialized form.
 *
 * f32 pools keep, per channel, S1 = sum of n * mean (units of 2^-1074, two's
 * complement) and S2 = sum of m2 + n * mean^2 (units of 2^-2148) over the
 * images' partials. Every finite double is an integer number of 2^-1074 and
 * its square one of 2^-2148, so both sums are exact and their additions
 * associative. Bounds (count < 2^64, |mean| < 2^1024, m2 < 2^1024, fewer
 * than 2^64 images): |S1| < 2^(64 + 1024 + 1074) = 2^2162 (35 words with the
 * sign), S2 < 2^(64 + 2048 + 2148) + 2^(64 + 1024 + 2148) < 2^4261 (67
 * words). The pooled M2 is (N * S2 - S1^2) / N, computed exactly.
 */
#include "imgstat/pool.h"

#include <math.h>
#include <string.h>

#include "merge.h"

#include "checksum.h"
#include "le_codec.h"
#include "pool_key.h"

__extension__ typedef unsigned __int128 u128;

#define FSUM_WORDS IMGSTAT_POOL_FSUM_WORDS
#define FSQ_WORDS IMGSTAT_POOL_FSQ_WORDS
#define FSUM_UNIT (-1074) /* S1 counts 2^-1074 */
#define FSQ_UNIT (-2148)  /* S2 counts 2^-2148 */
/* Work buffers: N * S2 (68 words) and S1^2 (70 words). */
#define WIDE_WORDS (2 * FSUM_WORDS)

static u128 u128_of(imgstat_u128 v) { return (u128)v.hi << 64 | v.lo; }

static imgstat_u128 u128_split(u128 v) {
  imgstat_u128 r;
  r.lo = (uint64_t)v;
  r.hi = (uint64_t)(v >> 64);
  return r;
}

void imgstat_u128_format(imgstat_u128 v, char text[IMGSTAT_U128_TEXT]) {
  u128 x = u128_of(v);
  char rev[IMGSTAT_U128_TEXT];
  int n = 0;
  do {
    rev[n++] = (char)('0' + (int)(x % 10));
    x /= 10;
  } while (x);
  for (int i = 0; i < n; i++)
    text[i] = rev[n - 1 - i];
  text[n] = '\0';
}

/* ---- big integers: words of 64 bits, least significant first ------------- */

/* acc[0..n) += t[0..tn) * 2^shift, or -= when negate (mod 2^(64 n)); the
 * shifted term must fit below word n (the bounds above). tn <= 3. */
static void big_add_shifted(uint64_t *acc, int n, const uint64_t *t, int tn,
                            unsigned shift, int negate) {
  uint64_t s[4];
  unsigned b = shift % 64;
  int w = (int)(shift / 64);
  for (int i = 0; i <= tn; i++) {
    uint64_t lo = i < tn ? t[i] << b : 0;
    uint64_t hi = (i > 0 && b) ? t[i - 1] >> (64 - b) : 0;
    s[i] = lo | hi;
  }
  uint64_t carry = 0;
  for (int i = w; i < n; i++) {
    int k = i - w;
    if (k > tn && carry == 0)
      break;
    uint64_t v = k <= tn ? s[k] : 0;
    if (negate) {
      u128 r = (u128)acc[i] - v - carry;
      acc[i] = (uint64_t)r;
      carry = (r >> 64) != 0;
    } else {
      u128 r = (u128)acc[i] + v + carry;
      acc[i] = (uint64_t)r;
      carry = (uint64_t)(r >> 64);
    }
  }
}

/* a[0..n) += b[0..n) (mod 2^(64 n)). */
static void big_add(uint64_t *a, const uint64_t *b, int n) {
  uint64_t carry = 0;
  for (int i = 0; i < n; i++) {
    u128 r = (u128)a[i] + b[i] + carry;
    a[i] = (uint64_t)r;
    carry = (uint64_t)(r >> 64);
  }
}

/* out[0..an+bn) = a * b. */
static void big_mul(uint64_t *out, const uint64_t *a, int an, const uint64_t *b,
                    int bn) {
  memset(out, 0, (size_t)(an + bn) * sizeof *out);
  for (int i = 0; i < an; i++) {
    uint64_t carry = 0;
    for (int j = 0; j < bn; j++) {
      u128 r = (u128)a[i] * b[j] + out[i + j] + carry;
      out[i + j] = (uint64_t)r;
      carry = (uint64_t)(r >> 64);
    }
    out[i + bn] = carry;
  }
}

/* a[0..n) -= b[0..n); returns the borrow (1: the result is negative). */
static int big_sub(uint64_t *a, const uint64_t *b, int n) {
  uint64_t borrow = 0;
  for (int i = 0; i < n; i++) {
    u128 r = (u128)a[i] - b[i] - borrow;
    a[i] = (uint64_t)r;
    borrow = (r >> 64) != 0;
  }
  return (int)borrow;
}

/* a = -a (two's complement). */
static void big_negate(uint64_t *a, int n) {
  uint64_t carry = 1;
  for (int i = 0; i < n; i++) {
    u128 r = (u128)(~a[i]) + carry;
    a[i] = (uint64_t)r;
    carry = (uint64_t)(r >> 64);
  }
}

static int big_is_zero(const uint64_t *a, int n) {
  for (int i = 0; i < n; i++)
    if (a[i])
      return 0;
  return 1;
}

/* Significant bits of a (0 for zero). */
static int big_bits(const uint64_t *a, int n) {
  for (int i = n - 1; i >= 0; i--)
    if (a[i])
      return 64 * i + 64 - __builtin_clzll(a[i]);
  return 0;
}

/* The 64 bits of a from bit `at` on (bits past the top are 0). */
static uint64_t big_bits_at(const uint64_t *a, int n, int at) {
  int w = at / 64, b = at % 64;
  uint64_t lo = w < n ? a[w] >> b : 0;
  uint64_t hi = (b && w + 1 < n) ? a[w + 1] << (64 - b) : 0;
  return lo | hi;
}

/* a = w * 2^shift + rest, w the top 128 bits (all of a when it is shorter);
 * *sticky: rest != 0. */
static u128 big_window(const uint64_t *a, int n, int *shift, int *sticky) {
  int bits = big_bits(a, n);
  *shift = bits > 128 ? bits - 128 : 0;
  *sticky = 0;
  for (int i = 0; i < *shift / 64 && !*sticky; i++)
    *sticky = a[i] != 0;
  if (*shift % 64 && (a[*shift / 64] << (64 - *shift % 64)) != 0)
    *sticky = 1;
  return (u128)big_bits_at(a, n, *shift + 64) << 64 | big_bits_at(a, n, *shift);
}

/* ---- rounding ------------------------------------------------------------ */

static int u128_bits(u128 q) {
  uint64_t hi = (uint64_t)(q >> 64);
  if (hi)
    return 128 - __builtin_clzll(hi);
  return (uint64_t)q ? 64 - __builtin_clzll((uint64_t)q) : 0;
}

/* The double nearest to q * 2^e (ties to even), q > 0. When q has more than
 * 54 bits, its bit 0 may stand for anything below it (a sticky bit). */
static double round_scaled(u128 q, int e) {
  int bits = u128_bits(q);
  if (bits <= 53)
    return ldexp((double)(uint64_t)q, e);
  int s = bits - 53;
  u128 rest = q & (((u128)1 << s) - 1), half = (u128)1 << (s - 1);
  uint64_t m = (uint64_t)(q >> s);
  if (rest > half || (rest == half && (m & 1)))
    m++; /* 2^53 at most: still exact */
  return ldexp((double)m, e + s);
}

/* The double nearest to (num + d) / den * 2^e, where d is 0 (sticky 0) or in
 * (0, 1) (sticky 1; then num >= 2^127). den >= 1. */
static double div_round(u128 num, int sticky, uint64_t den, int e) {
  if (num == 0)
    return 0.0;
  u128 q = num / den, r = num % den;
  /* At least 56 bits of quotient, so that a sticky bit 0 lies below the
   * rounding bit. With sticky set, q >= 2^127 / 2^64 already: the fraction
   * d / den < 1 / den never reaches the next integer of the quotient. */
  while (q < ((u128)1 << 56)) {
    r <<= 1;
    q <<= 1;
    if (r >= den) {
      r -= den;
      q |= 1;
    }
    e--;
  }
  int st = sticky || r != 0;
  while (q >> 120) {
    st |= (int)(q & 1);
    q >>= 1;
    e++;
  }
  return round_scaled(q | (u128)st, e);
}

/* The double nearest to a / den * 2^unit, a >= 0. */
static double big_div_round(const uint64_t *a, int n, uint64_t den, int unit) {
  int shift, sticky;
  u128 w = big_window(a, n, &shift, &sticky);
  return div_round(w, sticky, den, shift + unit);
}

/* The deviation from d = N * (sum of squared deviations) in units of
 * 2^unit: sqrt(d / (N * (N - ddof))). In long double like the per-image
 * figures (imgstat_figures_compute): for d < 2^128 and unit 0 the same
 * operations, so a pool of one integer image gives the same bits. */
static double std_from(const uint64_t *d, int n, int unit, uint64_t count,
                       int ddof) {
  int shift, sticky;
  u128 w = big_window(d, n, &shift, &sticky);
  if (w == 0)
    return 0.0;
  long double num = (long double)(w | (u128)sticky);
  int t = shift + unit;
  if (t % 2 != 0) {
    num *= 2;
    t -= 1;
  }
  return (double)ldexpl(ist_std_of_scaled_m2(num, count, ddof), t / 2);
}

/* ---- the pool ------------------------------------------------------------ */

static const imgstat_pool_key no_key = {UINT64_MAX, UINT32_MAX, UINT32_MAX};

static void channel_init(imgstat_pool_channel *c) {
  memset(c, 0, sizeof *c);
  c->min = INFINITY;
  c->max = -INFINITY;
  c->min_key = no_key;
  c->max_key = no_key;
}

void imgstat_pool_init(imgstat_pool *pool) {
  memset(pool, 0, sizeof *pool);
  for (int c = 0; c < IMGSTAT_POOL_MAX_CHANNELS; c++)
    channel_init(&pool->ch[c]);
}

static int sample_ok(imgstat_sample s) {
  return s == IMGSTAT_U8 || s == IMGSTAT_U16 || s == IMGSTAT_F32;
}

int ist_pool_key_before(imgstat_pool_key a, imgstat_pool_key b) {
  if (a.ordinal != b.ordinal)
    return a.ordinal < b.ordinal;
  if (a.y != b.y)
    return a.y < b.y;
  return a.x < b.x;
}

/* The extrema rule of merge.h with the pool's keys. */
static void offer_extrema(imgstat_pool_channel *c, double min,
                          imgstat_pool_key min_key, double max,
                          imgstat_pool_key max_key) {
  if (ist_min_wins(min, c->min, ist_pool_key_before(min_key, c->min_key))) {
    c->min = min;
    c->min_key = min_key;
  }
  if (ist_max_wins(max, c->max, ist_pool_key_before(max_key, c->max_key))) {
    c->max = max;
    c->max_key = max_key;
  }
}

static int add_overflows(uint64_t a, uint64_t b) { return a > UINT64_MAX - b; }

static imgstat_status check_layout(const imgstat_pool *pool, int channels,
                                   imgstat_sample sample, const char *what,
                                   imgstat_error *err) {
  if (pool->channels == 0 ||
      (pool->channels == channels && pool->sample == sample))
    return IMGSTAT_OK;
  return imgstat_error_set(
      err, IMGSTAT_ERR_ARG, "%s is %s %d-bit, the pool holds %s %d-bit images",
      what, imgstat_layout_name(channels), imgstat_sample_depth(sample),
      imgstat_layout_name(pool->channels), imgstat_sample_depth(pool->sample));
}

/* Sign, integer significand and exponent of a finite double: |x| = m * 2^e,
 * e >= -1074. */
static void f64_split(double x, int *neg, uint64_t *m, int *e) {
  uint64_t b;
  memcpy(&b, &x, sizeof b);
  int ex = (int)((b >> 52) & 0x7ff);
  uint64_t frac = b & ((UINT64_C(1) << 52) - 1);
  *neg = (int)(b >> 63);
  *m = ex ? frac | UINT64_C(1) << 52 : frac;
  *e = ex ? ex - 1075 : -1074;
}

/* S1 += n * mean, S2 += m2 + n * mean^2, exactly. */
static void f32_accumulate(imgstat_pool_channel *c, uint64_t n, double mean,
                           double m2) {
  int neg, e;
  uint64_t m;
  f64_split(mean, &neg, &m, &e);
  if (m) {
    u128 nm = (u128)n * m; /* < 2^117 */
    uint64_t t1[2] = {(uint64_t)nm, (uint64_t)(nm >> 64)};
    big_add_shifted(c->fsum, FSUM_WORDS, t1, 2, (unsigned)(e - FSUM_UNIT), neg);
    u128 mm = (u128)m * m; /* < 2^106 */
    u128 lo = (u128)(uint64_t)mm * n, hi = (u128)(uint64_t)(mm >> 64) * n;
    u128 mid = (lo >> 64) + (uint64_t)hi;
    uint64_t t2[3] = {(uint64_t)lo, (uint64_t)mid,
                      (uint64_t)((mid >> 64) + (hi >> 64))};
    big_add_shifted(c->fsq, FSQ_WORDS, t2, 3, (unsigned)(2 * e - FSQ_UNIT), 0);
  }
  f64_split(m2, &neg, &m, &e);
  if (m)
    big_add_shifted(c->fsq, FSQ_WORDS, &m, 1, (unsigned)(e - FSQ_UNIT), 0);
}

/* Whether channel c of a pool can take count more samples, nan_count more
 * NaNs and inf_count more infinities; fills err (naming the channel) when
 * not. */
static imgstat_status check_counts(const imgstat_pool_channel *c,
                                   uint64_t count, uint64_t nan_count,
                                   uint64_t inf_count, int channel,
                                   imgstat_error *err) {
  if (add_overflows(c->count, count) ||
      add_overflows(c->nan_count, nan_count) ||
      add_overflows(c->inf_count, inf_count))
    return imgstat_error_set(err, IMGSTAT_ERR_LIMIT,
                             "channel %d: the pool's sample count would "
                             "overflow 64 bits",
                             channel);
  return IMGSTAT_OK;
}

/* Whether partial p of an image of the given sample type and width can be
 * pooled; fills err when not. */
static imgstat_status check_partial(const imgstat_partial *p,
                                    const imgstat_pool_channel *c,
                                    imgstat_sample sample, uint32_t width,
                                    int channel, imgstat_error *err) {
  imgstat_status st =
      check_counts(c, p->count, p->nan_count, p->inf_count, channel, err);
  if (st != IMGSTAT_OK || p->count == 0)
    return st;
  double top = sample == IMGSTAT_U8 ? 255.0 : 65535.0;
  int values_ok = p->min <= p->max;
  if (sample == IMGSTAT_F32)
    values_ok = values_ok && isfinite(p->min) && isfinite(p->max) &&
                isfinite(p->mean) && isfinite(p->m2) && p->m2 >= 0.0;
  else
    values_ok = values_ok && p->min >= 0.0 && p->max <= top;
  if (!values_ok)
    return imgstat_error_set(err, IMGSTAT_ERR_ARG,
                             "channel %d: the partial's values are not those "
                             "of an image (min, max, mean or m2)",
                             channel);
  if (width == 0 || p->min_index / width > UINT32_MAX ||
      p->max_index / width > UINT32_MAX)
    return imgstat_error_set(err, IMGSTAT_ERR_ARG,
                             "channel %d: the extrema's indices do not fit "
                             "an image %u pixels wide",
                             channel, width);
  return IMGSTAT_OK;
}

imgstat_status imgstat_pool_add(imgstat_pool *pool, uint64_t ordinal,
                                const imgstat_partial *parts, int channels,
                                imgstat_sample sample, uint32_t width,
                                imgstat_error *err) {
  if (!pool || !parts || channels < 1 || channels > IMGSTAT_POOL_MAX_CHANNELS ||
      !sample_ok(sample))
    return imgstat_error_set(err, IMGSTAT_ERR_ARG,
                             "imgstat_pool_add: no pool, no partials, or a "
                             "bad channel count or sample type");
  imgstat_status st = check_layout(pool, channels, sample, "the image", err);
  if (st != IMGSTAT_OK)
    return st;
  if (add_overflows(pool->images, 1))
    return imgstat_error_set(err, IMGSTAT_ERR_LIMIT,
                             "the pool's image count would overflow");
  for (int c = 0; c < channels; c++) {
    st = check_partial(&parts[c], &pool->ch[c], sample, width, c, err);
    if (st != IMGSTAT_OK)
      return st;
  }

  pool->channels = channels;
  pool->sample = sample;
  pool->images++;
  for (int c = 0; c < channels; c++) {
    const imgstat_partial *p = &parts[c];
    imgstat_pool_channel *pc = &pool->ch[c];
    pc->nan_count += p->nan_count;
    pc->inf_count += p->inf_count;
    if (p->count == 0)
      continue;
    imgstat_pool_key kmin = {ordinal, (uint32_t)(p->min_index % width),
                             (uint32_t)(p->min_index / width)};
    imgstat_pool_key kmax = {ordinal, (uint32_t)(p->max_index % width),
                             (uint32_t)(p->max_index / width)};
    offer_extrema(pc, p->min, kmin, p->max, kmax);
    pc->count += p->count;
    if (sample == IMGSTAT_F32) {
      f32_accumulate(pc, p->count, p->mean, p->m2);
    } else {
      pc->sum = u128_split(u128_of(pc->sum) + p->sum);
      pc->sumsq = u128_split(u128_of(pc->sumsq) + p->sumsq);
    }
  }
  return IMGSTAT_OK;
}

imgstat_status imgstat_pool_merge(imgstat_pool *a, const imgstat_pool *b,
                                  imgstat_error *err) {
  if (!a || !b || a == b)
    return imgstat_error_set(err, IMGSTAT_ERR_ARG,
                             "imgstat_pool_merge: two distinct pools needed");
  if (b->channels == 0)
    return IMGSTAT_OK;
  if (a->channels == 0) {
    *a = *b;
    return IMGSTAT_OK;
  }
  imgstat_status st = check_layout(a, b->channels, b->sample, "the pool", err);
  if (st != IMGSTAT_OK)
    return st;
  if (add_overflows(a->images, b->images))
    return imgstat_error_set(err, IMGSTAT_ERR_LIMIT,
                             "the pool's image count would overflow");
  for (int c = 0; c < a->channels; c++) {
    const imgstat_pool_channel *y = &b->ch[c];
    st = check_counts(&a->ch[c], y->count, y->nan_count, y->inf_count, c, err);
    if (st != IMGSTAT_OK)
      return st;
  }

  a->images += b->images;
  for (int c = 0; c < a->channels; c++) {
    imgstat_pool_channel *x = &a->ch[c];
    const imgstat_pool_channel *y = &b->ch[c];
    x->nan_count += y->nan_count;
    x->inf_count += y->inf_count;
    if (y->count == 0)
      continue;
    offer_extrema(x, y->min, y->min_key, y->max, y->max_key);
    x->count += y->count;
    /* Both sums are zero in pools of the other kind. */
    x->sum = u128_split(u128_of(x->sum) + u128_of(y->sum));
    x->sumsq = u128_split(u128_of(x->sumsq) + u128_of(y->sumsq));
    big_add(x->fsum, y->fsum, FSUM_WORDS);
    big_add(x->fsq, y->fsq, FSQ_WORDS);
  }
  return IMGSTAT_OK;
}

/* ---- figures ------------------------------------------------------------- */

static void int_figures(const imgstat_pool_channel *c, int ddof,
                        imgstat_pool_figures *out) {
  uint64_t sum[2] = {c->sum.lo, c->sum.hi};
  uint64_t sumsq[2] = {c->sumsq.lo, c->sumsq.hi};
  out->sum_is_exact = 1;
  out->exact_sum = c->sum;
  out->exact_sumsq = c->sumsq;
  out->sum = big_div_round(sum, 2, 1, 0);
  if (!out->has_values)
    return;
  out->mean = big_div_round(sum, 2, c->count, 0);
  if (!out->has_std)
    return;
  /* d = N * sumsq - sum^2 < 2^192: exact. */
  uint64_t d[4], sq[4];
  big_mul(d, sumsq, 2, &c->count, 1);
  d[3] = 0;
  big_mul(sq, sum, 2, sum, 2);
  if (big_sub(d, sq, 4)) /* not from images; never negative from them */
    memset(d, 0, sizeof d);
  out->std = std_from(d, 4, 0, c->count, ddof);
}

static void f32_figures(const imgstat_pool_channel *c, int ddof,
                        imgstat_pool_figures *out) {
  uint64_t s1[FSUM_WORDS];
  memcpy(s1, c->fsum, sizeof s1);
  int neg = (int)(s1[FSUM_WORDS - 1] >> 63);
  if (neg)
    big_negate(s1, FSUM_WORDS);
  double sign = neg ? -1.0 : 1.0;
  out->sum = sign * big_div_round(s1, FSUM_WORDS, 1, FSUM_UNIT);
  if (!out->has_values)
    return;
  out->mean = sign * big_div_round(s1, FSUM_WORDS, c->count, FSUM_UNIT);
  if (!out->has_std)
    return;
  /* d = N * S2 - S1^2 = N * M2, in units of 2^-2148: exact. */
  uint64_t d[WIDE_WORDS], sq[WIDE_WORDS];
  memset(d, 0, sizeof d);
  big_mul(d, c->fsq, FSQ_WORDS, &c->count, 1);
  big_mul(sq, s1, FSUM_WORDS, s1, FSUM_WORDS);
  if (big_sub(d, sq, WIDE_WORDS))
    memset(d, 0, sizeof d);
  out->std = std_from(d, WIDE_WORDS, FSQ_UNIT, c->count, ddof);
}

imgstat_status imgstat_pool_figures_compute(const imgstat_pool *pool,
                                            int channel, int ddof,
                                            imgstat_pool_figures *out,
                                            imgstat_error *err) {
  if (!pool || !out || channel < 0 || channel >= pool->channels)
    return imgstat_error_set(err, IMGSTAT_ERR_ARG,
                             "imgstat_pool_figures_compute: no channel %d in "
                             "the pool",
                             channel);
  if (ddof < 0)
    ddof = 0;
  const imgstat_pool_channel *c = &pool->ch[channel];
  memset(out, 0, sizeof *out);
  out->count = c->count;
  out->nan_count = c->nan_count;
  out->inf_count = c->inf_count;
  out->has_values = c->count > 0;
  out->has_std = c->count > (uint64_t)ddof;
  out->min = c->min;
  out->max = c->max;
  out->min_key = c->min_key;
  out->max_key = c->max_key;
  if (pool->sample == IMGSTAT_F32)
    f32_figures(c, ddof, out);
  else
    int_figures(c, ddof, out);
  imgstat_u128_format(out->exact_sum, out->exact_sum_text);
  return IMGSTAT_OK;
}

/* ---- serialized form ----------------------------------------------------- */

#define POOL_MAGIC "IMGSPOOL"
#define POOL_VERSION 1u
#define HEADER_BYTES 32
#define CHECKSUM_BYTES 8
#define CHANNEL_BYTES 72 /* counts, min and max with their keys */
#define INT_BYTES 32     /* sum and sumsq */
#define F32_BYTES (8 * (FSUM_WORDS + FSQ_WORDS))

static size_t serialized_size(int channels, imgstat_sample sample) {
  size_t per = CHANNEL_BYTES + (sample == IMGSTAT_F32 ? F32_BYTES : INT_BYTES);
  return HEADER_BYTES + (size_t)channels * per + CHECKSUM_BYTES;
}

size_t imgstat_pool_serialized_size(const imgstat_pool *pool) {
  return serialized_size(pool->channels, pool->sample);
}

static void put_key(uint8_t **p, imgstat_pool_key k) {
  ist_le_put64(p, k.ordinal);
  ist_le_put32(p, k.x);
  ist_le_put32(p, k.y);
}

static imgstat_pool_key get_key(const uint8_t **p) {
  imgstat_pool_key k;
  k.ordinal = ist_le_get64(p);
  k.x = ist_le_get32(p);
  k.y = ist_le_get32(p);
  return k;
}

imgstat_status imgstat_pool_serialize(const imgstat_pool *pool, void *buf,
                                      size_t size, size_t *used,
                                      imgstat_error *err) {
  if (!pool)
    return imgstat_error_set(err, IMGSTAT_ERR_ARG,
                             "imgstat_pool_serialize: no pool");
  size_t need = imgstat_pool_serialized_size(pool);
  if (used)
    *used = need;
  if (!buf || size < need)
    return imgstat_error_set(err, IMGSTAT_ERR_ARG,
                             "imgstat_pool_serialize: the buffer holds %zu "
                             "bytes, the pool needs %zu",
                             buf ? size : 0, need);
  uint8_t *p = buf;
  memcpy(p, POOL_MAGIC, 8);
  p += 8;
  ist_le_put32(&p, POOL_VERSION);
  ist_le_put32(&p, (uint32_t)pool->channels);
  ist_le_put32(&p, pool->channels ? (uint32_t)pool->sample : 0);
  ist_le_put32(&p, 0); /* reserved */
  ist_le_put64(&p, pool->images);
  for (int c = 0; c < pool->channels; c++) {
    const imgstat_pool_channel *ch = &pool->ch[c];
    ist_le_put64(&p, ch->count);
    ist_le_put64(&p, ch->nan_count);
    ist_le_put64(&p, ch->inf_count);
    ist_le_put_f64(&p, ch->min);
    put_key(&p, ch->min_key);
    ist_le_put_f64(&p, ch->max);
    put_key(&p, ch->max_key);
    if (pool->sample == IMGSTAT_F32) {
      for (int i = 0; i < FSUM_WORDS; i++)
        ist_le_put64(&p, ch->fsum[i]);
      for (int i = 0; i < FSQ_WORDS; i++)
        ist_le_put64(&p, ch->fsq[i]);
    } else {
      ist_le_put64(&p, ch->sum.lo);
      ist_le_put64(&p, ch->sum.hi);
      ist_le_put64(&p, ch->sumsq.lo);
      ist_le_put64(&p, ch->sumsq.hi);
    }
  }
  ist_le_put64(&p, ist_fnv1a(buf, need - CHECKSUM_BYTES));
  return IMGSTAT_OK;
}

/* Whether a read channel is one a pool can hold. */
static int channel_plausible(const imgstat_pool_channel *c,
                             imgstat_sample sample) {
  if (c->count == 0) {
    uint64_t zero[FSQ_WORDS] = {0};
    return c->min == INFINITY && c->max == -INFINITY && u128_of(c->sum) == 0 &&
           u128_of(c->sumsq) == 0 && big_is_zero(c->fsum, FSUM_WORDS) &&
           memcmp(c->fsq, zero, sizeof zero) == 0;
  }
  if (!(c->min <= c->max))
    return 0;
  if (sample == IMGSTAT_F32)
    return isfinite(c->min) && isfinite(c->max);
  return c->min >= 0.0 && c->max <= (sample == IMGSTAT_U8 ? 255.0 : 65535.0);
}

imgstat_status imgstat_pool_deserialize(imgstat_pool *pool, const void *buf,
                                        size_t size, imgstat_error *err) {
  if (!pool || !buf)
    return imgstat_error_set(err, IMGSTAT_ERR_ARG,
                             "imgstat_pool_deserialize: no pool or buffer");
  const uint8_t *start = buf, *p = buf;
  if (size < HEADER_BYTES + CHECKSUM_BYTES || memcmp(p, POOL_MAGIC, 8) != 0)
    return imgstat_error_set(err, IMGSTAT_ERR_FORMAT,
                             "not a serialized imgstat pool");
  p += 8;
  uint32_t version = ist_le_get32(&p);
  if (version != POOL_VERSION)
    return imgstat_error_set(err, IMGSTAT_ERR_FORMAT,
                             "serialized pool of version %u; this library "
                             "reads version %u",
                             version, POOL_VERSION);
  uint32_t channels = ist_le_get32(&p), sample = ist_le_get32(&p),
           reserved = ist_le_get32(&p);
  int layout_ok = reserved == 0 &&
                  ((channels == 0 && sample == 0) ||
                   (channels >= 1 && channels <= IMGSTAT_POOL_MAX_CHANNELS &&
                    sample_ok((imgstat_sample)sample)));
  if (!layout_ok)
    return imgstat_error_set(err, IMGSTAT_ERR_FORMAT,
                             "serialized pool: bad layout (%u channels, "
                             "sample %u)",
                             channels, sample);
  size_t need = serialized_size((int)channels, (imgstat_sample)sample);
  if (size != need)
    return imgstat_error_set(err, IMGSTAT_ERR_FORMAT,
                             "serialized pool: %zu bytes, its layout needs %zu",
                             size, need);
  const uint8_t *sum_at = start + need - CHECKSUM_BYTES;
  if (ist_le_get64(&sum_at) != ist_fnv1a(start, need - CHECKSUM_BYTES))
    return imgstat_error_set(err, IMGSTAT_ERR_FORMAT,
                             "serialized pool: damaged (checksum mismatch)");

  imgstat_pool q;
  imgstat_pool_init(&q);
  q.channels = (int)channels;
  q.sample = (imgstat_sample)sample;
  q.images = ist_le_get64(&p);
  int ok = channels > 0 || q.images == 0;
  for (uint32_t c = 0; c < channels; c++) {
    imgstat_pool_channel *ch = &q.ch[c];
    ch->count = ist_le_get64(&p);
    ch->nan_count = ist_le_get64(&p);
    ch->inf_count = ist_le_get64(&p);
    ch->min = ist_le_get_f64(&p);
    ch->min_key = get_key(&p);
    ch->max = ist_le_get_f64(&p);
    ch->max_key = get_key(&p);
    if (q.sample == IMGSTAT_F32) {
      for (int i = 0; i < FSUM_WORDS; i++)
        ch->fsum[i] = ist_le_get64(&p);
      for (int i = 0; i < FSQ_WORDS; i++)
        ch->fsq[i] = ist_le_get64(&p);
    } else {
      ch->sum.lo = ist_le_get64(&p);
      ch->sum.hi = ist_le_get64(&p);
      ch->sumsq.lo = ist_le_get64(&p);
      ch->sumsq.hi = ist_le_get64(&p);
    }
    ok = ok && channel_plausible(ch, q.sample);
  }
  if (!ok)
    return imgstat_error_set(err, IMGSTAT_ERR_FORMAT,
                             "serialized pool: contents no pool can have");
  *pool = q;
  return IMGSTAT_OK;
}
