/*
 * JPEG through libjpeg-turbo's TurboJPEG API (2.1, as in Debian 12) when the
 * build found it; stb_image is the fallback (see docs/benchmarks.md,
 * "Decoding", for why: TurboJPEG is much faster on large photos).
 *
 * Gray JPEGs decode straight into their plane (TurboJPEG takes the row
 * stride as its pitch); colour ones decode to RGB and are split into planes;
 * CMYK and YCCK ones decode to their four stored samples, which are made RGB as
 * stb_image does (it decoded them before). Any libjpeg warning (premature end
 * of file, corrupt entropy-coded data,
 * ...) rejects the file: the decoder would otherwise invent pixels and the
 * statistics would describe data that is not there. So does a component that
 * no scan codes, a file too small for the size its header claims, and a
 * progressive file of more than 500 scans.
 */
#include "image_rows.h"
#include "imgstat/imgstat.h"
#include "io.h"

#include <limits.h>
#include <stdlib.h>
#include <string.h>

#ifdef IMGSTAT_HAVE_TURBOJPEG

#include <turbojpeg.h>

static imgstat_status tj_failure(tjhandle tj, imgstat_error *err) {
  const char *why = tjGetErrorStr2(tj);
  /* "Unsupported marker type 0x3b" -> "Corrupt JPEG data: unsupported
   * marker type 0x3b"; libjpeg's own "Corrupt JPEG data: ..." stays */
  return ist_corrupt(err, "JPEG", "%s", why && *why ? why : "TurboJPEG failed");
}

/* ---- what the marker segments say ----------------------------------------
 *
 * TurboJPEG reports a frame's size and colour space but not its sampling
 * factors, its coding or its scans, which the checks below need; so the
 * segments are walked here too, entropy-coded data skipped. libjpeg has read
 * the header already (tjDecompressHeader3 fails on any irregularity there)
 * and rejects anything odd later in the file, so this walk only has to be
 * right for the files libjpeg accepts. */

typedef struct jpeg_layout {
  int frame;       /* an SOF segment with 1 to 4 components was found */
  int progressive; /* SOF2 or SOF10 (SOF6/14 are hierarchical: unsupported) */
  int arithmetic;  /* SOF9 and above: arithmetic coding */
  uint32_t width, height;
  int ncomp;
  int id[4], h[4], v[4]; /* component ids and sampling factors */
  /* Whether each component's blocks are coded somewhere: in any scan of a
   * sequential frame, in a first DC scan (Ss = 0, Ah = 0) of a progressive
   * one (libjpeg warns, so we refuse, when an AC or refinement scan comes
   * before it). */
  int coded[4];
  unsigned scans; /* SOS segments */
  /* The colour transform of the last APP14 "Adobe" segment, read as
   * stb_image 2.27 reads it (stbi__process_marker: at least 12 bytes, the
   * 6-byte tag "Adobe\0", the transform in byte 11, anywhere before EOI);
   * -1 when there is none. */
  int adobe_transform;
} jpeg_layout;

static int is_sof(unsigned m) {
  return m >= 0xC0 && m <= 0xCF && m != 0xC4 && m != 0xC8 && m != 0xCC;
}

static void jpeg_read_sof(jpeg_layout *L, unsigned m, const unsigned char *s,
                          size_t len) {
  if (L->frame || len < 6 || s[5] < 1 || s[5] > 4 || len != 6 + 3u * s[5])
    return;
  L->frame = 1;
  L->progressive = (m & 3) == 2;
  L->arithmetic = m >= 0xC9;
  L->height = (uint32_t)s[1] << 8 | s[2];
  L->width = (uint32_t)s[3] << 8 | s[4];
  L->ncomp = s[5];
  for (int c = 0; c < L->ncomp; c++) {
    L->id[c] = s[6 + 3 * c];
    L->h[c] = s[7 + 3 * c] >> 4;
    L->v[c] = s[7 + 3 * c] & 15;
  }
}

