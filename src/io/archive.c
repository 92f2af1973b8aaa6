/*
 * Archives read in place (io_engine.h, "archives"): tar (plain or
 * compressed: gzip, bzip2, xz, zstd, as libarchive's filters have them) and
 * zip, through libarchive, member by member in the archive's order; a
 * member's bytes read into memory, never written anywhere.
 *
 * Without libarchive (IMGSTAT_HAVE_ARCHIVE unset) the signatures are still
 * told apart, so that an archive is refused with that reason rather than
 * handed to the image decoders.
 */
#include "io.h"

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>

#ifdef IMGSTAT_HAVE_ARCHIVE
#include "dlib.h"
#include <archive.h>
#include <archive_entry.h>

/* libarchive, loaded when the first archive is opened (dlib.h): the
 * functions called below, through the loaded table. */
/* clang-format off */
#define ARCHIVE_SYMBOLS(X) \
  X(archive_entry_filetype) \
  X(archive_entry_hardlink) \
  X(archive_entry_pathname) \
  X(archive_entry_size) \
  X(archive_entry_size_is_set) \
  X(archive_errno) \
  X(archive_error_string) \
  X(archive_format) \
  X(archive_read_data) \
  X(archive_read_data_skip) \
  X(archive_read_free) \
  X(archive_read_new) \
  X(archive_read_next_header) \
  X(archive_read_open_filename) \
  X(archive_read_support_filter_all) \
  X(archive_read_support_format_tar) \
  X(archive_read_support_format_zip) \
  X(archive_version_string)
/* clang-format on */
IST_DLIB_TABLE(archive, ARCHIVE_SYMBOLS);
#define archive_entry_filetype IST_DLIB_FN(archive, archive_entry_filetype)
#define archive_entry_hardlink IST_DLIB_FN(archive, archive_entry_hardlink)
#define archive_entry_pathname IST_DLIB_FN(archive, archive_entry_pathname)
#define archive_entry_size IST_DLIB_FN(archive, archive_entry_size)
#define archive_entry_size_is_set                                              \
  IST_DLIB_FN(archive, archive_entry_size_is_set)
#define archive_errno IST_DLIB_FN(archive, archive_errno)
#define archive_error_string IST_DLIB_FN(archive, archive_error_string)
#define archive_format IST_DLIB_FN(archive, archive_format)
#define archive_read_data IST_DLIB_FN(archive, archive_read_data)
#define archive_read_data_skip IST_DLIB_FN(archive, archive_read_data_skip)
#define archive_read_free IST_DLIB_FN(archive, archive_read_free)
#define archive_read_new IST_DLIB_FN(archive, archive_read_new)
#define archive_read_next_header IST_DLIB_FN(archive, archive_read_next_header)
#define archive_read_open_filename                                             \
  IST_DLIB_FN(archive, archive_read_open_filename)
#define archive_read_support_filter_all                                        \
  IST_DLIB_FN(archive, archive_read_support_filter_all)
#define archive_read_support_format_tar                                        \
  IST_DLIB_FN(archive, archive_read_support_format_tar)
#define archive_read_support_format_zip                                        \
  IST_DLIB_FN(archive, archive_read_support_format_zip)
#define archive_version_string IST_DLIB_FN(archive, archive_version_string)
static const char *const archive_files[] = {IMGSTAT_SONAME_ARCHIVE,
                                            IMGSTAT_PATH_ARCHIVE, NULL};
static ist_dlib archive_dlib =
    IST_DLIB_ROW(archive, "archives", "libarchive", archive_files, 0);
#endif

/* Bytes read from the archive file at a time. */
#define ARCHIVE_BLOCK ((size_t)64 << 10)

/* The most a member's buffer starts with: it grows as its bytes come. */
#define ARCHIVE_FIRST ((size_t)4 << 20)

int ist_archive_compiled(void) {
#ifdef IMGSTAT_HAVE_ARCHIVE
  return 1;
#else
  return 0;
#endif
}

#ifdef IMGSTAT_HAVE_ARCHIVE
static char description[96 + IMGSTAT_ERROR_MAX];

