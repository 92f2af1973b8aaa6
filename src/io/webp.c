/*
 * WebP through libwebp: lossy and lossless, RGB, or RGBA when the file says
 * it has alpha; an animation's first frame as libwebpdemux's WebPAnimDecoder
 * composes it on the canvas (the canvas outside the frame is transparent
 * black, so an animation with alpha reads as RGBA). The file is held in
 * memory, decoded into one interleaved buffer and split into planes.
 */
#include "imgstat.h"
#include "io.h"

#ifdef IMGSTAT_HAVE_WEBP

#include <stdlib.h>
#include <string.h>
#include <webp/decode.h>
#include <webp/demux.h>

typedef struct webp_state {
  const unsigned char *data;
  int owned;
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

imgstat_status ist_webp_open(imgstat_decoder *d, imgstat_error *err) {
  ist_source *src = &d->src;
  webp_state *ws = calloc(1, sizeof *ws);
  if (!ws)
    return imgstat_error_set(err, IMGSTAT_ERR_NOMEM, "out of memory");
  d->state = ws;
  imgstat_status s = ist_source_slurp(src, &ws->data, &ws->owned, err);
  if (s != IMGSTAT_OK)
    return s;
  ws->size = src->size;
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
  uint64_t peak = (ws->owned ? ws->size : 0) +
                  area * (uint64_t)(ws->animated ? 12 : 2 * ws->channels);
  s = ist_decode_check(&d->lim, w, h, peak, 0, ws->size, "WebP", err);
  if (s != IMGSTAT_OK)
    return s;
  d->header.width = w;
  d->header.height = h;
  d->header.channels = ws->channels;
  d->header.sample = IMGSTAT_U8;
  d->header.format = "WebP";
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
  if (ws->owned)
    free((void *)ws->data);
  free(ws);
  d->state = NULL;
}

#endif
