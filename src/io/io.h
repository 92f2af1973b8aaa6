/*
 * Private to src/io and io's tests and benchmarks (the engine above it
 * includes io_engine.h, the few calls it makes, which this includes): the
 * source of an input's bytes (source.c: it calls no other file of src/io), the
 * decoder table (load.c), the decoders' shared helpers (common.c) and one
 * decoder per library. The size arithmetic and the pixel limit are core's
 * (image_rows.h).
 */
#ifndef IMGSTAT_LOAD_INTERNAL_H
#define IMGSTAT_LOAD_INTERNAL_H

#include "image_rows.h"
#include "imgstat/imgstat.h"
#include "io_engine.h"

#include <stddef.h>
#include <stdio.h>
#include <sys/stat.h>
#include <sys/types.h>

/* ---- the source of an input's bytes (src/io/source.c) ---------------------
 */

/* Opens path for reading without ever waiting in open() (a FIFO with no
 * writer yet); *st is what fstat says of it. An input that can be read again
 * is left with blocking reads; one that can be read once stays non-blocking,
 * for ist_input_read. */
imgstat_status ist_input_open(const char *path, int *fd, struct stat *st,
                              imgstat_error *err);

/* Reads up to n bytes of an input that can be read once (opened by
 * ist_input_open): waits for bytes (or the writer's end) a slice at a time,
 * asking stop between slices. Returns the bytes read, 0 at the end, -1 on an
 * error (errno; ECANCELED when stop said so). */
ssize_t ist_input_read(int fd, void *buf, size_t n, const ist_stop *stop);

/*
 * The bytes of one input, from a regular file (streamed, so a decoder that
 * reads rows as it goes never holds the whole file) or from memory.
 */
typedef struct ist_source {
  FILE *file;                /* file input, or NULL for memory input */
  const unsigned char *data; /* memory input */
  size_t size;               /* bytes in the input */
  size_t pos;                /* bytes consumed so far */
  int short_read;            /* a read returned fewer bytes than asked */
  int read_errno;            /* file: errno of a failed read, else 0 */
} ist_source;

/* Reads up to n bytes; returns how many were read (fewer at the end). */
size_t ist_source_read(ist_source *src, void *buf, size_t n);

/* Reads up to n bytes from byte offset off (a file with pread, memory in
 * place) without moving src->pos, for decoders whose library reads where it
 * likes (libtiff, the WebP chunks); returns how many were read: fewer at
 * the end of the input or after a read error (src->read_errno says). */
size_t ist_source_read_at(ist_source *src, uint64_t off, void *buf, size_t n);

/* Goes back to the first byte; returns 0 on success, else an errno. */
int ist_source_rewind(ist_source *src);
/* Goes to byte offset (at most the input's size: reads then return 0
 * bytes); returns 0 on success, else an errno. */
int ist_source_seek(ist_source *src, uint64_t offset);

/* The whole input in memory: memory input is returned as it is (*owned 0);
 * file input is read into a malloc'd buffer that the caller frees (*owned
 * 1). */
imgstat_status ist_source_slurp(ist_source *src, const unsigned char **data,
                                int *owned, imgstat_error *err);

/* Reads the first bytes of src (up to size; *n of them, the rest of buf
 * zeroed), for a header parser; a read error is the failure. */
imgstat_status ist_source_head(ist_source *src, unsigned char *buf, size_t size,
                               size_t *n, imgstat_error *err);

/* ---- sniffing and opening (src/io/load.c) ---------------------------------
 */

/* The formats the first bytes of an input announce. */
typedef enum ist_kind {
  IMGSTAT_KIND_UNKNOWN = 0,
  IMGSTAT_KIND_PNG,
  IMGSTAT_KIND_JPEG,
  IMGSTAT_KIND_BMP,
  IMGSTAT_KIND_GIF,
  IMGSTAT_KIND_PSD,
  IMGSTAT_KIND_HDR,
  IMGSTAT_KIND_PNM, /* P1-P6 (pnm.c) */
  IMGSTAT_KIND_TIFF,
  IMGSTAT_KIND_WEBP,
  IMGSTAT_KIND_FITS,
  IMGSTAT_KIND_NPY,
  IMGSTAT_KIND_PFM,
  IMGSTAT_KIND_TGA /* no signature: a header only a TGA has (tga.c) */
} ist_kind;

/* The bytes of an input's start that sniffing looks at: a TGA's header. */
#define IST_SNIFF_BYTES 18

/* Sniffs the signature in the first n bytes of an input. */
ist_kind ist_kind_sniff(const unsigned char *head, size_t n);

/* What decoding one input may cost, checked from its header before anything
 * is allocated (ist_decode_check). No field is 0 here. */