static void describe(void) {
  const char *why = ist_dlib_why(&archive_dlib);
  if (why)
    snprintf(description, sizeof description, "tar, zip (libarchive: %s)", why);
  else
    snprintf(description, sizeof description, "tar, zip (%s)",
             archive_version_string());
}
#endif

const char *ist_archive_description(void) {
#ifdef IMGSTAT_HAVE_ARCHIVE
  static pthread_once_t once = PTHREAD_ONCE_INIT;
  pthread_once(&once, describe);
  return description;
#else
  return "not built in (libarchive)";
#endif
}

/* A tar header block: the POSIX magic, or (a v7 tar) a name and a checksum
 * that adds up. */
static int tar_header(const unsigned char *b) {
  if (memcmp(b + 257, "ustar", 5) == 0)
    return 1;
  if (b[0] == 0)
    return 0;
  unsigned long want = 0;
  int digits = 0;
  for (int k = 148; k < 156; k++) {
    if (b[k] >= '0' && b[k] <= '7') {
      want = want * 8 + (unsigned long)(b[k] - '0');
      digits++;
    } else if (b[k] != ' ' && b[k] != 0) {
      return 0;
    } else if (digits) {
      break;
    }
  }
  if (!digits)
    return 0;
  unsigned long sum = 0;
  for (int k = 0; k < 512; k++)
    sum += k >= 148 && k < 156 ? ' ' : b[k];
  return sum == want;
}

#ifndef IMGSTAT_HAVE_ARCHIVE
/* Whether a name ends in the suffix of a compressed tar. */
static int compressed_tar_name(const char *path) {
  static const char *const suffixes[] = {
      ".tar.gz", ".tgz",     ".tar.bz2", ".tbz2",    ".tbz",     ".tar.xz",
      ".txz",    ".tar.zst", ".tzst",    ".tar.lz4", ".tar.lzma"};
  size_t n = strlen(path);
  for (size_t k = 0; k < sizeof suffixes / sizeof suffixes[0]; k++) {
    size_t m = strlen(suffixes[k]);
    if (n > m && strcasecmp(path + n - m, suffixes[k]) == 0)
      return 1;
  }
  return 0;
}
#endif

/* The signatures of the compressions libarchive undoes. */
static int compressed(const unsigned char *b, size_t n) {
  return (n >= 2 && b[0] == 0x1f && b[1] == 0x8b) ||
         (n >= 3 && memcmp(b, "BZh", 3) == 0) ||
         (n >= 6 && memcmp(b,
                           "\xfd"
                           "7zXZ\0",
                           6) == 0) ||
         (n >= 4 && memcmp(b, "\x28\xb5\x2f\xfd", 4) == 0) ||
         (n >= 4 && memcmp(b, "\x04\x22\x4d\x18", 4) == 0);
}

#ifdef IMGSTAT_HAVE_ARCHIVE
static struct archive *reader_new(void) {
  struct archive *a = archive_read_new();
  if (!a)
    return NULL;
  archive_read_support_filter_all(a);
  archive_read_support_format_tar(a);
  archive_read_support_format_zip(a);
  return a;
}

/* Whether libarchive finds a tar or a zip in the compressed file at path. */
static int compressed_archive(const char *path) {
  imgstat_error err;
  /* without the library: left to the decoders, which say what it is not */
  if (ist_dlib_need(&archive_dlib, &err) != IMGSTAT_OK)
    return 0;
  struct archive *a = reader_new();
  if (!a)
    return 0;
  int yes = 0;
  if (archive_read_open_filename(a, path, ARCHIVE_BLOCK) == ARCHIVE_OK) {
    struct archive_entry *e;
    int r = archive_read_next_header(a, &e);
    yes = r == ARCHIVE_OK || r == ARCHIVE_WARN || r == ARCHIVE_EOF;
    /* not a tar: a compressed image (a FITS .fits.gz), left to the decoders */
    if (archive_format(a) == 0)
      yes = 0;
  }
  archive_read_free(a);
  return yes;
}
#endif

