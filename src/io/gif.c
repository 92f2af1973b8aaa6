/*
 * GIF through giflib: the first frame on the logical screen, RGB, or RGBA
 * when a transparent colour index is declared for it.
 *
 * The rules (docs/formats.md, "GIF"), the palette-PNG-with-tRNS rule:
 *  - the graphic control extension before the first image descriptor
 *    decides the layout: a transparent index makes RGBA whether or not a
 *    pixel of the frame uses it (the header decides, never the pixels);
 *  - a transparent pixel keeps its colour-map colour, with alpha 0;
 *  - the screen outside the first frame is the background colour (the
 *    global colour map's entry of the screen's background index; black when
 *    there is no global map or the index is beyond it), with alpha 0 when
 *    the background index is the transparent one;
 *  - a first frame that reaches past the logical screen grows the screen to
 *    hold it (as Pillow does), so no decoded pixel is dropped;
 *  - a pixel index beyond the frame's colour map, and a frame with no colour
 *    map at all (neither local nor global), are refused: the file does not
 *    say which colour such a pixel has;
 *  - interlaced frames are stored in four passes and put back in order;
 *    LZW data that keeps coding with a full table (a deferred clear code,
 *    GIF89a) is giflib's to read, as is a frame whose data ends early
 *    (refused: "image data ends before the frame is full");
 *  - an LZW minimum code size over 8 (codes for more than 256 colours,
 *    which GIF89a does not define but some writers use) is refused by
 *    giflib; the refusal names it.
 *
 * The header is read at open (no pixels), the rows at read, straight into
 * the planes through one row buffer of the frame's width.
 */
#include "dlib.h"
#include "image_rows.h"
#include "imgstat/imgstat.h"
#include "io.h"

#ifdef IMGSTAT_HAVE_GIF

#include <gif_lib.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

/* giflib, loaded when the first GIF file is opened (dlib.h): the
 * functions called below, through the loaded table. */
/* clang-format off */
#define GIF_SYMBOLS(X) \
  X(DGifCloseFile) \
  X(DGifExtensionToGCB) \
  X(DGifGetExtension) \
  X(DGifGetExtensionNext) \
  X(DGifGetImageDesc) \
  X(DGifGetLine) \
  X(DGifGetRecordType) \
  X(DGifOpen) \
  X(GifErrorString)
/* clang-format on */
IST_DLIB_TABLE(gif, GIF_SYMBOLS);
#define DGifCloseFile IST_DLIB_FN(gif, DGifCloseFile)
#define DGifExtensionToGCB IST_DLIB_FN(gif, DGifExtensionToGCB)
#define DGifGetExtension IST_DLIB_FN(gif, DGifGetExtension)
#define DGifGetExtensionNext IST_DLIB_FN(gif, DGifGetExtensionNext)
#define DGifGetImageDesc IST_DLIB_FN(gif, DGifGetImageDesc)
#define DGifGetLine IST_DLIB_FN(gif, DGifGetLine)
#define DGifGetRecordType IST_DLIB_FN(gif, DGifGetRecordType)
#define DGifOpen IST_DLIB_FN(gif, DGifOpen)
#define GifErrorString IST_DLIB_FN(gif, GifErrorString)
static const char *const gif_files[] = {IMGSTAT_SONAME_GIF, IMGSTAT_PATH_GIF,
                                        NULL};
static ist_dlib gif_dlib = IST_DLIB_ROW(gif, "GIF", "giflib", gif_files, 0);
ist_dlib *const ist_gif_dlibs[] = {&gif_dlib, NULL};

typedef struct gif_state {
  GifFileType *gif;
  ist_source *src;
  int transparent; /* the declared transparent index, or -1 */
  uint32_t left, top, frame_w, frame_h;
  int interlaced;
  const ColorMapObject *map;   /* the frame's: local, else global */
  unsigned char background[4]; /* R, G, B, A of the uncovered screen */
  unsigned char *row;          /* one row of the frame's indices */
} gif_state;

static int on_gif_read(GifFileType *gif, GifByteType *out, int n) {
  gif_state *gs = gif->UserData;
  if (n <= 0)
    return 0;
  return (int)ist_source_read(gs->src, out, (size_t)n);
}

/* giflib's reason, in the one wording: a read that came up short is a
 * truncated file (or the read error it was). */
