/*
 * WebP through libwebp: lossy and lossless, RGB, or RGBA when the file says
 * it has alpha; an animation's first frame as libwebpdemux's WebPAnimDecoder
 * composes it on the canvas (the canvas outside the frame is transparent
 * black, so an animation with alpha reads as RGBA). Decoded into one
 * interleaved buffer and split into planes.
 *
 * Only the chunks that make the picture are decoded (image_chunks: VP8X,
 * ANIM, ALPH, VP8, VP8L, the first ANMF), never metadata, later frames or
 * bytes past the RIFF: what decoding holds follows the image, and its data
 * is counted against --max-memory. A file and memory input (a pipe's
 * bounded copy, Python bytes) take this same path, so the same bytes get
 * the same answer: a damaged later frame, which libwebpdemux would refuse
 * the whole animation for, is never looked at from either.
 */
#include "dlib.h"
#include "imgstat/imgstat.h"
#include "io.h"

#ifdef IMGSTAT_HAVE_WEBP

#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <webp/decode.h>
#include <webp/demux.h>

/* libwebp and libwebpdemux, loaded when the first WebP file is opened
 * (dlib.h): the functions called below, through the loaded tables; the
 * headers' inline wrappers (WebPGetFeatures...) as the calls they make. */
/* clang-format off */
#define WEBP_SYMBOLS(X) \
  X(WebPDecode) \
  X(WebPFreeDecBuffer) \
  X(WebPGetFeaturesInternal) \
  X(WebPInitDecoderConfigInternal)
/* clang-format on */
/* clang-format off */
#define WEBPDEMUX_SYMBOLS(X) \
  X(WebPAnimDecoderDelete) \
  X(WebPAnimDecoderGetNext) \
  X(WebPAnimDecoderNewInternal) \
  X(WebPAnimDecoderOptionsInitInternal) \
  X(WebPDemuxDelete) \
  X(WebPDemuxGetI) \
  X(WebPDemuxInternal)
/* clang-format on */
IST_DLIB_TABLE(webp, WEBP_SYMBOLS);
IST_DLIB_TABLE(webpdemux, WEBPDEMUX_SYMBOLS);
#define WebPDecode IST_DLIB_FN(webp, WebPDecode)
#define WebPFreeDecBuffer IST_DLIB_FN(webp, WebPFreeDecBuffer)
#define WebPGetFeaturesInternal IST_DLIB_FN(webp, WebPGetFeaturesInternal)
#define WebPInitDecoderConfigInternal                                          \
  IST_DLIB_FN(webp, WebPInitDecoderConfigInternal)
#define WebPAnimDecoderDelete IST_DLIB_FN(webpdemux, WebPAnimDecoderDelete)
#define WebPAnimDecoderGetNext IST_DLIB_FN(webpdemux, WebPAnimDecoderGetNext)
#define WebPAnimDecoderNewInternal                                             \
  IST_DLIB_FN(webpdemux, WebPAnimDecoderNewInternal)
#define WebPAnimDecoderOptionsInitInternal                                     \
  IST_DLIB_FN(webpdemux, WebPAnimDecoderOptionsInitInternal)
#define WebPDemuxDelete IST_DLIB_FN(webpdemux, WebPDemuxDelete)
#define WebPDemuxGetI IST_DLIB_FN(webpdemux, WebPDemuxGetI)
#define WebPDemuxInternal IST_DLIB_FN(webpdemux, WebPDemuxInternal)
#define WebPGetFeatures(data, size, features)                                  \
  WebPGetFeaturesInternal(data, size, features, WEBP_DECODER_ABI_VERSION)
#define WebPInitDecoderConfig(config)                                          \
  WebPInitDecoderConfigInternal(config, WEBP_DECODER_ABI_VERSION)
#define WebPDemux(data) WebPDemuxInternal(data, 0, NULL, WEBP_DEMUX_ABI_VERSION)
#define WebPAnimDecoderOptionsInit(options)                                    \
  WebPAnimDecoderOptionsInitInternal(options, WEBP_DEMUX_ABI_VERSION)
