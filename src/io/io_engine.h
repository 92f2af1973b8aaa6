/*
 * The calls of src/io that the engine above it makes (src/engine: the walk,
 * a task's decode, the JPEGs offered to nvJPEG), private to src/ and
 * included by io.h: whether an input can be read only once and whether a
 * name is an image's, a decoder opened with a stop for its waits, and a
 * JPEG's bytes for nvJPEG with the CPU path's checks before it.
 */
#ifndef IMGSTAT_IO_ENGINE_H
#define IMGSTAT_IO_ENGINE_H

#include "imgstat/imgstat.h"

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

/* Inputs that can be read once (src/io/source.c).
 * The one rule for every pass that would read an input twice (the float
 * range pass of pooled histograms, a --dataset's pooling pass, a JPEG reopened
 * on the CPU after the GPU's decoder refused it): an input can be read only
 * once unless it is a regular file or a block device. A pipe (standard input,
 * /dev/stdin, /dev/fd/N fed by one), a FIFO, a character device (a terminal)
 * and a socket give their bytes once. The walk decides it once per input,
 * from the file's type (imgstat_input.read_once). */
int ist_read_once_mode(mode_t mode);

/* Whether a file name (a path: its last component counts) ends in the
 * extension of a format the decoder table reads (".png", ".JPG", ...; any
 * case). Decoding never looks at names: only directory walks choose files by
 * this (src/engine/walk.c). A name whose only dot is its first character
 * (".png") has no extension. */
int ist_extension_is_image(const char *name);

/* What stops a wait for an input's bytes: fn(ctx) nonzero (a cancelled run).
 * fn NULL: nothing does. */
typedef struct ist_stop {
  int (*fn)(void *ctx);
  void *ctx;
} ist_stop;

/* Opens a decoder on path as imgstat_decoder_open does; the waits for the
 * bytes of an input that can be read once end when stop says so
 * (IMGSTAT_ERR_IO, "cancelled while waiting for the input"). */
imgstat_status ist_decoder_open_until(const char *path,
                                      const imgstat_load_options *opts,
                                      const ist_stop *stop,
                                      imgstat_decoder **out,
                                      imgstat_error *err);

/* What an open decoder passed over in its input so far (its header's
 * warning; "" when none): the decoder's until it is closed (load.c). */
const char *ist_decoder_warning_text(const imgstat_decoder *d);

/* Statistics as an input is read (src/engine's stats item): whether an
 * open decoder, not read yet, can reduce its image piece by piece as it
 * reads it (a TIFF page of 8- or 16-bit samples: its strips or tiles), and
 * that reduction in place of the read: the figures of the valid samples
 * under v (its nodata values, or none: v NULL; no mask, no pixel list) into
 * out and nodata, a channel each, as imgstat_cpu_valid_stats gives them
 * over the decoded image, with memory for a window of pieces, not the
 * image. IMGSTAT_ERR_UNSUPPORTED for a decoder that cannot. */
int ist_decoder_streams(const imgstat_decoder *d);
imgstat_status ist_decoder_stats(imgstat_decoder *d, const imgstat_valid *v,
                                 imgstat_partial *out, uint64_t *nodata,
                                 imgstat_error *err);

/* For tests alone (the fuzzers, whose images are small): the bytes of
 * samples from which a TIFF page's strips or tiles are read on threads
 * (16 MiB; 0: that default) and the bytes of a chunk's rows put into
 * planes at a time by ist_decoder_stats (256 KiB; 0: that default), for
 * every decoder read after the call. Not for a process that reads
 * meanwhile on another thread. */
void ist_decoder_stream_test_sizes(uint64_t parallel_bytes, size_t group_bytes);

/* For the GPU decoder (src/engine): an open decoder's JPEG file, when it is
 * TurboJPEG's and nvJPEG may take it (Huffman coding, 8-bit, gray or
 * YCbCr; sequential or progressive): returns 1 with the whole file in
 * *bytes (the decoder's, until it is closed) and *size; else 0. The
 * decoder's open has made every check of the CPU path that needs no
 * decoding. */