static imgstat_status gif_failure(gif_state *gs, int code, imgstat_error *err) {
  if (gs->src->read_errno ||
      (code == D_GIF_ERR_READ_FAILED && gs->src->short_read))
    return ist_truncated(gs->src, "GIF", err);
  if (code == D_GIF_ERR_NOT_ENOUGH_MEM)
    return imgstat_error_set(err, IMGSTAT_ERR_NOMEM, "out of memory");
  if (code == D_GIF_ERR_EOF_TOO_SOON)
    return ist_corrupt(err, "GIF", "image data ends before the frame is full");
  const char *why = GifErrorString(code);
  return ist_corrupt(err, "GIF", "%s", why ? why : "cannot decode the image");
}

/* Reads the records up to the first image descriptor, keeping the last
 * graphic control extension's transparent index. */
static imgstat_status gif_first_frame(gif_state *gs, imgstat_error *err) {
  GifFileType *gif = gs->gif;
  gs->transparent = -1;
  for (;;) {
    GifRecordType type;
    if (DGifGetRecordType(gif, &type) == GIF_ERROR)
      return gif_failure(gs, gif->Error, err);
    if (type == TERMINATE_RECORD_TYPE)
      return ist_corrupt(err, "GIF", "file has no image");
    if (type == IMAGE_DESC_RECORD_TYPE)
      break;
    int code;
    GifByteType *block;
    if (DGifGetExtension(gif, &code, &block) == GIF_ERROR)
      return gif_failure(gs, gif->Error, err);
    if (code == GRAPHICS_EXT_FUNC_CODE && block) {
      /* A block that is not 4 bytes long says nothing (giflib refuses to
       * read it): no transparency. */
      GraphicsControlBlock gcb;
      gs->transparent = DGifExtensionToGCB(block[0], block + 1, &gcb) == GIF_OK
                            ? gcb.TransparentColor
                            : -1;
    }
    while (block)
      if (DGifGetExtensionNext(gif, &block) == GIF_ERROR)
        return gif_failure(gs, gif->Error, err);
  }
  if (DGifGetImageDesc(gif) == GIF_ERROR) {
    /* giflib reads the LZW minimum code size last, unbuffered, and refuses
     * one over 8 as a failed read: say so. */
    unsigned char size;
    if (gif->Error == D_GIF_ERR_READ_FAILED && !gs->src->short_read &&
        !gs->src->read_errno && gs->src->pos > 0 &&
        ist_source_read_at(gs->src, gs->src->pos - 1, &size, 1) == 1 &&
        size > 8)
      return imgstat_error_set(err, IMGSTAT_ERR_UNSUPPORTED,
                               "GIF LZW minimum code size %u is more than 8 "
                               "(giflib decodes up to 8)",
                               (unsigned)size);
    return gif_failure(gs, gif->Error, err);
  }
  const GifImageDesc *im = &gif->Image;
  gs->left = (uint32_t)im->Left;
  gs->top = (uint32_t)im->Top;
  gs->frame_w = (uint32_t)im->Width;
  gs->frame_h = (uint32_t)im->Height;
  gs->interlaced = im->Interlace;
  gs->map = im->ColorMap ? im->ColorMap : gif->SColorMap;
  if (gs->frame_w == 0 || gs->frame_h == 0)
    return ist_corrupt(err, "GIF", "first frame is %" PRIu32 "x%" PRIu32,
                       gs->frame_w, gs->frame_h);
  if (!gs->map || gs->map->ColorCount <= 0 || !gs->map->Colors)
    return imgstat_error_set(err, IMGSTAT_ERR_UNSUPPORTED,
                             "GIF frame has no colour map (neither local nor "
                             "global), so its colours are undefined");
  return IMGSTAT_OK;
}