static void jpeg_read_sos(jpeg_layout *L, const unsigned char *s, size_t len) {
  L->scans++;
  if (!L->frame || len < 1 || len != 4 + 2u * s[0])
    return;
  int ns = s[0];
  int ss = s[1 + 2 * ns], ah = s[3 + 2 * ns] >> 4;
  if (L->progressive && (ss != 0 || ah != 0))
    return; /* not a first DC scan */
  for (int k = 0; k < ns; k++)
    for (int c = 0; c < L->ncomp; c++)
      if (L->id[c] == s[1 + 2 * k])
        L->coded[c] = 1;
}

static void jpeg_walk(const unsigned char *p, size_t n, jpeg_layout *L) {
  memset(L, 0, sizeof *L);
  L->adobe_transform = -1;
  size_t i = 2; /* past SOI */
  while (i + 1 < n) {
    const unsigned char *ff = memchr(p + i, 0xFF, n - i);
    if (!ff)
      break;
    i = (size_t)(ff - p);
    if (i + 1 >= n)
      break;
    unsigned m = p[i + 1];
    if (m == 0xFF) { /* a fill byte before a marker */
      i++;
      continue;
    }
    if (m == 0x00 || m == 0x01 || (m >= 0xD0 && m <= 0xD8)) {
      i += 2; /* stuffed 0xFF in entropy-coded data, TEM, RSTn, SOI */
      continue;
    }
    if (m == 0xD9 || i + 4 > n)
      break; /* EOI, or a segment cut short (libjpeg refuses the file) */
    size_t len = (size_t)p[i + 2] << 8 | p[i + 3];
    if (len < 2 || len > n - i - 2)
      break;
    const unsigned char *s = p + i + 4;
    len -= 2;
    if (is_sof(m))
      jpeg_read_sof(L, m, s, len);
    else if (m == 0xDA)
      jpeg_read_sos(L, s, len);
    else if (m == 0xEE && len >= 12 && memcmp(s, "Adobe\0", 6) == 0)
      L->adobe_transform = s[11];
    i += 4 + len;
  }
}

/* libjpeg picks a 4-component JPEG's colour space from the first APP14
 * "Adobe" segments before the first scan (jdmarker.c examine_app14: at least
 * 12 bytes, "Adobe", the transform in byte 11): 0 or no segment is CMYK,
 * whose samples TurboJPEG returns as stored; 2 is YCCK, which it converts
 * with its own YCbCr arithmetic. Setting those transforms to 0 makes it
 * return YCCK's stored samples too, so that they are converted below with
 * stb_image's arithmetic, as before. */
static void jpeg_adobe_to_cmyk(unsigned char *p, size_t n) {
  size_t i = 2;
  while (i + 4 <= n && p[i] == 0xFF) {
    unsigned m = p[i + 1];
    if (m == 0xFF) {
      i++;
      continue;
    }
    if (m == 0xDA || m == 0xD9)
      break;
    size_t len = (size_t)p[i + 2] << 8 | p[i + 3];
    if (len < 2 || len > n - i - 2)
      break;
    if (m == 0xEE && len - 2 >= 12 && memcmp(p + i + 4, "Adobe", 5) == 0)
      p[i + 4 + 11] = 0;
    i += 2 + len;
  }
}

/* The fewest bytes in which a Huffman-coded JPEG that we accept can hold an
 * image of this frame. Every component's blocks are coded in some scan (we
 * refuse the file otherwise: see jpeg_layout.coded), and each block coded
 * there costs at least one bit: a sequential scan codes its DC difference
 * and its end of block, a first progressive DC scan its DC difference, each
 * with a Huffman code, and Huffman codes are 1 to 16 bits long. (Only AC
 * scans can code many blocks in one code, with end-of-band runs.) libjpeg
 * notices a scan whose data ends before its last block ("premature end of
 * data segment", a warning: refused). A scan codes at least ceil(w / 8) x
 * ceil(h / 8) blocks of a component that is w x h samples; stuffing, restart
 * markers and padding only add bytes. Around that data there is at least
 * SOI, the SOF segment, one SOS segment and EOI.
 *
 * Arithmetic coding can spend far less than a bit on a block (the QM coder
 * codes a very likely decision in a tiny fraction of a bit, and it may even
 * stop before its data is used up: the decoder then reads zeros), so such a
 * frame only needs its headers. */
