/*
 * Opening an input (io.h, "inputs that can be read once"): the one rule that
 * says which inputs can be read only once, and the open and reads of an input
 * that never block without asking whether to stop.
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
