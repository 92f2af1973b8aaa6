/*
 * imgstat: per-channel image statistics on the CPU and the GPU.
 *
 * Public C API. The library never prints, exits or aborts: every function that
 * can fail returns an imgstat_status and fills a caller-owned imgstat_error.
 */
#ifndef IMGSTAT_H
#define IMGSTAT_H

#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#ifdef __cplusplus
extern "C" {
#endif

#define IMGSTAT_VERSION "0.1.0"

/* ---- errors ------------------------------------------------------------ */

typedef enum imgstat_status {
  IMGSTAT_OK = 0,
  IMGSTAT_ERR_IO,          /* cannot open / read / write a file */
  IMGSTAT_ERR_FORMAT,      /* not an image, corrupt or truncated */
  IMGSTAT_ERR_UNSUPPORTED, /* a valid file of a kind we do not handle */
  IMGSTAT_ERR_LIMIT,       /* over max_pixels or a size limit */
  IMGSTAT_ERR_NOMEM,       /* host allocation failed */
  IMGSTAT_ERR_ARG,         /* invalid argument from the caller */
  IMGSTAT_ERR_NODEVICE,    /* no CUDA device or driver */
  IMGSTAT_ERR_DEVICE       /* a device is present but a CUDA call failed */
} imgstat_status;

#define IMGSTAT_ERROR_MAX 512

/* What a failure is about, beside its message, so that a front end can word
 * it in its own terms (the command line names its option, Python raises with
 * the fields) without reading the message. A message with a cause ends with
 * the setting's name as imgstat_cause_name gives it, then ')': "... over the
 * limit of 100 (max_pixels)"; the messages of the GPU's causes and of a
 * conflict begin with their `what` instead: "backend=gpu needs a usable GPU:
 * ...", "verify: GPU failed: ...", "jpeg_decoder=gpu cannot be used with
 * backend=cpu" (a conflict's message ends with the other setting). The
 * settings' causes (RANGE to DATASET) name the setting in the library's
 * words at a fixed place of a fixed message (its beginning or end), which a
 * front end may put in its own. */
typedef enum imgstat_cause {
  IMGSTAT_CAUSE_NONE = 0,
  IMGSTAT_CAUSE_MAX_PIXELS,   /* an image over max_pixels: value pixels */
  IMGSTAT_CAUSE_MAX_MEMORY,   /* over max_memory: value bytes wanted */
  IMGSTAT_CAUSE_GPU_UNUSABLE, /* `what` needs a GPU and none is usable */
  IMGSTAT_CAUSE_GPU_FAILED,   /* the GPU failed the work `what` gave it */
  IMGSTAT_CAUSE_CONFLICT,     /* `what` cannot be used with another setting */
  IMGSTAT_CAUSE_RANGE,        /* normalize's range: not finite LOW < HIGH */
  /* normalize's given mean and std: none, not finite (std not > 0), a
   * count that does not fit the image (value: the count), or float32
   * output in another depth */
  IMGSTAT_CAUSE_MEAN_STD,
  IMGSTAT_CAUSE_DEPTH, /* an output depth the format cannot hold */
  IMGSTAT_CAUSE_ALPHA, /* a channel count the format cannot hold */
  /* a page past the file's: value the page, limit the pages */
  IMGSTAT_CAUSE_PAGE,
  /* an input that can be read only once, in a dataset's plan that reads
   * every input twice */
  IMGSTAT_CAUSE_DATASET,
  /* a dataset's constants in a framework's form (imgstat_dataset_emit)
   * that the pool cannot give: the message begins with "emit FORM" */
  IMGSTAT_CAUSE_EMIT,
  /* an image that a setting does not apply to, or that needs one: the
   * message ends with the setting, `what`, in parentheses ("... (as=gray)",
   * "... (npy_layout)") */
  IMGSTAT_CAUSE_SETTING
} imgstat_cause;

/* The reason for a failure, in words for the user (no file name: the caller
 * adds it). A zeroed error has no cause. */
typedef struct imgstat_error {
  imgstat_status status;
  char message[IMGSTAT_ERROR_MAX];
  imgstat_cause cause;
  uint64_t limit; /* the limit that was passed (MAX_PIXELS, MAX_MEMORY) */
  uint64_t value; /* what the input wanted of it; 0 when not known */
  /* the setting that asked for it, in the library's words (static storage:
   * "verify", "backend=gpu", "jpeg_decoder=gpu"), or NULL */
  const char *what;
} imgstat_error;

/* The cause's name in the library's words ("max_pixels", "max_memory",
 * "gpu_unusable", "range", "mean_std", "depth", "alpha", "page",
 * "dataset", "emit", "setting"; "" for none): static storage. */
const char *imgstat_cause_name(imgstat_cause cause);

/* Fills err (if not NULL) with a printf-style message and returns status. */
imgstat_status imgstat_error_set(imgstat_error *err, imgstat_status status,
                                 const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 3, 4)))