static uint64_t jpeg_min_input(const jpeg_layout *L) {
  uint64_t bytes = 2 + (10 + 3 * (uint64_t)L->ncomp) + 10 + 2;
  if (L->arithmetic)
    return bytes;
  int hmax = 1, vmax = 1;
  for (int c = 0; c < L->ncomp; c++) {
    hmax = L->h[c] > hmax ? L->h[c] : hmax;
    vmax = L->v[c] > vmax ? L->v[c] : vmax;
  }
  uint64_t bits = 0;
  for (int c = 0; c < L->ncomp; c++) {
    uint64_t w = ((uint64_t)L->width * (uint64_t)L->h[c] + hmax - 1) / hmax;
    uint64_t h = ((uint64_t)L->height * (uint64_t)L->v[c] + vmax - 1) / vmax;
    bits += ((w + 7) / 8) * ((h + 7) / 8);
  }
  return bytes + (bits + 7) / 8;
}

/* ---- CMYK and YCCK to RGB, as stb_image 2.27 does it --------------------
 *
 * TurboJPEG cannot make RGB of a 4-component JPEG, and stb_image used to
 * decode these; its results are kept by converting TurboJPEG's samples with
 * the arithmetic of stb's load_jpeg_image: with the Adobe transform 0 (CMYK)
 * each of the first three samples is multiplied by the fourth, with 2 (YCCK)
 * the first three are YCbCr made RGB, inverted and multiplied by the fourth,
 * and otherwise (no Adobe segment) they are YCbCr made RGB and the fourth is
 * ignored. The samples are TurboJPEG's, whose IDCT rounds differently from
 * stb's in a few places (by 1), as for every other JPEG. */

/* x * y / 255, rounded, in integers (stbi__blinn_8x8). */
static unsigned char mul_255(unsigned x, unsigned y) {
  unsigned t = x * y + 128;
  return (unsigned char)((t + (t >> 8)) >> 8);
}

/* a / d rounded down (C's division rounds toward zero). */
static int32_t floor_div(int32_t a, int32_t d) {
  int32_t q = a / d;
  return a % d != 0 && a < 0 ? q - 1 : q;
}

static unsigned char clamp_255(int32_t v) {
  return v < 0 ? 0 : v > 255 ? 255 : (unsigned char)v;
}

/* stb's YCbCr to RGB (stbi__YCbCr_to_RGB_row; its SSE2 and NEON versions
 * give the same results): fixed point with 20 fraction bits and the
 * coefficients 1.402, 0.71414, 0.34414 and 1.772 rounded to 12 of them, and
 * the Cb term of green rounded down to a multiple of 2^16 before the sum. */
static void ycc_to_rgb(unsigned y, unsigned cb, unsigned cr,
                       unsigned char rgb[3]) {
  const int32_t one = (int32_t)1 << 20;
  const int32_t k_r = 5743 << 8, k_gr = 2925 << 8, k_gb = 1410 << 8,
                k_b = 7258 << 8;
  int32_t yy = (int32_t)y * one + one / 2;
  int32_t b = (int32_t)cb - 128, r = (int32_t)cr - 128;
  int32_t g_cb = floor_div(-b * k_gb, 1 << 16) * (1 << 16);
  rgb[0] = clamp_255(floor_div(yy + r * k_r, one));
  rgb[1] = clamp_255(floor_div(yy - r * k_gr + g_cb, one));
  rgb[2] = clamp_255(floor_div(yy + b * k_b, one));
}