int ist_archive_sniff(const char *path) {
  int fd = open(path, O_RDONLY | O_NONBLOCK | O_CLOEXEC);
  if (fd < 0)
    return 0;
  struct stat st;
  unsigned char b[512];
  ssize_t n = 0;
  if (fstat(fd, &st) == 0 && S_ISREG(st.st_mode)) {
    do
      n = pread(fd, b, sizeof b, 0);
    while (n < 0 && errno == EINTR);
  }
  close(fd);
  if (n < 4)
    return 0;
  if (memcmp(b, "PK\x03\x04", 4) == 0 || memcmp(b, "PK\x05\x06", 4) == 0)
    return 1;
  if (n == 512 && tar_header(b))
    return 1;
  if (!compressed(b, (size_t)n))
    return 0;
#ifdef IMGSTAT_HAVE_ARCHIVE
  return compressed_archive(path);
#else
  return compressed_tar_name(path);
#endif
}

struct ist_archive {
#ifdef IMGSTAT_HAVE_ARCHIVE
  struct archive *a;
#endif
  uint64_t next; /* the number of the next entry, from 0 */
  int data_read; /* the current entry's bytes were read or skipped */
  char *path;
  char *name; /* the current entry's, cleaned */
  size_t name_cap;
};

#ifdef IMGSTAT_HAVE_ARCHIVE
/* A member's name without its leading "./" parts; NULL when it escapes the
 * archive (absolute, or a ".." part). */
static const char *clean_name(const char *name) {
  while (name[0] == '.' && name[1] == '/') {
    name += 2;
    while (*name == '/')
      name++;
  }
  if (name[0] == '/')
    return NULL;
  for (const char *p = name; *p;) {
    const char *end = strchr(p, '/');
    size_t len = end ? (size_t)(end - p) : strlen(p);
    if (len == 2 && p[0] == '.' && p[1] == '.')
      return NULL;
    p += len + (end != NULL);
  }
  return name;
}
#endif

#ifdef IMGSTAT_HAVE_ARCHIVE
static imgstat_status damaged(struct archive *a, const char *what,
                              imgstat_error *err) {
  const char *why = archive_error_string(a);
  int e = archive_errno(a);
  return imgstat_error_set(err, IMGSTAT_ERR_FORMAT, "damaged %s: %s", what,
                           why ? why
                           : e ? strerror(e)
                               : "unknown error");
}
#endif

#ifndef IMGSTAT_HAVE_ARCHIVE
/* What a reader's call answers in a build without libarchive (an archive
 * is refused at its open, so these are not reached in a run). */
static imgstat_status without_libarchive(imgstat_error *err) {
  return imgstat_error_set(err, IMGSTAT_ERR_UNSUPPORTED,
                           "built without libarchive");
}
#endif

imgstat_status ist_archive_open(const char *path, ist_archive **out,
                                imgstat_error *err) {
  *out = NULL;
#ifdef IMGSTAT_HAVE_ARCHIVE
  imgstat_status loaded = ist_dlib_need(&archive_dlib, err);
  if (loaded != IMGSTAT_OK)
    return loaded;
  ist_archive *ar = calloc(1, sizeof *ar);
  if (!ar || !(ar->a = reader_new())) {
    free(ar);
    return imgstat_error_set(err, IMGSTAT_ERR_NOMEM,
                             "out of memory opening an archive");
  }
  ar->data_read = 1;
  ar->path = strdup(path);
  if (!ar->path) {
    ist_archive_close(ar);
    return imgstat_error_set(err, IMGSTAT_ERR_NOMEM,
                             "out of memory opening an archive");
  }
  if (archive_read_open_filename(ar->a, path, ARCHIVE_BLOCK) != ARCHIVE_OK) {
    int e = archive_errno(ar->a);
    const char *why = archive_error_string(ar->a);
    imgstat_error_set(err, IMGSTAT_ERR_IO, "%s",
                      e > 0 ? strerror(e)
                      : why ? why
                            : "cannot be opened");
    ist_archive_close(ar);
    return IMGSTAT_ERR_IO;
  }
  *out = ar;
  return IMGSTAT_OK;
#else
  (void)path;
  return imgstat_error_set(err, IMGSTAT_ERR_UNSUPPORTED,
                           "a tar or zip archive: this build reads no "
                           "archives (built without libarchive)");
#endif
}