#endif
    ;

/* Gives err (if not NULL) its cause and the cause's fields (after
 * imgstat_error_set, which clears them); returns err's status. */
imgstat_status imgstat_error_cause(imgstat_error *err, imgstat_cause cause,
                                   uint64_t limit, uint64_t value,
                                   const char *what);

/* ---- the image model --------------------------------------------------- */

/* The enumerator's value is the size of one sample in bytes. */
typedef enum imgstat_sample {
  IMGSTAT_U8 = 1,
  IMGSTAT_U16 = 2, /* native byte order */
  IMGSTAT_F32 = 4
} imgstat_sample;

/* Signed 16-bit samples (TIFF SampleFormat 2 of 16 bits, .npy int16, FITS
 * BITPIX 16 unscaled) are IMGSTAT_U16 planes of an image marked int16, each
 * sample stored as its value + IMGSTAT_INT16_OFFSET (its top bit flipped:
 * -32768 is 0, 0 is 32768, 32767 is 65535). Every backend reduces them as
 * the unsigned samples they are stored as (exact integer sums, 65536-bin
 * histograms, the same kernels); the figures are taken back to the signed
 * values when reported (min, max, sum, mean, percentiles; std is the
 * same), exactly. */
#define IMGSTAT_INT16_OFFSET 32768

/* Channels (bands) an image may have: 1 to 4 take the names Y, YA, RGB,
 * RGBA; 5 to IMGSTAT_MAX_CHANNELS are bands named "1".."N" (layout
 * "N-band"); an input with more bands is refused with its count. The
 * per-channel arrays of an item's result (imgstat_job_result, engine.h)
 * hold IMGSTAT_INLINE_CHANNELS channels in place and take the rest from the
 * heap (only images of more channels pay for it); records borrow the
 * result's. */
#define IMGSTAT_MAX_CHANNELS 1024
#define IMGSTAT_INLINE_CHANNELS 16
#define IMGSTAT_DEFAULT_MAX_PIXELS (UINT64_C(1) << 30)
/* Decoded bytes one image may hold at once while it is read (its planes and
 * any decoder buffer beside them): 4 GiB unless the caller says otherwise. */
#define IMGSTAT_DEFAULT_MAX_MEMORY (UINT64_C(4) << 30)
/* Integer sums of squares are exact in 64 bits up to 2^32 samples a plane. */
#define IMGSTAT_MAX_PIXELS_LIMIT (UINT64_C(1) << 32)

/* The colour model of an image's channels. IMGSTAT_COLOUR_DEFAULT: the one
 * the channel count gives (Y; Y,A; R,G,B; R,G,B,A). The others come only
 * from TIFF, whose samples are kept as stored: CMYK (C, M, Y, K: 4
 * channels, none alpha) and CIE L*a*b* (L, a, b), whose signed a and b are
 * reported offset by half their range (+128 at 8 bits, +32768 at 16), so
 * that 128 / 32768 is a or b = 0 (docs/formats.md). */
typedef enum imgstat_colour {
  IMGSTAT_COLOUR_DEFAULT = 0,
  IMGSTAT_COLOUR_CMYK = 1,
  IMGSTAT_COLOUR_LAB = 2,
  /* Bands named "1".."N" whatever their count: a TIFF gray image with 3 or
   * 4 samples a pixel (GDAL's multi-band files of gray photometric), layout
   * "3-band" or "4-band" (not RGB or RGBA) */
  IMGSTAT_COLOUR_BANDS = 3
} imgstat_colour;