static void cmyk_to_planes(const unsigned char *px, int transform,
                           imgstat_image *img) {
  for (uint32_t y = 0; y < img->height; y++) {
    unsigned char *r = ist_image_row(img, 0, y), *g = ist_image_row(img, 1, y),
                  *b = ist_image_row(img, 2, y);
    for (uint32_t x = 0; x < img->width; x++, px += 4) {
      unsigned char rgb[3];
      if (transform == 0) {
        rgb[0] = mul_255(px[0], px[3]);
        rgb[1] = mul_255(px[1], px[3]);
        rgb[2] = mul_255(px[2], px[3]);
      } else {
        ycc_to_rgb(px[0], px[1], px[2], rgb);
        if (transform == 2)
          for (int c = 0; c < 3; c++)
            rgb[c] = mul_255(255u - rgb[c], px[3]);
      }
      r[x] = rgb[0];
      g[x] = rgb[1];
      b[x] = rgb[2];
    }
  }
}

/* ---- decoding ------------------------------------------------------------ */

typedef struct jpeg_state {
  const unsigned char *jpeg; /* the whole file */
  int owned;                 /* jpeg is our copy of a file input */
  unsigned long size;
  tjhandle tj;
  int width, height, colorspace, four;
  int adobe_transform;
  int arithmetic; /* the frame's coding (for ist_jpeg_gpu_input) */
} jpeg_state;

/* The one libjpeg warning that loses nothing of the picture: bytes that are
 * no marker between two segments before the first scan ("Corrupt JPEG data:
 * N extraneous bytes before marker 0xXX", JWRN_EXTRANEOUS_DATA: a few stray
 * bytes before a DQT or an APPn segment, an APP1 EXIF block longer than its
 * length field says). libjpeg skips them to the next marker (jdmarker.c
 * next_marker) and reads every segment after it whole; no pixel has been
 * decoded yet. Every other warning stays fatal (TJFLAG_STOPONWARNING):
 * such bytes after or between scans (where the entropy-coded data ended
 * early or went on too long), a premature end of data or of the file,
 * corrupt Huffman or arithmetic data, a restart marker out of place, a
 * bogus progression; each means pixels missing or invented.
 *
 * So the bytes are cut out here, as next_marker skips them (non-0xFF bytes
 * and stuffed 0xFF 0x00 pairs, not the 0xFF fill bytes before a marker),
 * before anything else reads the file: TurboJPEG then decodes it with no
 * warning and stops on any other, the GPU path gets the same bytes, and
 * what was cut is said in d->warning, libjpeg's count and marker. */
static imgstat_status jpeg_cut_header_junk(jpeg_state *js, char *warning,
                                           size_t wsize, imgstat_error *err);

/* Opening reads the file into memory (TurboJPEG decodes from a buffer),
 * its header and its marker segments. The scans are counted here
 * (IMGSTAT_JPEG_MAX_SCANS), so that such a file is refused before any is
 * decoded; TJFLAG_LIMITSCANS stays as the backstop. */