int ist_jpeg_gpu_input(imgstat_decoder *d, const unsigned char **bytes,
                       size_t *size);

/* The check of level (an imgstat_jpeg_check) on an open decoder that
 * ist_jpeg_gpu_input takes: IMGSTAT_OK, or the CPU decoder's refusal
 * (ist_jpeg_check_entropy's, src/io/jpeg_scan.c) of a file the scanner doubts.
 */
imgstat_status ist_jpeg_check(imgstat_decoder *d, int level,
                              imgstat_error *err);

/* ---- archives (src/io/archive.c) ------------------------------------------
 * Tar (plain or compressed) and zip files read member by member, in the
 * archive's order, through libarchive; nothing is ever written. */

/* Whether this build reads archives (libarchive). */
int ist_archive_compiled(void);

/* For --version: "tar, zip (libarchive 3.6.2)", or "not built in
 * (libarchive)". */
const char *ist_archive_description(void);

/* Whether the regular file at path is an archive, by its first bytes: a
 * zip's signature, a tar header block (POSIX magic or a v7 checksum), or a
 * compressed stream (gzip, bzip2, xz, zstd, lz4) in which libarchive finds
 * a tar (without libarchive: one whose name ends in .tar.gz, .tgz, ...).
 * 0 for anything else, or when it cannot be read. */
int ist_archive_sniff(const char *path);

typedef struct ist_archive ist_archive;

enum {
  IST_MEMBER_END = 0, /* no more members */
  IST_MEMBER_FILE,    /* a regular file with an image's extension */
  IST_MEMBER_OTHER,   /* another file: not an image's name (.cls, .json) */
  IST_MEMBER_DIR,     /* a directory entry */
  IST_MEMBER_REFUSED  /* an image's name that is not read: message says */
};

/* One entry of an archive (ist_archive_next). */
typedef struct ist_member {
  int what;         /* IST_MEMBER_* */
  uint64_t number;  /* its place among the archive's entries, from 0 */
  const char *name; /* FILE: without leading "./"; else as stored (the
                       archive's until the next call) */
  uint64_t size;    /* FILE: the header's size, when size_known */
  int size_known;
  const char *message; /* REFUSED: why (a static string) */
} ist_member;

/* Opens the archive at path (IMGSTAT_ERR_UNSUPPORTED without libarchive). */
imgstat_status ist_archive_open(const char *path, ist_archive **out,
                                imgstat_error *err);
void ist_archive_close(ist_archive *ar);

/* The next entry's header (the current entry's bytes skipped when they were
 * not read); a failure is the archive's damage (IMGSTAT_ERR_FORMAT,
 * "damaged archive: ..."), after which nothing more is read from it. */
imgstat_status ist_archive_next(ist_archive *ar, ist_member *m,
                                imgstat_error *err);

/* Reads the bytes of the current entry m (a FILE) into *data (malloc'ed,
 * *size bytes), never more than max: a header that says more is refused
 * before anything is allocated, and a member that decompresses to more is
 * refused once max + 1 bytes came (IMGSTAT_ERR_LIMIT); either way the
 * archive goes on. *fatal: the archive itself is damaged (nothing more can
 * be read from it). */
imgstat_status ist_archive_read(ist_archive *ar, const ist_member *m,
                                uint64_t max, unsigned char **data,
                                size_t *size, int *fatal, imgstat_error *err);

/* After a failure of ist_archive_read with *fatal: opens the archive again
 * at the entry after the damaged one when its form allows (a zip, whose
 * members its central directory finds); else, or when that fails, an
 * error (the archive can give nothing more). */
imgstat_status ist_archive_resume(ist_archive *ar, imgstat_error *err);

/* Skips the current entry's bytes (nothing when they were read). */
imgstat_status ist_archive_skip(ist_archive *ar, imgstat_error *err);

#endif