typedef struct ist_limits {
  uint64_t max_pixels; /* --max-pixels */
  uint64_t max_memory; /* --max-memory: decoded bytes held at once */
} ist_limits;

/* The one check every decoder makes once it knows an image's size, before it
 * allocates anything for the pixels. Refuses (IMGSTAT_ERR_LIMIT) a width x
 * height image over lim->max_pixels or the largest supported size, or whose
 * decoding would hold more than lim->max_memory bytes at once (peak_bytes:
 * what this decoder allocates for it, planes and buffers together); and
 * (IMGSTAT_ERR_FORMAT) one that the input cannot hold: min_input is the
 * fewest bytes in which its format can encode such an image at its highest
 * compression ratio (0: no bound known), input_size the input's size. */
imgstat_status ist_decode_check(const ist_limits *lim, uint32_t width,
                                uint32_t height, uint64_t peak_bytes,
                                uint64_t min_input, uint64_t input_size,
                                const char *format, imgstat_error *err);

/* What a decoder's open reports once its checks have passed: the image's
 * geometry and the format's name (a static string); the other fields stay
 * as they are (0 but for a multi-page or colour-converting format). */
static inline void ist_header_set(imgstat_header *hd, uint32_t width,
                                  uint32_t height, int channels,
                                  imgstat_sample sample, const char *format) {
  hd->width = width;
  hd->height = height;
  hd->channels = channels;
  hd->sample = sample;
  hd->format = format;
}

/* The most scans a JPEG may have, on either decoder's path: libjpeg-turbo's
 * own limit under TJFLAG_LIMITSCANS (500 in 2.1). Every scan of a
 * progressive file is a pass over the whole image, so a small file of
 * thousands of scans would cost time without bound. */
#define IMGSTAT_JPEG_MAX_SCANS 500

/* ---- the decoder table ----------------------------------------------------
 *
 * An open decoder (imgstat_decoder_open): its input, the caller's limits,
 * the row of the table that decodes it, the header that row's open found
 * and that row's own state. */
typedef struct ist_format ist_format;

struct imgstat_decoder {
  ist_source src;
  int owns_file;        /* src.file was opened by imgstat_decoder_open */
  unsigned char *input; /* the input read into memory (a pipe), or NULL */
  ist_limits lim;
  uint32_t page;  /* --page: the image of a multi-page file, from 1 */
  int npy_layout; /* --npy-layout: imgstat_load_options.npy_layout */
  const ist_format *format;
  imgstat_header header;
  void *state;   /* the format's own, freed by its close */
  int read_done; /* imgstat_decoder_read was called */
  /* What the format's open passed over in the input without losing any of
   * the picture ("" when nothing): copied to the image by a successful
   * read (imgstat_image.warning). */
  char warning[IMGSTAT_ERROR_MAX];
};

/* One row per format, in the order signatures are tested. open starts at
 * the first byte of d->src, reads as little as the header (and the checks
 * that need no pixels: ist_decode_check) takes, and fills d->header; read
 * decodes into img, which imgstat_decoder_read has checked against the
 * header; close frees d->state (also after a failed open). */
struct ist_format {
  ist_kind kind;
  const char *library; /* the library that decodes it */
  /* the file name extensions of the format, lower case, separated by
   * spaces (ist_extension_is_image); NULL: none */
  const char *extensions;
  /* whether an input's first n bytes (n <= IST_SNIFF_BYTES) announce the
   * format; NULL: any input (the last row) */
  int (*sniff)(const unsigned char *head, size_t n);
  imgstat_status (*open)(imgstat_decoder *d, imgstat_error *err);
  imgstat_status (*read)(imgstat_decoder *d, imgstat_image *img,
                         imgstat_error *err);
  void (*close)(imgstat_decoder *d);
  /* the libraries the decoder loads when it needs them (dlib.h), for
   * --version, NULL-terminated; NULL: its library is linked in */
  struct ist_dlib *const *dlibs;
};

/* PNG through libpng. */
imgstat_status ist_png_open(imgstat_decoder *d, imgstat_error *err);
imgstat_status ist_png_read(imgstat_decoder *d, imgstat_image *img,
                            imgstat_error *err);
void ist_png_close(imgstat_decoder *d);
/* Whether an open PNG decoder's read was done by the libdeflate decoder
 * (src/io/png_fast.c) rather than libpng: for the tests that compare the
 * two. */
int ist_png_decoded_fast(const imgstat_decoder *d);
/* 1: every PNG goes to libpng, none to the libdeflate decoder (which a
 * build with libdeflate otherwise tries first). Set by the tests and the
 * decoding benchmark to compare the two; the samples are the same. */
extern int ist_png_reader_libpng;