/*
 * A decoded image: 1..4 channels, each one plane of height rows of width
 * samples in raster order. Row y of plane c starts at
 * (char *)planes[c] + y * stride; stride is at least width * sample size and
 * 0 means exactly that (a dense plane). Channel order: Y; Y,A; R,G,B; R,G,B,A.
 *
 * imgstat_image_alloc makes dense images whose planes live in one
 * allocation, `data` (planes[c] = data + c * plane_bytes), freed by
 * imgstat_image_free. imgstat_image_wrap describes planes the caller owns
 * (borrowed: imgstat_image_free leaves them alone; data is planes[0]).
 */
typedef struct imgstat_image {
  uint32_t width;
  uint32_t height;
  int channels;
  imgstat_sample sample;
  void *data;
  void *planes[IMGSTAT_MAX_CHANNELS];
  const char *format; /* static string: "PNG", "JPEG", "BMP", ... */
  size_t stride;      /* bytes from one row of a plane to the next; 0: dense */
  int borrowed;       /* the planes belong to the caller, not to the image */
  /* Set by imgstat_decoder_read from the header: the pages of a
   * multi-page input (0: a single-image format) and the one decoded. */
  uint32_t pages;
  uint32_t page;
  /* Set by imgstat_decoder_read: what the decoder passed over in the input
   * without losing any of the picture, in words ("" when nothing): bytes of
   * junk between a JPEG's header segments (docs/formats.md). The job layer
   * reports it as a warning about the input. */
  char warning[IMGSTAT_ERROR_MAX];
  /* Set by imgstat_decoder_read from the header: the colour model (0, the
   * default, for every image but TIFF's CMYK and CIE Lab). */
  imgstat_colour colour;
  /* Set by imgstat_decoder_read from the header: the file's own nodata
   * value for every channel (TIFF's GDAL_NODATA tag), when has_nodata. */
  int has_nodata;
  double nodata;
  /* Set by imgstat_decoder_read from the header (or by the caller of
   * imgstat_image_wrap): the U16 planes hold int16 samples offset by
   * IMGSTAT_INT16_OFFSET (above). */
  int int16;
  /* Set by imgstat_decoder_read: the header's band_names, copied and owned
   * by the image (freed by imgstat_image_free, borrowed or not); NULL when
   * the file names no band. */
  char *band_names;
} imgstat_image;

/* Bytes of one plane's samples, width * height * sample size (row padding
 * not counted); 0 for an empty image. */
size_t imgstat_image_plane_bytes(const imgstat_image *img);

/* Bytes from one row of a plane to the next: img->stride, or
 * width * sample size when that is 0. */
size_t imgstat_image_stride(const imgstat_image *img);

/* Allocates the planes of a width x height image after overflow-checked size
 * arithmetic; refuses more than max_pixels pixels (0 means the default) with
 * IMGSTAT_ERR_LIMIT. On failure img is left empty. */
imgstat_status imgstat_image_alloc(imgstat_image *img, uint32_t width,
                                   uint32_t height, int channels,
                                   imgstat_sample sample, uint64_t max_pixels,
                                   imgstat_error *err);

/* Describes planes the caller owns (each at least (height - 1) * stride +
 * width * sample bytes; stride 0 means width * sample): nothing is copied
 * or allocated, and imgstat_image_free does not free them. Refuses
 * (IMGSTAT_ERR_ARG) a missing plane, a stride smaller than a row, and
 * (IMGSTAT_ERR_LIMIT) more than IMGSTAT_MAX_PIXELS_LIMIT pixels. On failure
 * img is left empty. */
imgstat_status imgstat_image_wrap(imgstat_image *img, uint32_t width,
                                  uint32_t height, int channels,
                                  imgstat_sample sample, void *const planes[],
                                  size_t stride, imgstat_error *err);

/* Frees the planes it owns; safe on a zeroed or already freed image. */
void imgstat_image_free(imgstat_image *img);

/* Channel name: "Y", "A", "R", "G" or "B". */
const char *imgstat_channel_name(int channels, int c);
/* Band c's name in packed names (imgstat_header.band_names) of `channels`
 * bands: "" when it has none or names is NULL. */
const char *imgstat_band_name(const char *names, int channels, int c);
/* A heap copy of packed band names (NULL for NULL, or out of memory). */
char *imgstat_band_names_dup(const char *names, int channels);
/* Layout name: "Y", "YA", "RGB", "RGBA". */
const char *imgstat_layout_name(int channels);
/* The same for an image of that colour model: CMYK's "C", "M", "Y", "K"
 * (layout "CMYK"), Lab's "L", "a", "b" (layout "Lab"); "?" for a channel
 * count the model does not have. */