imgstat_status ist_jpeg_open(imgstat_decoder *d, imgstat_error *err) {
  ist_source *src = &d->src;
  if (src->size > (size_t)(unsigned long)-1)
    return imgstat_error_set(err, IMGSTAT_ERR_LIMIT, "JPEG file too large");
  jpeg_state *js = calloc(1, sizeof *js);
  if (!js)
    return imgstat_error_set(err, IMGSTAT_ERR_NOMEM,
                             "out of memory opening a JPEG");
  d->state = js;
  imgstat_status s = ist_source_slurp(src, &js->jpeg, &js->owned, err);
  if (s != IMGSTAT_OK)
    return s;
  js->size = (unsigned long)src->size;
  s = jpeg_cut_header_junk(js, d->warning, sizeof d->warning, err);
  if (s != IMGSTAT_OK)
    return s;

  js->tj = tjInitDecompress();
  if (!js->tj)
    return tj_failure(NULL, err);
  /* A tables-only JPEG (SOI, tables, EOI) passes tjDecompressHeader3
   * without any of these being set. */
  int width = 0, height = 0, subsamp = -1, colorspace = -1;
  if (tjDecompressHeader3(js->tj, js->jpeg, js->size, &width, &height, &subsamp,
                          &colorspace) != 0)
    return tj_failure(js->tj, err);
  jpeg_layout layout;
  jpeg_walk(js->jpeg, js->size, &layout);
  if (width <= 0 || height <= 0 || !layout.frame)
    return ist_corrupt(err, "JPEG", "no frame header (SOF)");
  int four = colorspace == TJCS_CMYK || colorspace == TJCS_YCCK;
  if (four != (layout.ncomp == 4))
    return ist_corrupt(err, "JPEG", "frame header is inconsistent");
  /* The size check comes before anything is decoded or allocated: a gray
   * image decodes into its plane, a colour one into an RGB buffer (CMYK:
   * a 4-sample one) that is then split into planes beside it. */
  uint64_t pixels = (uint64_t)width * (uint64_t)height;
  uint64_t peak = colorspace == TJCS_GRAY ? pixels
                  : four                  ? 7 * pixels
                                          : 6 * pixels;
  s = ist_decode_check(&d->lim, (uint32_t)width, (uint32_t)height, peak,
                       jpeg_min_input(&layout), src->size, "JPEG", err);
  if (s != IMGSTAT_OK)
    return s;
  /* libjpeg decodes a component that no scan codes (or, progressive, no DC
   * scan) as flat gray, without a warning: that is missing data. */
  for (int c = 0; c < layout.ncomp; c++)
    if (!layout.coded[c])
      return ist_corrupt(err, "JPEG",
                         "no scan data for component %d of %d (truncated or "
                         "corrupt)",
                         c + 1, layout.ncomp);

  if (layout.scans > IMGSTAT_JPEG_MAX_SCANS)
    return imgstat_error_set(err, IMGSTAT_ERR_LIMIT,
                             "JPEG has %u scans: more than %d scans are "
                             "refused (each one costs a pass over the image)",
                             layout.scans, IMGSTAT_JPEG_MAX_SCANS);
  js->width = width;
  js->height = height;
  js->colorspace = colorspace;
  js->four = four;
  js->adobe_transform = layout.adobe_transform;
  js->arithmetic = layout.arithmetic;
  ist_header_set(&d->header, (uint32_t)width, (uint32_t)height,
                 colorspace == TJCS_GRAY ? 1 : 3, IMGSTAT_U8, "JPEG");
  return IMGSTAT_OK;
}

/* The gap at p[i...] before the next marker, as next_marker reads it: the
 * bytes it discards (*discarded: libjpeg's count), where the 0xFF bytes
 * before the marker start (*ff) and the marker code's offset (*code); 0
 * when the file ends first. */
static int jpeg_next_marker(const unsigned char *p, size_t n, size_t i,
                            unsigned *discarded, size_t *ff, size_t *code) {
  *discarded = 0;
  for (;;) {
    while (i < n && p[i] != 0xFF) {
      (*discarded)++;
      i++;
    }
    *ff = i;
    while (i < n && p[i] == 0xFF)
      i++;
    if (i >= n)
      return 0;
    if (p[i] != 0) {
      *code = i;
      return 1;
    }
    *discarded += 2; /* a stuffed 0xFF 0x00 */
    i++;
  }
}