void ist_archive_close(ist_archive *ar) {
  if (!ar)
    return;
#ifdef IMGSTAT_HAVE_ARCHIVE
  archive_read_free(ar->a);
#endif
  free(ar->name);
  free(ar->path);
  free(ar);
}

/* A zip's members are found through its central directory: after a member
 * whose data is damaged, the archive is opened again at the next one. */
#ifdef IMGSTAT_HAVE_ARCHIVE
static int resumable(const ist_archive *ar) {
  return (archive_format(ar->a) & ARCHIVE_FORMAT_BASE_MASK) ==
         ARCHIVE_FORMAT_ZIP;
}
#endif

imgstat_status ist_archive_resume(ist_archive *ar, imgstat_error *err) {
#ifdef IMGSTAT_HAVE_ARCHIVE
  if (!resumable(ar))
    return imgstat_error_set(err, IMGSTAT_ERR_FORMAT, "cannot go on");
  uint64_t want = ar->next;
  archive_read_free(ar->a);
  ar->a = reader_new();
  if (!ar->a)
    return imgstat_error_set(err, IMGSTAT_ERR_NOMEM,
                             "out of memory opening an archive");
  if (archive_read_open_filename(ar->a, ar->path, ARCHIVE_BLOCK) != ARCHIVE_OK)
    return damaged(ar->a, "archive", err);
  for (uint64_t k = 0; k < want; k++) {
    struct archive_entry *e;
    int r = archive_read_next_header(ar->a, &e);
    if (r != ARCHIVE_OK && r != ARCHIVE_WARN)
      return r == ARCHIVE_EOF ? imgstat_error_set(err, IMGSTAT_ERR_FORMAT,
                                                  "the archive changed")
                              : damaged(ar->a, "archive", err);
  }
  ar->data_read = 1;
  return IMGSTAT_OK;
#else
  (void)ar;
  return without_libarchive(err);
#endif
}

imgstat_status ist_archive_next(ist_archive *ar, ist_member *m,
                                imgstat_error *err) {
  memset(m, 0, sizeof *m);
#ifdef IMGSTAT_HAVE_ARCHIVE
  struct archive_entry *e;
  int r = archive_read_next_header(ar->a, &e);
  if (r == ARCHIVE_EOF) {
    m->what = IST_MEMBER_END;
    return IMGSTAT_OK;
  }
  if (r != ARCHIVE_OK && r != ARCHIVE_WARN)
    return damaged(ar->a, "archive", err);
  m->number = ar->next++;
  ar->data_read = 0;
  const char *raw = archive_entry_pathname(e);
  if (!raw)
    raw = "";
  size_t len = strlen(raw);
  if (len + 1 > ar->name_cap) {
    char *p = realloc(ar->name, len + 1);
    if (!p)
      return imgstat_error_set(err, IMGSTAT_ERR_NOMEM,
                               "out of memory reading an archive");
    ar->name = p;
    ar->name_cap = len + 1;
  }
  memcpy(ar->name, raw, len + 1);
  m->name = ar->name;
  mode_t type = archive_entry_filetype(e);
  if (type == AE_IFDIR || (len > 0 && raw[len - 1] == '/')) {
    m->what = IST_MEMBER_DIR;
    return IMGSTAT_OK;
  }
  if (!ist_extension_is_image(raw)) {
    m->what = IST_MEMBER_OTHER;
    return IMGSTAT_OK;
  }
  const char *clean = clean_name(raw);
  m->what = IST_MEMBER_REFUSED;
  if (!clean) {
    m->message = "the member's name leads out of the archive (an absolute "
                 "path or a '..' part): not read";
    return IMGSTAT_OK;
  }
  m->name = clean;
  if (archive_entry_hardlink(e)) {
    m->message = "a hard link in the archive: not read";
    return IMGSTAT_OK;
  }
  if (type == AE_IFLNK) {
    m->message = "a symbolic link in the archive: not read";
    return IMGSTAT_OK;
  }
  if (type != AE_IFREG) {
    m->message = "not a regular file in the archive: not read";
    return IMGSTAT_OK;
  }
  m->what = IST_MEMBER_FILE;
  m->size_known = archive_entry_size_is_set(e) != 0;
  int64_t size = archive_entry_size(e);
  m->size = m->size_known && size > 0 ? (uint64_t)size : 0;
  return IMGSTAT_OK;
#else
  (void)ar;
  return without_libarchive(err);
#endif
}