#ifdef IMGSTAT_HAVE_TURBOJPEG
/* JPEG through TurboJPEG (without it, JPEG is stb_image's). */
imgstat_status ist_jpeg_open(imgstat_decoder *d, imgstat_error *err);
imgstat_status ist_jpeg_read(imgstat_decoder *d, imgstat_image *img,
                             imgstat_error *err);
void ist_jpeg_close(imgstat_decoder *d);
#endif

/* The rest of the CPU path's strictness: libjpeg's entropy decoding of
 * every scan, without pixels, stopping on any warning (a file cut
 * mid-scan, corrupt data) with the words ist_jpeg_read would fail with
 * (src/io/jpeg.c). */
imgstat_status ist_jpeg_check_libjpeg(imgstat_decoder *d, imgstat_error *err);
/* The same verdict and words, faster: ist_jpeg_scan's full level first,
 * ist_jpeg_check_libjpeg for a file it doubts (src/io/jpeg_scan.c). */
imgstat_status ist_jpeg_check_entropy(imgstat_decoder *d, imgstat_error *err);

/* src/io/jpeg_scan.c: the checks before nvJPEG without libjpeg. 1 when
 * the file is sound at that level: with full 0, its segments and markers
 * (--jpeg-check markers); with full 1, also every Huffman code of every
 * scan of a sequential frame (progressive ones are doubted). 0 when it
 * doubts: libjpeg then judges the file. Reads only bytes[0, size). */
int ist_jpeg_scan(const unsigned char *bytes, size_t size, int full);

/* PSD through stb_image, and JPEG when TurboJPEG is not built in, as the
 * format d->format->kind (an unknown kind: a JPEG after fill bytes, else
 * "not a recognised image format"). */
imgstat_status ist_stb_open(imgstat_decoder *d, imgstat_error *err);
imgstat_status ist_stb_read(imgstat_decoder *d, imgstat_image *img,
                            imgstat_error *err);
void ist_stb_close(imgstat_decoder *d);

/* Decodes src (from its first byte) with stb_image as the format kind:
 * open, allocate, read, close. On failure *img is left empty. For tests and
 * the decoding benchmark (stb's path for a JPEG that TurboJPEG takes). */
imgstat_status ist_stb_decode(ist_source *src, ist_kind kind,
                              const ist_limits *lim, imgstat_image *img,
                              imgstat_error *err);
/* Whether stb_image could take an input that starts with head's n bytes
 * although ist_kind_sniff finds no signature there: a JPEG whose start
 * marker follows fill bytes. Needs the input's first 256 bytes, or all of
 * it when it is shorter. */
int ist_stb_may_take_unknown(const unsigned char *head, size_t n);

/* ---- the optional decoders (each its own file of src/io) ------------------
 * TIFF (libtiff), WebP (libwebp), FITS (cfitsio), GIF (giflib) when the
 * build has the library; ASCII PNM, .npy, PFM and Radiance HDR always (their
 * parsers are ours). */
#define IST_DECODER(name)                                                      \
  imgstat_status ist_##name##_open(imgstat_decoder *d, imgstat_error *err);    \
  imgstat_status ist_##name##_read(imgstat_decoder *d, imgstat_image *img,     \
                                   imgstat_error *err);                        \
  void ist_##name##_close(imgstat_decoder *d)
IST_DECODER(tiff);
/* Whether an open TIFF decoder's page can be reduced as its strips or tiles
 * are read (ist_tiff_stats): 8- or 16-bit samples. */
int ist_tiff_streams(const imgstat_decoder *d);
/* The figures of the page's valid samples under v (a nodata value per
 * channel, or none: v NULL; never a mask or a pixel list) into out and
 * nodata (a channel each), each strip or tile reduced as it is read, on
 * the cores, never the whole image in memory: the figures of
 * imgstat_cpu_valid_stats over the decoded image. In place of the read. */
imgstat_status ist_tiff_stats(imgstat_decoder *d, const imgstat_valid *v,
                              imgstat_partial *out, uint64_t *nodata,
                              imgstat_error *err);
/* ist_decoder_stream_test_sizes's (io_engine.h) for TIFF pages. */
void ist_tiff_test_sizes(uint64_t parallel_bytes, size_t group_bytes);
IST_DECODER(webp);
IST_DECODER(fits);
IST_DECODER(gif);
/* The libraries each of them loads when it needs them (dlib.h),
 * NULL-terminated. */
struct ist_dlib;
extern struct ist_dlib *const ist_tiff_dlibs[];
extern struct ist_dlib *const ist_webp_dlibs[];
extern struct ist_dlib *const ist_fits_dlibs[];
extern struct ist_dlib *const ist_gif_dlibs[];
IST_DECODER(hdr);
IST_DECODER(pnm);
IST_DECODER(npy);
IST_DECODER(pfm);
/* BMP and TGA (ours, no longer stb_image's). */
IST_DECODER(bmp);
IST_DECODER(tga);
/* Whether an input's first n bytes are a TGA header (the format has no
 * signature: values only a TGA header holds, tga.c). */