#define WebPAnimDecoderNew(data, options)                                      \
  WebPAnimDecoderNewInternal(data, options, WEBP_DEMUX_ABI_VERSION)
static const char *const webp_files[] = {IMGSTAT_SONAME_WEBP, IMGSTAT_PATH_WEBP,
                                         NULL};
static const char *const webpdemux_files[] = {IMGSTAT_SONAME_WEBPDEMUX,
                                              IMGSTAT_PATH_WEBPDEMUX, NULL};
static ist_dlib webp_dlib =
    IST_DLIB_ROW(webp, "WebP", "libwebp", webp_files, 0);
static ist_dlib webpdemux_dlib =
    IST_DLIB_ROW(webpdemux, "WebP", "libwebpdemux", webpdemux_files, 0);
ist_dlib *const ist_webp_dlibs[] = {&webp_dlib, &webpdemux_dlib, NULL};

typedef struct webp_state {
  unsigned char *data; /* the picture's chunks (image_chunks), malloc'd */
  size_t size;
  int animated;
  int channels;
} webp_state;

static const char *status_text(VP8StatusCode st) {
  switch (st) {
  case VP8_STATUS_OUT_OF_MEMORY:
    return "out of memory";
  case VP8_STATUS_INVALID_PARAM:
    return "invalid parameter";
  case VP8_STATUS_BITSTREAM_ERROR:
    return "bitstream error";
  case VP8_STATUS_UNSUPPORTED_FEATURE:
    return "unsupported feature";
  case VP8_STATUS_SUSPENDED:
    return "decoding suspended";
  case VP8_STATUS_USER_ABORT:
    return "decoding aborted";
  case VP8_STATUS_NOT_ENOUGH_DATA:
    return "file is truncated";
  default:
    return "cannot decode the image";
  }
}

static imgstat_status webp_failure(VP8StatusCode st, imgstat_error *err) {
  if (st == VP8_STATUS_OUT_OF_MEMORY)
    return imgstat_error_set(err, IMGSTAT_ERR_NOMEM, "out of memory");
  if (st == VP8_STATUS_UNSUPPORTED_FEATURE)
    return imgstat_error_set(err, IMGSTAT_ERR_UNSUPPORTED,
                             "WebP feature not supported by libwebp");
  return ist_corrupt(err, "WebP", "%s", status_text(st));
}

/* Reads n bytes of the input at off; returns 0 when they are not all
 * there. */
static int read_at(ist_source *src, uint64_t off, void *buf, size_t n) {
  return ist_source_read_at(src, off, buf, n) == n;
}

static uint32_t le32(const unsigned char *p) {
  return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 |
         (uint32_t)p[3] << 24;
}

/* The picture's chunks of the input, as a WebP of their own in a malloc'd
 * buffer: the RIFF header, then VP8X (its metadata flags cleared), ANIM,
 * ALPH and VP8 or VP8L, or the first ANMF; a chunk cut by the end of the
 * file is copied as far as it goes (libwebp then calls it truncated). Each
 * chunk is counted against the memory budget before it is read. */
