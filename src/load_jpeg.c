/*
 * JPEG through libjpeg-turbo's TurboJPEG API (2.1, as in Debian 12) when the
 * build found it; stb_image is the fallback (see docs/benchmarks.md,
 * "Decoding", for why: TurboJPEG is much faster on large photos).
 *
 * Gray JPEGs decode straight into their plane; colour ones decode to RGB
 * and are split into planes. Any libjpeg warning (premature end of file,
 * corrupt entropy data, ...) rejects the file: the decoder would otherwise
 * invent pixels and the statistics would describe data that is not there.
 */
#include "imgstat.h"
#include "load_internal.h"

#include <stdlib.h>
#include <string.h>

#ifndef IMGSTAT_HAVE_TURBOJPEG

imgstat_status imgstat_jpeg_decode(imgstat_source *src,
                                   const imgstat_limits *lim,
                                   imgstat_image *img, imgstat_error *err) {
  (void)src;
  (void)lim;
  (void)img;
  return imgstat_error_set(err, IMGSTAT_ERR_UNSUPPORTED,
                           "built without TurboJPEG");
}

#else

#include <turbojpeg.h>

static imgstat_status tj_failure(tjhandle tj, imgstat_error *err) {
  const char *why = tjGetErrorStr2(tj);
  return imgstat_error_set(err, IMGSTAT_ERR_FORMAT, "%s",
                           why && *why ? why : "TurboJPEG failed");
}

imgstat_status imgstat_jpeg_decode(imgstat_source *src,
                                   const imgstat_limits *lim,
                                   imgstat_image *img, imgstat_error *err) {
  const unsigned char *jpeg = NULL;
  int owned = 0;
  unsigned char *rgb = NULL;
  tjhandle tj = NULL;
  imgstat_status s;
  memset(img, 0, sizeof *img);

  if (src->size > (size_t)(unsigned long)-1)
    return imgstat_error_set(err, IMGSTAT_ERR_LIMIT, "JPEG file too large");
  s = imgstat_source_slurp(src, &jpeg, &owned, err);
  if (s != IMGSTAT_OK)
    return s;
  unsigned long jpeg_size = (unsigned long)src->size;

  tj = tjInitDecompress();
  if (!tj) {
    s = tj_failure(NULL, err);
    goto done;
  }
  int width, height, subsamp, colorspace;
  if (tjDecompressHeader3(tj, jpeg, jpeg_size, &width, &height, &subsamp,
                          &colorspace) != 0) {
    s = tj_failure(tj, err);
    goto done;
  }
  if (colorspace == TJCS_CMYK || colorspace == TJCS_YCCK) {
    /* TurboJPEG cannot make RGB of these; stb_image can. */
    s = imgstat_error_set(err, IMGSTAT_ERR_UNSUPPORTED, "CMYK JPEG");
    goto done;
  }
  if (width <= 0 || height <= 0) {
    s = imgstat_error_set(err, IMGSTAT_ERR_FORMAT, "JPEG image is %dx%d", width,
                          height);
    goto done;
  }
  /* The size check comes before anything is decoded or allocated: a gray
   * image decodes into its plane, a colour one into an RGB buffer that is
   * then split into planes beside it. */
  uint64_t pixels = (uint64_t)width * (uint64_t)height;
  s = imgstat_decode_check(lim, (uint32_t)width, (uint32_t)height,
                           colorspace == TJCS_GRAY ? pixels : 6 * pixels, 0,
                           src->size, "JPEG", err);
  if (s != IMGSTAT_OK)
    goto done;

  const int flags = TJFLAG_STOPONWARNING;
  if (colorspace == TJCS_GRAY) {
    s = imgstat_image_alloc(img, (uint32_t)width, (uint32_t)height, 1,
                            IMGSTAT_U8, lim->max_pixels, err);
    if (s != IMGSTAT_OK)
      goto done;
    if (tjDecompress2(tj, jpeg, jpeg_size, img->planes[0], width, width, height,
                      TJPF_GRAY, flags) != 0) {
      s = tj_failure(tj, err);
      goto done;
    }
  } else {
    size_t bytes;
    if (!imgstat_size_mul((size_t)width * (size_t)height, 3, &bytes)) {
      s = imgstat_error_set(err, IMGSTAT_ERR_LIMIT, "JPEG image too large");
      goto done;
    }
    rgb = malloc(bytes);
    if (!rgb) {
      s = imgstat_error_set(err, IMGSTAT_ERR_NOMEM,
                            "out of memory decoding a %dx%d JPEG", width,
                            height);
      goto done;
    }
    if (tjDecompress2(tj, jpeg, jpeg_size, rgb, width, width * 3, height,
                      TJPF_RGB, flags) != 0) {
      s = tj_failure(tj, err);
      goto done;
    }
    /* The compressed bytes are no longer needed: free them before the
     * planes are allocated, to keep peak memory down. */
    if (owned) {
      free((void *)jpeg);
      jpeg = NULL;
    }
    s = imgstat_image_alloc(img, (uint32_t)width, (uint32_t)height, 3,
                            IMGSTAT_U8, lim->max_pixels, err);
    if (s != IMGSTAT_OK)
      goto done;
    imgstat_pixels_split(img, rgb, 0, (size_t)width * (size_t)height, 1);
  }
  img->format = "JPEG";
  s = IMGSTAT_OK;

done:
  if (tj)
    tjDestroy(tj);
  free(rgb);
  if (owned)
    free((void *)jpeg);
  if (s != IMGSTAT_OK)
    imgstat_image_free(img);
  return s;
}

#endif