const char *imgstat_colour_channel_name(imgstat_colour colour, int channels,
                                        int c);
const char *imgstat_colour_layout_name(imgstat_colour colour, int channels);
/* 8, 16 or 32. */
int imgstat_sample_depth(imgstat_sample s);

/* ---- loading ----------------------------------------------------------- */

typedef struct imgstat_load_options {
  uint64_t max_pixels; /* 0: IMGSTAT_DEFAULT_MAX_PIXELS */
  uint64_t max_memory; /* 0: IMGSTAT_DEFAULT_MAX_MEMORY */
  /* The image of a multi-page file (TIFF) to read, from 1; 0: the first.
   * A page past the file's last is IMGSTAT_ERR_ARG, as is a page other
   * than 1 of a single-image format. */
  uint32_t page;
  /* The axes of a 3-D .npy array: 0 by its shape (docs/formats.md), 1
   * (H, W, C), 2 (C, H, W). */
  int npy_layout;
} imgstat_load_options;

/* Decodes the file at path with the decoder its signature picks
 * (imgstat_formats_description lists them). On success *img owns its planes
 * (free with imgstat_image_free). opts may be NULL. An input that is not a
 * regular file (a pipe, a FIFO, a device) is read into memory first: at most
 * max_memory bytes (more is IMGSTAT_ERR_LIMIT), and no further than its first
 * bytes when they start no image that a decoder takes. */
imgstat_status imgstat_image_load(const char *path,
                                  const imgstat_load_options *opts,
                                  imgstat_image *img, imgstat_error *err);

/* The formats this build decodes and the library of each, one line of
 * text ("PNG (libpng), JPEG (TurboJPEG), ..."): static storage. */
const char *imgstat_formats_description(void);

/* The libraries of those formats that are loaded when the first input that
 * needs one is read, not linked (libtiff, libwebp, giflib, cfitsio), each
 * loaded now to say whether it can be: "libtiff.so.6 (TIFF); ..." with
 * ": NOT LOADABLE: <why>" after one that cannot; "" when there is none.
 * Static storage. */
const char *imgstat_libraries_description(void);

/* The same from a buffer in memory (used by the fuzzer and tests). */
imgstat_status imgstat_image_load_memory(const void *data, size_t size,
                                         const imgstat_load_options *opts,
                                         imgstat_image *img,
                                         imgstat_error *err);

/* What is checked before nvJPEG decodes a JPEG (--jpeg-check; the words
 * "markers", "full", "none" in this order; docs/gpu.md, "What --jpeg-check
 * catches"). A file a check doubts goes to libjpeg's entropy decoding, whose
 * verdict and words are the CPU decoder's. */
typedef enum imgstat_jpeg_check {
  /* the default: the segments, the tables each scan uses, restart markers
   * in order and in number, EOI after the last scan */
  IMGSTAT_JPEG_CHECK_MARKERS = 0,
  /* also every Huffman code of every scan (as libjpeg's decode would) */
  IMGSTAT_JPEG_CHECK_FULL,
  /* only the checks of the CPU decoder's open (header, sizes) */
  IMGSTAT_JPEG_CHECK_NONE
} imgstat_jpeg_check;

/* ---- the loader seam: header first, then pixels into the caller's buffer -
 *
 *   imgstat_decoder *d;
 *   imgstat_decoder_open(path, opts, &d, &err);   // header only
 *   const imgstat_header *h = imgstat_decoder_header(d);
 *   imgstat_image_alloc(&img, h->width, h->height, h->channels, h->sample,
 *                       0, &err);                  // or imgstat_image_wrap
 *   imgstat_decoder_read(d, &img, &err);           // pixels into img
 *   imgstat_decoder_close(d);
 *
 * imgstat_image_load is exactly that. Open reads the header and makes every
 * check that needs no pixels (opts' limits, the least input the header's
 * size takes, the peak memory of decoding, counting the planes), so a
 * refused input costs no allocation for its pixels. The layout the header
 * gives is the layout read produces. */