static imgstat_status image_chunks(ist_source *src, uint64_t budget,
                                   webp_state *ws, imgstat_error *err) {
  unsigned char head[12];
  if (src->size < 12 || !read_at(src, 0, head, 12))
    return src->read_errno ? imgstat_error_set(err, IMGSTAT_ERR_IO, "%s",
                                               strerror(src->read_errno))
                           : ist_corrupt(err, "WebP", "file is truncated");
  uint64_t end = 8 + (uint64_t)le32(head + 4);
  if (end > src->size)
    end = src->size;
  size_t cap = 4096, len = 12;
  unsigned char *out = malloc(cap);
  if (!out)
    return imgstat_error_set(err, IMGSTAT_ERR_NOMEM, "out of memory");
  memcpy(out, head, 12);
  imgstat_status s = IMGSTAT_OK;
  for (uint64_t at = 12; at + 8 <= end && s == IMGSTAT_OK;) {
    unsigned char ch[8];
    if (!read_at(src, at, ch, 8))
      break;
    uint64_t size = le32(ch + 4), stored = 8 + size + (size & 1);
    int image = memcmp(ch, "VP8 ", 4) == 0 || memcmp(ch, "VP8L", 4) == 0 ||
                memcmp(ch, "ANMF", 4) == 0;
    int keep = image || memcmp(ch, "VP8X", 4) == 0 ||
               memcmp(ch, "ANIM", 4) == 0 || memcmp(ch, "ALPH", 4) == 0;
    if (keep) {
      uint64_t n = stored < end - at ? stored : end - at;
      if (len + n > budget) {
        s = imgstat_error_set(err, IMGSTAT_ERR_LIMIT,
                              "WebP image data of %" PRIu64
                              " bytes is over the memory limit (%" PRIu64
                              " bytes; max_memory)",
                              (uint64_t)len + n, budget);
        imgstat_error_cause(err, IMGSTAT_CAUSE_MAX_MEMORY, budget,
                            (uint64_t)len + n, NULL);
        break;
      }
      if (len + n > cap) {
        size_t want = (size_t)(len + n);
        unsigned char *more = realloc(out, want);
        if (!more) {
          s = imgstat_error_set(err, IMGSTAT_ERR_NOMEM, "out of memory");
          break;
        }
        out = more;
        cap = want;
      }
      if (!read_at(src, at, out + len, (size_t)n)) {
        if (src->read_errno)
          s = imgstat_error_set(err, IMGSTAT_ERR_IO, "%s",
                                strerror(src->read_errno));
        break;
      }
      if (memcmp(ch, "VP8X", 4) == 0 && n > 8) /* no ICC, EXIF, XMP */
        out[len + 8] &= (unsigned char)~(0x20 | 0x08 | 0x04);
      len += (size_t)n;
    }
    at += stored;
    if (image)
      break;
  }
  if (s != IMGSTAT_OK) {
    free(out);
    return s;
  }
  uint32_t riff = (uint32_t)(len - 8);
  for (int k = 0; k < 4; k++)
    out[4 + k] = (unsigned char)(riff >> (8 * k));
  ws->data = out;
  ws->size = len;
  return IMGSTAT_OK;
}

imgstat_status ist_webp_open(imgstat_decoder *d, imgstat_error *err) {
  imgstat_status loaded = ist_dlib_need(&webp_dlib, err);
  if (loaded == IMGSTAT_OK)
    loaded = ist_dlib_need(&webpdemux_dlib, err);
  if (loaded != IMGSTAT_OK)
    return loaded;
  ist_source *src = &d->src;
  webp_state *ws = calloc(1, sizeof *ws);
  if (!ws)
    return imgstat_error_set(err, IMGSTAT_ERR_NOMEM, "out of memory");
  d->state = ws;
  imgstat_status s = image_chunks(src, d->lim.max_memory, ws, err);
  if (s != IMGSTAT_OK)
    return s;
  WebPBitstreamFeatures f;
  VP8StatusCode st = WebPGetFeatures(ws->data, ws->size, &f);
  if (st != VP8_STATUS_OK)
    return webp_failure(st, err);
  uint32_t w = (uint32_t)f.width, h = (uint32_t)f.height;
  ws->animated = f.has_animation;
  if (ws->animated) { /* the canvas, not the first frame's own size */
    WebPData wd = {ws->data, ws->size};
    WebPDemuxer *dm = WebPDemux(&wd);
    if (!dm)
      return ist_corrupt(err, "WebP", "animation container is malformed");
    w = WebPDemuxGetI(dm, WEBP_FF_CANVAS_WIDTH);
    h = WebPDemuxGetI(dm, WEBP_FF_CANVAS_HEIGHT);
    WebPDemuxDelete(dm);
  }
  ws->channels = f.has_alpha ? 4 : 3;
  /* The peak: the file, one interleaved RGB(A) buffer (an animation: the
   * decoder's canvas and its previous one too), the planes. No input
   * bound: VP8L can code a flat image in a few bytes. */
  uint64_t area = (uint64_t)w * h;
  uint64_t peak =
      ws->size + area * (uint64_t)(ws->animated ? 12 : 2 * ws->channels);
  s = ist_decode_check(&d->lim, w, h, peak, 0, src->size, "WebP", err);
  if (s != IMGSTAT_OK)
    return s;
  ist_header_set(&d->header, w, h, ws->channels, IMGSTAT_U8, "WebP");
  return IMGSTAT_OK;
}