static imgstat_status jpeg_cut_header_junk(jpeg_state *js, char *warning,
                                           size_t wsize, imgstat_error *err) {
  const unsigned char *p = js->jpeg;
  size_t n = js->size, i = 2, o = 0, wrote = 0;
  unsigned char *out = NULL; /* the file without the gaps, once one is met */
  unsigned gaps = 0;
  for (;;) {
    unsigned discarded;
    size_t ff, code;
    if (!jpeg_next_marker(p, n, i, &discarded, &ff, &code))
      break; /* the rest as it is: libjpeg says what is wrong */
    unsigned m = p[code];
    if (discarded) {
      if (!out) {
        out = malloc(n);
        if (!out)
          return imgstat_error_set(err, IMGSTAT_ERR_NOMEM,
                                   "out of memory opening a JPEG");
        memcpy(out, p, i);
        o = i;
      }
      if (gaps++ < 3 && wrote < wsize) {
        int k = snprintf(warning + wrote, wsize - wrote,
                         "%s%u extraneous bytes before marker 0x%02x",
                         wrote ? ", " : "", discarded, m);
        wrote += k > 0 ? (size_t)k : 0;
      }
    }
    /* The marker's segment: TEM and RSTn have no length; SOI, EOI and the
     * first scan (SOS) end the walk, as does a segment cut short. */
    size_t end;
    int last = 0;
    if (m == 0x01 || (m >= 0xD0 && m <= 0xD7)) {
      end = code + 1;
    } else if (m == 0xD8 || m == 0xD9 || m == 0xDA || code + 3 > n) {
      end = n;
      last = 1;
    } else {
      end = code + 1 + ((size_t)p[code + 1] << 8 | p[code + 2]);
      if (end >= n) {
        end = n;
        last = 1;
      }
    }
    if (out) {
      memcpy(out + o, p + ff, end - ff);
      o += end - ff;
    }
    i = end;
    if (last)
      break;
  }
  if (!out)
    return IMGSTAT_OK;
  if (i < n) {
    memcpy(out + o, p + i, n - i);
    o += n - i;
  }
  if (gaps > 3 && wrote < wsize)
    snprintf(warning + wrote, wsize - wrote, " and %u more", gaps - 3);
  size_t used = strlen(warning);
  if (used < wsize)
    snprintf(warning + used, wsize - used,
             " in the header, skipped as libjpeg does (no image data lost)");
  if (js->owned)
    free((void *)js->jpeg);
  js->jpeg = out;
  js->owned = 1;
  js->size = (unsigned long)o;
  return IMGSTAT_OK;
}

/* The compressed bytes, once they are no longer needed. */
static void jpeg_drop_input(jpeg_state *js) {
  if (js->owned)
    free((void *)js->jpeg);
  js->jpeg = NULL;
  js->owned = 0;
}

imgstat_status ist_jpeg_read(imgstat_decoder *d, imgstat_image *img,
                             imgstat_error *err) {
  jpeg_state *js = d->state;
  const int width = js->width, height = js->height;
  /* Warnings (corrupt or missing data) are errors. */
  const int flags = TJFLAG_STOPONWARNING | TJFLAG_LIMITSCANS;
  size_t stride = imgstat_image_stride(img);
  if (js->colorspace == TJCS_GRAY && stride <= INT_MAX) {
    if (tjDecompress2(js->tj, js->jpeg, js->size, img->planes[0], width,
                      (int)stride, height, TJPF_GRAY, flags) != 0)
      return tj_failure(js->tj, err);
    return IMGSTAT_OK;
  }
  /* Colour (and gray rows too far apart for TurboJPEG's int pitch): an
   * interleaved buffer, then the planes. */
  const int sample_bytes = js->four ? 4 : js->colorspace == TJCS_GRAY ? 1 : 3;
  size_t bytes;
  if (!ist_size_mul((size_t)width * (size_t)height, sample_bytes, &bytes))
    return imgstat_error_set(err, IMGSTAT_ERR_LIMIT, "JPEG image too large");
  unsigned char *pixels = malloc(bytes);
  unsigned char *patched = NULL;
  imgstat_status s = IMGSTAT_OK;
  if (!pixels) {
    s = imgstat_error_set(err, IMGSTAT_ERR_NOMEM,
                          "out of memory decoding a %dx%d JPEG", width, height);
    goto done;
  }
  const unsigned char *input = js->jpeg;
  if (js->colorspace == TJCS_YCCK) {
    /* Our own copy of the file has its transform edited in place. */
    if (!js->owned) {
      patched = malloc(js->size);
      if (!patched) {
        s = imgstat_error_set(err, IMGSTAT_ERR_NOMEM,
                              "out of memory decoding a %dx%d JPEG", width,
                              height);
        goto done;
      }
      memcpy(patched, js->jpeg, js->size);
      input = patched;
    }
    jpeg_adobe_to_cmyk((unsigned char *)input, js->size);
  }
  int format = js->four                      ? TJPF_CMYK
               : js->colorspace == TJCS_GRAY ? TJPF_GRAY
                                             : TJPF_RGB;
  if (tjDecompress2(js->tj, input, js->size, pixels, width,
                    width * sample_bytes, height, format, flags) != 0) {
    s = tj_failure(js->tj, err);
    goto done;
  }
  free(patched);
  patched = NULL;
  jpeg_drop_input(js);
  if (js->four)
    cmyk_to_planes(pixels, js->adobe_transform, img);
  else
    ist_pixels_split_image(img, pixels);
done:
  free(patched);
  free(pixels);
  return s;
}