/* What an input holds, known before its pixels are decoded. */
typedef struct imgstat_header {
  uint32_t width;
  uint32_t height;
  int channels;
  imgstat_sample sample;
  const char *format; /* static string: "PNG", "JPEG", "BMP", ... */
  /* The images of a multi-page format (TIFF: its directories), 0 for the
   * single-image ones; page: the one decoded, from 1 (0 when pages is 0). */
  uint32_t pages;
  uint32_t page;
  imgstat_colour colour; /* 0 but for TIFF's CMYK and CIE Lab */
  /* The file's own nodata value, for every channel (TIFF: the GDAL_NODATA
   * tag, 42113, a number as text; "nan" for NaN), when has_nodata. */
  int has_nodata;
  double nodata;
  /* sample IMGSTAT_U16 holding int16 samples offset by IMGSTAT_INT16_OFFSET */
  int int16;
  /* The file's band descriptions (TIFF: GDAL's GDAL_METADATA tag, 42112,
   * its DESCRIPTION items): channels NUL-terminated strings one after the
   * other, "" for a band without one; NULL when the file names none. Owned
   * by the decoder. */
  const char *band_names;
} imgstat_header;

typedef struct imgstat_decoder imgstat_decoder;

/* Opens the file at path (the inputs imgstat_image_load takes, with the same
 * errors) and reads its header. On success *out is a decoder to close. */
imgstat_status imgstat_decoder_open(const char *path,
                                    const imgstat_load_options *opts,
                                    imgstat_decoder **out, imgstat_error *err);

/* The same over size bytes at data, which are not copied: they must stay
 * until imgstat_decoder_close. */
imgstat_status imgstat_decoder_open_memory(const void *data, size_t size,
                                           const imgstat_load_options *opts,
                                           imgstat_decoder **out,
                                           imgstat_error *err);

/* The header of an open decoder. */
const imgstat_header *imgstat_decoder_header(const imgstat_decoder *d);

/* Decodes the pixels into img, whose width, height, channels and sample
 * must be the header's and whose planes the caller provides (allocated or
 * wrapped, with any stride); anything else is IMGSTAT_ERR_ARG, as is a
 * second read. Sets img->format. After a failure the planes' contents are
 * unspecified. */
imgstat_status imgstat_decoder_read(imgstat_decoder *d, imgstat_image *img,
                                    imgstat_error *err);

/* Frees the decoder (and closes its file); safe on NULL. */
void imgstat_decoder_close(imgstat_decoder *d);

/* Allocates the image the header gives (within the decoder's max_pixels),
 * reads the pixels into it and closes d, also on failure (img then left
 * empty): the rest of imgstat_image_load after the header. */
imgstat_status imgstat_decoder_load(imgstat_decoder *d, imgstat_image *img,
                                    imgstat_error *err);

/* ---- writing images --------------------------------------------------------
 */

typedef enum imgstat_file_format {
  IMGSTAT_FILE_AUTO = 0, /* from the name's extension */
  IMGSTAT_FILE_PNG,      /* u8 or u16, 1..4 channels */
  IMGSTAT_FILE_NPY,      /* any sample type: shape (H, W) or (H, W, C) */
  IMGSTAT_FILE_PFM       /* f32 (integers written as their values), 1 or 3 */
} imgstat_file_format;

/* The format named by path's extension (.png, .npy, .pfm; any case), or
 * IMGSTAT_FILE_AUTO when none matches. */
imgstat_file_format imgstat_file_format_from_path(const char *path);

/* The axes of a .npy file: (H, W, C) (a 1-channel image: (H, W)), or
 * channels first, (C, H, W) always (PyTorch's order). */
typedef enum imgstat_npy_layout {
  IMGSTAT_LAYOUT_HWC = 0,
  IMGSTAT_LAYOUT_CHW
} imgstat_npy_layout;

/* imgstat_write_options.png_level for the deflate level n (0..9). */
#define IMGSTAT_PNG_LEVEL(n) ((n) + 1)
/* The level when none is given (docs/benchmarks.md, "PNG levels"). */
#define IMGSTAT_PNG_DEFAULT_LEVEL 1