imgstat_status ist_archive_skip(ist_archive *ar, imgstat_error *err) {
#ifdef IMGSTAT_HAVE_ARCHIVE
  if (ar->data_read)
    return IMGSTAT_OK;
  ar->data_read = 1;
  if (archive_read_data_skip(ar->a) != ARCHIVE_OK)
    return damaged(ar->a, "archive", err);
  return IMGSTAT_OK;
#else
  (void)ar;
  return without_libarchive(err);
#endif
}

imgstat_status ist_archive_read(ist_archive *ar, const ist_member *m,
                                uint64_t max, unsigned char **data,
                                size_t *size, int *fatal, imgstat_error *err) {
  *data = NULL;
  *size = 0;
  *fatal = 0;
#ifdef IMGSTAT_HAVE_ARCHIVE
  if (ar->data_read)
    return imgstat_error_set(err, IMGSTAT_ERR_ARG, "read twice");
  if (max > SIZE_MAX - 1)
    max = SIZE_MAX - 1;
  /* a size in the header over the limit: refused before anything is
   * allocated (what the header says is not trusted below it either) */
  ar->data_read = 1; /* the next header skips what is left */
  if (m->size_known && m->size > max)
    return imgstat_error_set(err, IMGSTAT_ERR_LIMIT,
                             "the member's header says %llu bytes, over the "
                             "limit of %llu (max_memory)",
                             (unsigned long long)m->size,
                             (unsigned long long)max);
  /* the header's size (and one byte, to see the end) when it is small;
   * else the buffer grows with the bytes that come, so that a header that
   * lies within the limit costs no more than the data behind it */
  size_t cap = m->size_known && m->size > 0 && m->size < ARCHIVE_FIRST
                   ? (size_t)m->size + 1
                   : ARCHIVE_FIRST;
  if (cap > max + 1)
    cap = (size_t)max + 1;
  unsigned char *buf = malloc(cap);
  if (!buf)
    return imgstat_error_set(err, IMGSTAT_ERR_NOMEM,
                             "out of memory reading a member of %zu bytes",
                             cap);
  size_t len = 0;
  for (;;) {
    if (len == cap) {
      if (cap > max) { /* one byte past the limit: over it */
        free(buf);
        return imgstat_error_set(err, IMGSTAT_ERR_LIMIT,
                                 "the member holds more than %llu bytes, over "
                                 "the limit (max_memory)",
                                 (unsigned long long)max);
      }
      size_t ncap = cap > max / 2 ? (size_t)max + 1 : 2 * cap;
      unsigned char *p = realloc(buf, ncap);
      if (!p) {
        free(buf);
        return imgstat_error_set(err, IMGSTAT_ERR_NOMEM,
                                 "out of memory reading a member");
      }
      buf = p;
      cap = ncap;
    }
    la_ssize_t got = archive_read_data(ar->a, buf + len, cap - len);
    if (got < 0) {
      free(buf);
      *fatal = got == ARCHIVE_FATAL;
      return damaged(ar->a, *fatal && !resumable(ar) ? "archive" : "member",
                     err);
    }
    if (got == 0)
      break;
    len += (size_t)got;
  }
  *data = buf;
  *size = len;
  return IMGSTAT_OK;
#else
  (void)ar;
  (void)m;
  (void)max;
  return without_libarchive(err);
#endif
}
