/*
 * The source reader (io.h, "the source of an input's bytes"), which the
 * decoders, their shared helpers (common.c) and the decoder table (load.c)
 * call and which calls none of them: the one rule that says which inputs can
 * be read only once, the open and reads of an input that never block without
 * asking whether to stop, and the reads of an open input's bytes, from a
 * regular file (streamed) or from memory (a pipe's bytes read whole, or the
 * caller's).
 *
 * A FIFO opened for reading blocks in open() until a writer comes, and a pipe
 * or a device blocks in read() until bytes come; a signal handler installed
 * with SA_RESTART (or one that ran on another thread) does not end either
 * wait. So every input is opened with O_NONBLOCK, which never waits for a
 * writer, and the reads of one that is no regular file wait in poll() for a
 * slice at a time, asking stop between slices.
 *
 * Linux and POSIX: a FIFO opened with O_NONBLOCK and no writer reads as at its
 * end (read() returns 0) until a writer comes, so no read is made before poll
 * says that bytes wait or that a writer came and left (POLLHUP is not
 * reported for a FIFO until a writer has come since the open).
 */
#include "io.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* How long one wait in poll() lasts before stop is asked again. */
#define WAIT_SLICE_MS 50

int ist_read_once_mode(mode_t mode) { return !S_ISREG(mode) && !S_ISBLK(mode); }

imgstat_status ist_input_open(const char *path, int *fd, struct stat *st,
                              imgstat_error *err) {
  *fd = -1;
  int f;
  do
    f = open(path, O_RDONLY | O_NONBLOCK | O_CLOEXEC);
  while (f < 0 && errno == EINTR);
  if (f < 0)
    return imgstat_error_set(err, IMGSTAT_ERR_IO, "%s", strerror(errno));
  if (fstat(f, st) != 0) {
    int e = errno;
    close(f);
    return imgstat_error_set(err, IMGSTAT_ERR_IO, "%s", strerror(e));
  }
  /* a file that can be read again is read as usual, by blocking reads */
  if (!ist_read_once_mode(st->st_mode) || S_ISDIR(st->st_mode)) {
    int flags = fcntl(f, F_GETFL);
    if (flags < 0 || fcntl(f, F_SETFL, flags & ~O_NONBLOCK) != 0) {
      int e = errno;
      close(f);
      return imgstat_error_set(err, IMGSTAT_ERR_IO, "%s", strerror(e));
    }
  }
  *fd = f;
  return IMGSTAT_OK;
}

ssize_t ist_input_read(int fd, void *buf, size_t n, const ist_stop *stop) {
  for (;;) {
    struct pollfd p = {fd, POLLIN, 0};
    int timeout = stop && stop->fn ? WAIT_SLICE_MS : -1;
    int r = poll(&p, 1, timeout);
    if (r < 0 && errno != EINTR)
      return -1;
    if (r > 0) {
      ssize_t got = read(fd, buf, n);
      if (got >= 0 || (errno != EAGAIN && errno != EINTR))
        return got;
    }
    if (stop && stop->fn && stop->fn(stop->ctx)) {
      errno = ECANCELED;
      return -1;
    }
  }
}

size_t ist_source_read(ist_source *src, void *buf, size_t n) {
  size_t got;
  if (src->file) {
    got = fread(buf, 1, n, src->file);
    if (got < n && ferror(src->file) && !src->read_errno)
      src->read_errno = errno ? errno : EIO;
  } else {
    size_t left = src->pos < src->size ? src->size - src->pos : 0;
    got = n < left ? n : left;
    if (got)
      memcpy(buf, src->data + src->pos, got);
  }
  src->pos += got;
  if (got < n)
    src->short_read = 1;
  return got;
}

size_t ist_source_read_at(ist_source *src, uint64_t off, void *buf, size_t n) {
  if (off >= src->size)
    return 0;
  if (n > src->size - off)
    n = (size_t)(src->size - off);
  if (!src->file) {
    memcpy(buf, src->data + off, n);
    return n;
  }
  size_t done = 0;
  while (done < n) {
    ssize_t got = pread(fileno(src->file), (char *)buf + done, n - done,
                        (off_t)(off + done));
    if (got < 0 && errno == EINTR)
      continue;
    if (got <= 0) {
      if (got < 0 && !src->read_errno)
        src->read_errno = errno;
      break;
    }
    done += (size_t)got;
  }
  return done;
}

int ist_source_rewind(ist_source *src) { return ist_source_seek(src, 0); }

int ist_source_seek(ist_source *src, uint64_t offset) {
  if (offset > src->size)
    offset = src->size;
  src->pos = (size_t)offset;
  src->short_read = 0;
  if (src->file) {
    clearerr(src->file);
    if (fseeko(src->file, (off_t)offset, SEEK_SET) != 0)
      return errno ? errno : EIO;
  }
  return 0;
}

imgstat_status ist_source_slurp(ist_source *src, const unsigned char **data,
                                int *owned, imgstat_error *err) {
  *data = NULL;
  *owned = 0;
  if (!src->file) {
    *data = src->data;
    return IMGSTAT_OK;
  }
  int e = ist_source_rewind(src);
  if (e)
    return imgstat_error_set(err, IMGSTAT_ERR_IO, "%s", strerror(e));
  unsigned char *buf = malloc(src->size ? src->size : 1);
  if (!buf)
    return imgstat_error_set(err, IMGSTAT_ERR_NOMEM,
                             "out of memory reading %zu bytes", src->size);
  if (ist_source_read(src, buf, src->size) != src->size) {
    free(buf);
    if (src->read_errno)
      return imgstat_error_set(err, IMGSTAT_ERR_IO, "%s",
                               strerror(src->read_errno));
    return imgstat_error_set(err, IMGSTAT_ERR_FORMAT,
                             "file shrank while being read");
  }
  *data = buf;
  *owned = 1;
  return IMGSTAT_OK;
}

imgstat_status ist_source_head(ist_source *src, unsigned char *buf, size_t size,
                               size_t *n, imgstat_error *err) {
  memset(buf, 0, size);
  *n = ist_source_read(src, buf, size);
  if (src->read_errno)
    return imgstat_error_set(err, IMGSTAT_ERR_IO, "%s",
                             strerror(src->read_errno));
  return IMGSTAT_OK;
}