typedef struct imgstat_write_options {
  imgstat_file_format format; /* AUTO: from the extension */
  /* When not NULL and set non-zero (by a signal handler, say) the write
   * stops, removes its temporary file and fails with IMGSTAT_ERR_IO. */
  const volatile sig_atomic_t *cancel;
  /* When not NULL, *temp_path holds the path of the temporary file while it
   * exists (NULL otherwise), so that a signal handler can unlink() it before
   * the process dies. The writer blocks signals in its thread while it
   * creates, renames or removes the file, so the name and the file agree. */
  const char *volatile *temp_path;
  /* PNG: the deflate level plus one, IMGSTAT_PNG_LEVEL(0..9); 0 is the
   * default level (IMGSTAT_PNG_DEFAULT_LEVEL). */
  int png_level;
  /* .npy: the order of the axes. */
  imgstat_npy_layout layout;
} imgstat_write_options;

/*
 * Writes img to path: to a temporary file in the same folder, which is
 * renamed over path only when complete and flushed, so that a failure or a
 * cancel never leaves a partial file (the temporary is removed). opts may be
 * NULL. Refuses (IMGSTAT_ERR_ARG) a format that cannot hold the image, and
 * a path that exists and is not a regular file (lstat: a symbolic link, a
 * FIFO, a device, a folder), which renaming would replace.
 */
imgstat_status imgstat_image_write(const char *path, const imgstat_image *img,
                                   const imgstat_write_options *opts,
                                   imgstat_error *err);

/* Writes size bytes to path by the same safe path as imgstat_image_write
 * (a temporary beside it, synced, renamed over it; removed on failure;
 * only a regular file replaced): a text output such as the report page.
 * opts may be NULL (only cancel and temp_path are read). */
imgstat_status imgstat_bytes_write(const char *path, const void *data,
                                   size_t size,
                                   const imgstat_write_options *opts,
                                   imgstat_error *err);

/* img (1 to 4 channels, 8 or 16 bits) as PNG bytes in memory, by the same
 * PNG writer as imgstat_image_write, at level (IMGSTAT_PNG_LEVEL(n); 0: the
 * default): *out is a new malloc'd buffer of *size bytes (free it). */
imgstat_status imgstat_image_png_encode(const imgstat_image *img, int level,
                                        unsigned char **out, size_t *size,
                                        imgstat_error *err);

/* ---- partial results ---------------------------------------------------- */

/*
 * The raw partial of one channel over some run of its samples. Both backends
 * fill this same type; imgstat_figures_compute turns it into reported figures.
 *  - u8/u16: sum and sumsq are exact 64-bit integers; mean and m2 unused (0).
 *  - f32: NaN and +-Inf are only counted; count, min, max, mean and m2 cover
 *    the finite samples, merged with Chan's formula; sum and sumsq unused (0).
 * min_index / max_index are raster indices (y * width + x) of the first
 * minimum / maximum; merging keeps the smaller index on ties, so the merge is
 * order-independent for everything but float mean/m2 rounding.
 */
typedef struct imgstat_partial {
  uint64_t count;
  uint64_t nan_count;
  uint64_t inf_count;
  double min;
  double max;
  uint64_t min_index;
  uint64_t max_index;
  uint64_t sum;
  uint64_t sumsq;
  double mean;
  double m2;
} imgstat_partial;

/* The empty partial (count 0, min +inf, max -inf, indices UINT64_MAX). */
void imgstat_partial_init(imgstat_partial *p);

/* Merges b into a. For f32, merge in a fixed order for reproducible bits. */
void imgstat_partial_merge(imgstat_partial *a, const imgstat_partial *b,
                           imgstat_sample sample);

/* Scans n samples of one plane starting at sample index `first` and merges
 * them into p (indices reported are first + offset). The CPU reference scan. */
void imgstat_partial_scan(imgstat_partial *p, const void *plane,
                          imgstat_sample sample, uint64_t first, uint64_t n);

/* Whether two partials of one plane agree as the backends promise each other
 * (the GPU's against the CPU's, one worker count against another): every
 * count, extremum and index equal, u8 / u16 sums exact, f32 mean and m2 to
 * the bit (the canonical float order, docs/float-order.md). The one home of
 * that rule; a library that is not imgstat (NPP, CUB in the benchmark)
 * rounds its own way and is compared with a tolerance of its own. */
int imgstat_partial_same(const imgstat_partial *a, const imgstat_partial *b,
                         imgstat_sample sample);