int ist_jpeg_gpu_input(imgstat_decoder *d, const unsigned char **bytes,
                       size_t *size) {
  if (!d || !d->format || d->format->open != ist_jpeg_open || !d->state)
    return 0;
  const jpeg_state *js = d->state;
  if (!js->jpeg || js->arithmetic ||
      (js->colorspace != TJCS_GRAY && js->colorspace != TJCS_YCbCr))
    return 0;
  *bytes = js->jpeg;
  *size = js->size;
  return 1;
}

/* libjpeg reads every scan into coefficients (tjTransform without output:
 * the entropy decoding of a decode, without its IDCT, upsampling and colour
 * conversion), under the flags ist_jpeg_read decodes with, so that it stops
 * on the same warnings with the same words. */
imgstat_status ist_jpeg_check_libjpeg(imgstat_decoder *d, imgstat_error *err) {
  const unsigned char *bytes;
  size_t size;
  if (!ist_jpeg_gpu_input(d, &bytes, &size))
    return imgstat_error_set(err, IMGSTAT_ERR_ARG, "not a TurboJPEG input");
  tjhandle tj = tjInitTransform();
  if (!tj)
    return tj_failure(NULL, err);
  tjtransform xf;
  memset(&xf, 0, sizeof xf);
  xf.op = TJXOP_NONE;
  xf.options = TJXOPT_NOOUTPUT;
  unsigned char *out = NULL;
  unsigned long out_size = 0;
  imgstat_status s = IMGSTAT_OK;
  if (tjTransform(tj, bytes, (unsigned long)size, 1, &out, &out_size, &xf,
                  TJFLAG_STOPONWARNING | TJFLAG_LIMITSCANS) != 0)
    s = tj_failure(tj, err);
  tjFree(out);
  tjDestroy(tj);
  return s;
}

void ist_jpeg_close(imgstat_decoder *d) {
  jpeg_state *js = d->state;
  if (!js)
    return;
  if (js->tj)
    tjDestroy(js->tj);
  jpeg_drop_input(js);
  free(js);
  d->state = NULL;
}

#else /* no TurboJPEG: JPEG is stb_image's, never the GPU's */

int ist_jpeg_gpu_input(imgstat_decoder *d, const unsigned char **bytes,
                       size_t *size) {
  (void)d;
  (void)bytes;
  (void)size;
  return 0;
}

imgstat_status ist_jpeg_check_libjpeg(imgstat_decoder *d, imgstat_error *err) {
  (void)d;
  return imgstat_error_set(err, IMGSTAT_ERR_ARG, "not a TurboJPEG input");
}

#endif