/* The first frame of an animation, composed on the canvas, into img. */
static imgstat_status webp_first_frame(webp_state *ws, imgstat_image *img,
                                       imgstat_error *err) {
  WebPAnimDecoderOptions o;
  if (!WebPAnimDecoderOptionsInit(&o))
    return imgstat_error_set(err, IMGSTAT_ERR_UNSUPPORTED,
                             "libwebpdemux version mismatch");
  o.color_mode = MODE_RGBA;
  o.use_threads = 0;
  WebPData wd = {ws->data, ws->size};
  WebPAnimDecoder *dec = WebPAnimDecoderNew(&wd, &o);
  if (!dec)
    return ist_corrupt(err, "WebP", "animation cannot be decoded");
  uint8_t *rgba = NULL;
  int ts = 0;
  imgstat_status s = IMGSTAT_OK;
  if (!WebPAnimDecoderGetNext(dec, &rgba, &ts) || !rgba) {
    s = ist_corrupt(err, "WebP", "first frame of the animation is damaged");
  } else if (img->channels == 4) {
    ist_pixels_split_image(img, rgba);
  } else { /* RGB: drop the (opaque) alpha in place */
    size_t n = (size_t)img->width * img->height;
    for (size_t i = 0; i < n; i++)
      memmove(rgba + 3 * i, rgba + 4 * i, 3);
    ist_pixels_split_image(img, rgba);
  }
  WebPAnimDecoderDelete(dec);
  return s;
}

imgstat_status ist_webp_read(imgstat_decoder *d, imgstat_image *img,
                             imgstat_error *err) {
  webp_state *ws = d->state;
  if (ws->animated)
    return webp_first_frame(ws, img, err);
  size_t stride = (size_t)img->width * (size_t)ws->channels, bytes;
  if (!ist_size_mul(stride, img->height, &bytes) || stride > INT32_MAX)
    return imgstat_error_set(err, IMGSTAT_ERR_LIMIT, "WebP image too large");
  unsigned char *px = malloc(bytes);
  if (!px)
    return imgstat_error_set(err, IMGSTAT_ERR_NOMEM, "out of memory");
  /* the advanced API, whose status says why a decode failed */
  WebPDecoderConfig cfg;
  VP8StatusCode st = VP8_STATUS_INVALID_PARAM;
  if (WebPInitDecoderConfig(&cfg)) {
    cfg.output.colorspace = ws->channels == 4 ? MODE_RGBA : MODE_RGB;
    cfg.output.is_external_memory = 1;
    cfg.output.u.RGBA.rgba = px;
    cfg.output.u.RGBA.stride = (int)stride;
    cfg.output.u.RGBA.size = bytes;
    st = WebPDecode(ws->data, ws->size, &cfg);
    WebPFreeDecBuffer(&cfg.output);
  }
  imgstat_status s = IMGSTAT_OK;
  if (st != VP8_STATUS_OK)
    s = webp_failure(st, err);
  else
    ist_pixels_split_image(img, px);
  free(px);
  return s;
}

void ist_webp_close(imgstat_decoder *d) {
  webp_state *ws = d->state;
  if (!ws)
    return;
  free(ws->data);
  free(ws);
  d->state = NULL;
}

#endif