/* Reported figures for one channel. */
typedef struct imgstat_figures {
  uint64_t count; /* samples in min/max/mean/std (finite ones for f32) */
  uint64_t nan_count;
  uint64_t inf_count;
  int has_values; /* count > 0: min/max/positions/mean are defined */
  double min;
  double max;
  uint32_t min_x, min_y, max_x, max_y;
  int sum_is_exact; /* u8/u16: exact_sum holds the sum */
  uint64_t exact_sum;
  double sum;
  double mean;
  int has_std; /* count > ddof */
  double std;
} imgstat_figures;

/* Turns a partial into figures. ddof is 0 (population) or 1 (sample). */
void imgstat_figures_compute(const imgstat_partial *p, imgstat_sample sample,
                             uint32_t width, int ddof, imgstat_figures *out);

/* ---- valid samples: nodata and masks -------------------------------------
 *
 * The samples of a channel that enter its figures: those inside the mask
 * (a pixel whose mask byte is non-zero; every pixel without a mask) that are
 * not the channel's nodata value. Integer samples equal the nodata value
 * exactly; float samples compare exactly too (-0 equals +0), and NaN is
 * always counted apart as NaN (nan_count), nodata or not. Nodata samples are
 * counted apart (imgstat_job_result.nodata_count); samples outside the mask
 * are outside the image's region and counted nowhere. Channel c's valid
 * samples, taken in raster order, are reduced as a plane of their own (the
 * float order of docs/float-order.md over that sequence); positions are
 * their raster positions in the image. */
typedef struct imgstat_valid {
  /* has_nodata[c]: channel c has the nodata value nodata[c] */
  int has_nodata[IMGSTAT_MAX_CHANNELS];
  double nodata[IMGSTAT_MAX_CHANNELS];
  /* width * height bytes in raster order, non-zero inside; NULL: every
   * pixel is inside */
  const uint8_t *mask;
  /* Instead of a mask when npixels > 0 (a label's region): the raster
   * indices of the pixels inside, in increasing order. */
  const uint32_t *pixels;
  uint64_t npixels;
} imgstat_valid;

/* Whether v excludes any sample of an image of that many channels. */
int imgstat_valid_active(const imgstat_valid *v, int channels);

/* Checks that value is a sample of that type (u8: an integer 0..255, u16:
 * 0..65535, f32: a float32 value exactly, or NaN); IMGSTAT_ERR_ARG saying
 * why otherwise ("nodata 300 is not an 8-bit sample (0 to 255, compared
 * exactly)"). */
imgstat_status imgstat_valid_check_nodata(double value, imgstat_sample sample,
                                          imgstat_error *err);

/* The same check for a nodata value of img (int16 images: an integer
 * -32768 to 32767), and the value as img's planes store it (*stored: value
 * + IMGSTAT_INT16_OFFSET for an int16 image, else value), which is what
 * imgstat_valid.nodata holds. */
imgstat_status imgstat_valid_stored_nodata(double value,
                                           const imgstat_image *img,
                                           double *stored, imgstat_error *err);

/* Copies the valid samples of channel c of img, in raster order, into a
 * new dense image of one channel, one row (*out, freed by the caller; an
 * empty image, width 0, when there is none), and counts the nodata samples
 * inside the mask into *nodata. */
imgstat_status imgstat_valid_compact(const imgstat_image *img, int c,
                                     const imgstat_valid *v, imgstat_image *out,
                                     uint64_t *nodata, imgstat_error *err);

/* A copy of the float image img (f32) in which every sample that is not
 * valid under v is NaN (*out, freed by the caller): for what takes a whole
 * image and leaves NaN out (a float histogram over a given range). */
imgstat_status imgstat_valid_nan_copy(const imgstat_image *img,
                                      const imgstat_valid *v,
                                      imgstat_image *out, imgstat_error *err);

/* imgstat_valid_raster_index of *a and of *b (in place), in one walk. */
void imgstat_valid_raster_pair(const imgstat_image *img, int c,
                               const imgstat_valid *v, uint64_t *a,
                               uint64_t *b);

/* flags[y * width + x] (width * height bytes) set to 1 where channel c's
 * sample is valid under v, 0 elsewhere. */
imgstat_status imgstat_valid_flags(const imgstat_image *img, int c,
                                   const imgstat_valid *v, uint8_t *flags,
                                   imgstat_error *err);