int ist_tga_sniff(const unsigned char *head, size_t n);
/* Whether an input's first n bytes are a BMP without its file header (a
 * headerless DIB, as the clipboard and .dib files hold it): an info header
 * of 40, 52, 56, 108 or 124 bytes at byte 0 (bmp.c). */
int ist_dib_sniff(const unsigned char *head, size_t n);

/* The one wording of a decoder's refusal of damaged data:
 * "Corrupt FORMAT data: why" (IMGSTAT_ERR_FORMAT), why being the printf
 * result of fmt with its first letter made lower case when the second is
 * lower case ("Unsupported marker" -> "unsupported marker", "IDAT: ..."
 * kept); a why that already starts "Corrupt FORMAT data" is kept whole. */
imgstat_status ist_corrupt(imgstat_error *err, const char *format,
                           const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 3, 4)))
#endif
    ;

/* Whether v is exactly a 32-bit float (NaN and the infinities are); when it
 * is, *out is that float. Samples of types wider than imgstat's (32-bit
 * integers, 64-bit floats, scaled FITS data) are kept only when every one
 * converts exactly (ist_f32_refuse words the refusal). */
int ist_f32_exact(double v, float *out);
imgstat_status ist_f32_refuse(imgstat_error *err, const char *format,
                              const char *type, double v, uint32_t x,
                              uint32_t y);
/* The same with the value as text (an integer wider than a double's 53
 * bits, written exactly). */
imgstat_status ist_f32_refuse_text(imgstat_error *err, const char *format,
                                   const char *type, const char *v, uint32_t x,
                                   uint32_t y);

/* The header of a Netpbm-family file: PNM (P1-P6) or PFM (src/io/netpbm.c,
 * the family's one tokenizer). */
#define IST_NETPBM_HEADER_MAX ((size_t)1 << 20) /* bytes, comments included */
typedef struct ist_netpbm_header {
  char type;                      /* the byte after 'P': '1'..'6', 'F', 'f' */
  uint32_t width, height, maxval; /* maxval: 1 for P1/P4, unset for PFM */
  char scale[64];                 /* PFM: the scale field's text */
  size_t data_offset; /* the byte after the one that ends the header */
  int crlf; /* the header ends in "\r\n" (a PFM written in text mode) */
} ist_netpbm_header;

/* Reads src's header from its first byte: "P", the type, width, height and
 * (but for P1/P4) maxval or scale, whitespace and '#' comments between
 * them, up to IST_NETPBM_HEADER_MAX bytes. Numbers must be decimal and at
 * most INT32_MAX; their ranges are the caller's to check. Refusals are
 * "Corrupt FORMAT data: ...". */
imgstat_status ist_netpbm_header_read(ist_source *src, const char *format,
                                      ist_netpbm_header *h, imgstat_error *err);

/* Whether the host stores integers little-endian. */
int ist_host_is_little_endian(void);
/* Whether c is whitespace in the text headers (PNM, PFM): " \t\n\r\v\f". */
int ist_is_space(int c);

/* A buffered reader over a source, for the formats read in a single pass
 * from their first byte (ASCII PNM, .npy, PFM). */
typedef struct ist_bytes {
  ist_source *src;
  size_t len, at;
  unsigned char buf[1 << 16];
} ist_bytes;

/* Starts b over src at byte offset (rewinding src): "Corrupt FORMAT
 * data: file is truncated" when the input is shorter. */
imgstat_status ist_bytes_start(ist_bytes *b, ist_source *src, size_t offset,
                               const char *format, imgstat_error *err);

/* The refusal of an input that ended early: its read error, else
 * "Corrupt FORMAT data: file is truncated". */
imgstat_status ist_truncated(const ist_source *src, const char *format,
                             imgstat_error *err);

/* The next byte, or -1 at the end of the input (or after a read error:
 * src->read_errno says). */
int ist_bytes_next(ist_bytes *b);
/* Reads n bytes into out; returns how many there were. */
size_t ist_bytes_read(ist_bytes *b, void *out, size_t n);

/* The PNG writer imgstat_image_write uses (src/io/write.c): 0 libdeflate
 * when the build has it (IMGSTAT_HAVE_LIBDEFLATE), 1 libpng and zlib. Set
 * by the PNG benchmark (bench/png_encode.c) to compare the two. */
extern int ist_png_writer_libpng;
/* Whether the build has the libdeflate writer. */
int ist_png_have_libdeflate(void);

#endif