imgstat_status ist_gif_open(imgstat_decoder *d, imgstat_error *err) {
  imgstat_status loaded = ist_dlib_need(&gif_dlib, err);
  if (loaded != IMGSTAT_OK)
    return loaded;
  gif_state *gs = calloc(1, sizeof *gs);
  if (!gs)
    return imgstat_error_set(err, IMGSTAT_ERR_NOMEM, "out of memory");
  d->state = gs;
  gs->src = &d->src;
  int code = 0;
  gs->gif = DGifOpen(gs, on_gif_read, &code);
  if (!gs->gif)
    return gif_failure(gs, code, err);
  imgstat_status s = gif_first_frame(gs, err);
  if (s != IMGSTAT_OK)
    return s;
  const GifFileType *gif = gs->gif;
  /* The screen, grown to hold the first frame. */
  uint64_t right = (uint64_t)gs->left + gs->frame_w;
  uint64_t bottom = (uint64_t)gs->top + gs->frame_h;
  uint64_t w = (uint64_t)gif->SWidth > right ? (uint64_t)gif->SWidth : right;
  uint64_t h =
      (uint64_t)gif->SHeight > bottom ? (uint64_t)gif->SHeight : bottom;
  int channels = gs->transparent >= 0 ? 4 : 3;
  const ColorMapObject *global = gif->SColorMap;
  int bg = gif->SBackGroundColor;
  if (global && bg >= 0 && bg < global->ColorCount) {
    gs->background[0] = global->Colors[bg].Red;
    gs->background[1] = global->Colors[bg].Green;
    gs->background[2] = global->Colors[bg].Blue;
  }
  gs->background[3] = bg == gs->transparent ? 0 : 255;
  /* The peak: the planes and one row. Each LZW code is at least 2 bits
   * (giflib: code sizes from 2) and gives at most 4096 pixels (a string of
   * the 4096-entry table), so the frame's data takes at least
   * frame / 4096 codes after what has been read. */
  uint64_t frame = (uint64_t)gs->frame_w * gs->frame_h;
  uint64_t min_input =
      (uint64_t)d->src.pos + ((frame + 4095) / 4096 * 2 + 7) / 8;
  s = ist_decode_check(&d->lim, (uint32_t)w, (uint32_t)h,
                       w * h * (uint64_t)channels + gs->frame_w, min_input,
                       d->src.size, "GIF", err);
  if (s != IMGSTAT_OK)
    return s;
  ist_header_set(&d->header, (uint32_t)w, (uint32_t)h, channels, IMGSTAT_U8,
                 "GIF");
  return IMGSTAT_OK;
}

/* The frame's row y (in storage order r) into the planes. */
static imgstat_status gif_put_row(gif_state *gs, imgstat_image *img, uint32_t y,
                                  imgstat_error *err) {
  const GifColorType *colors = gs->map->Colors;
  int count = gs->map->ColorCount;
  unsigned char *p[4];
  for (int c = 0; c < img->channels; c++)
    p[c] = (unsigned char *)ist_image_row(img, c, gs->top + y) + gs->left;
  for (uint32_t x = 0; x < gs->frame_w; x++) {
    int i = gs->row[x];
    if (i >= count)
      return ist_corrupt(err, "GIF",
                         "pixel index %d at (%" PRIu32 ", %" PRIu32
                         ") beyond its colour map of %d colours",
                         i, gs->left + x, gs->top + y, count);
    p[0][x] = colors[i].Red;
    p[1][x] = colors[i].Green;
    p[2][x] = colors[i].Blue;
    if (img->channels == 4)
      p[3][x] = i == gs->transparent ? 0 : 255;
  }
  return IMGSTAT_OK;
}

imgstat_status ist_gif_read(imgstat_decoder *d, imgstat_image *img,
                            imgstat_error *err) {
  gif_state *gs = d->state;
  for (int c = 0; c < img->channels; c++)
    for (uint32_t y = 0; y < img->height; y++)
      memset(ist_image_row(img, c, y), gs->background[c], img->width);
  gs->row = malloc(gs->frame_w);
  if (!gs->row)
    return imgstat_error_set(err, IMGSTAT_ERR_NOMEM, "out of memory");
  /* Interlaced: every 8th row from 0, every 8th from 4, every 4th from 2,
   * every 2nd from 1; else one pass. */
  static const uint32_t start[4] = {0, 4, 2, 1}, step[4] = {8, 8, 4, 2};
  int passes = gs->interlaced ? 4 : 1;
  for (int pass = 0; pass < passes; pass++) {
    uint32_t y0 = gs->interlaced ? start[pass] : 0;
    uint32_t dy = gs->interlaced ? step[pass] : 1;
    for (uint32_t y = y0; y < gs->frame_h; y += dy) {
      if (DGifGetLine(gs->gif, gs->row, (int)gs->frame_w) == GIF_ERROR)
        return gif_failure(gs, gs->gif->Error, err);
      imgstat_status s = gif_put_row(gs, img, y, err);
      if (s != IMGSTAT_OK)
        return s;
    }
  }
  return IMGSTAT_OK;
}

void ist_gif_close(imgstat_decoder *d) {
  gif_state *gs = d->state;
  if (!gs)
    return;
  if (gs->gif)
    DGifCloseFile(gs->gif, NULL);
  free(gs->row);
  free(gs);
  d->state = NULL;
}

#endif