/* The raster index (y * width + x) of the k-th (from 0) valid sample of
 * channel c of img: the inverse of imgstat_valid_compact's order. */
uint64_t imgstat_valid_raster_index(const imgstat_image *img, int c,
                                    const imgstat_valid *v, uint64_t k);

/* ---- backends ----------------------------------------------------------- */

/* The CPUs this process may run on, and what limits them. Measured once,
 * at the first call (src/cpu/cores.c). */
typedef struct imgstat_cpu_info {
  int cores;    /* the CPUs this process may run on: its affinity mask
                   (taskset, a cpuset, mpirun's binding), less its cgroup's
                   CPU quota; at least 1. imgstat_cpu_cores(). */
  int affinity; /* the CPUs in its affinity mask (sched_getaffinity) */
  int offered;  /* the CPUs its machine offers it: its cgroup's cpuset
                   (else every online CPU), less the quota; >= affinity.
                   A process bound to fewer than its share of these (an MPI
                   rank bound to one core) leaves CPUs idle. */
  int online;   /* the machine's online CPUs */
  int quota;    /* the cgroup's CPU quota in CPUs, rounded up (v2 cpu.max,
                   v1 cpu.cfs_quota_us); 0: none */
} imgstat_cpu_info;

void imgstat_cpu_info_get(imgstat_cpu_info *out);

/* The CPUs this process may run on (imgstat_cpu_info's cores, at least 1):
 * the default number of threads and workers everywhere (-j 0). */
int imgstat_cpu_cores(void);

/* CPU backend: one partial per channel, out[0..channels-1]. threads <= 0 means
 * one per online core. Results do not depend on the number of threads. */
imgstat_status imgstat_cpu_stats(const imgstat_image *img, int threads,
                                 imgstat_partial *out, imgstat_error *err);

/* CPU backend over the valid samples of an 8- or 16-bit image under v (its
 * nodata values and mask; not a pixel list): out[c] the partial of channel
 * c's valid samples with raster positions, nodata[c] its nodata samples
 * inside the mask; the same figures as imgstat_valid_compact, a scan and
 * imgstat_valid_raster_pair, in one pass over the planes on threads
 * (threads <= 0: one per core). Refuses float images and pixel lists
 * (IMGSTAT_ERR_UNSUPPORTED), which take that way. */
imgstat_status imgstat_cpu_valid_stats(const imgstat_image *img,
                                       const imgstat_valid *v, int threads,
                                       imgstat_partial *out, uint64_t *nodata,
                                       imgstat_error *err);

/* ---- numbers --------------------------------------------------------------
 */

/* The length of the decimal number at the start of s, 0 when there is none:
 * an optional sign, digits with an optional point and fraction (or a point
 * and digits), an optional exponent (e or E, an optional sign, digits). No
 * spaces, no hexadecimal, no inf or nan. The one grammar of every number
 * imgstat reads as text: the program's options, the numbers of
 * --stats-from's JSON, the values of FITS header cards, the PFM scale. */
size_t imgstat_number_length(const char *s);

/* The number of imgstat_number_length at the start of s read as the nearest
 * double into *out (infinite when it is beyond the double range), in the C
 * locale whatever the process's locale is. Returns its length (what follows
 * is the caller's to judge), 0 when s starts with no number. */
size_t imgstat_number_read(const char *s, double *out);

/* vsnprintf, snprintf, vfprintf and fprintf in the C locale, whatever the
 * process's locale is (and the calling thread's locale back after): the
 * one way imgstat prints a number (%f, %g, %e and %a write a point, never a
 * comma), and every text that may hold one (records, messages, headers of
 * written files). Safe from any thread. */
int imgstat_number_vsnprintf(char *buf, size_t size, const char *fmt,
                             va_list ap)
#if defined(__GNUC__)
    __attribute__((format(printf, 3, 0)))
#endif
    ;
int imgstat_number_snprintf(char *buf, size_t size, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 3, 4)))
#endif
    ;
int imgstat_number_vfprintf(FILE *out, const char *fmt, va_list ap)
#if defined(__GNUC__)
    __attribute__((format(printf, 2, 0)))
#endif
    ;
int imgstat_number_fprintf(FILE *out, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 2, 3)))
#endif
    ;

#ifdef __cplusplus
}
#endif

#endif /* IMGSTAT_H */
