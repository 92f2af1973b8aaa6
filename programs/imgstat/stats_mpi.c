/*
 * `imgstat --mpi`: every rank walks the inputs, runs its share, rank 0
 * prints. Ranks > 0 write their records and messages as one process would,
 * into temporary files that their standard output and error point to; at the
 * end rank 0 gathers them in rank order (input order) and prints them after
 * its own, then the dataset record of the ranks' accumulators merged in rank
 * order: stdout and stderr equal one process's byte for byte.
 */
#include "stats_cmd_private.h"

#include "cli_util.h"
#include "hist_plot.h"
#include "imgstat/batch.h"
#include "imgstat/cuda.h"
#include "imgstat/dataset.h"
#include "imgstat/engine.h"
#include "imgstat/imgstat.h"
#include "imgstat/inputs.h"
#include "imgstat/mpi.h"
#include "imgstat/outputs.h"
#include "imgstat/record.h"
#include "imgstat/run.h"
#include "options.h"
#include "progress.h"
#include "verify.h"

#include <errno.h>
#include <inttypes.h>
#include <limits.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

/* Whether --mpi is among the arguments (before "--"): MPI starts before the
 * options are parsed, so that ranks > 0 can keep quiet the messages every
 * rank would print alike (usage errors, warnings). The parse decides. */
int ist_stats_mpi_asked(int argc, char **argv) {
  for (int k = 1; k < argc && strcmp(argv[k], "--") != 0; k++)
    if (strcmp(argv[k], "--mpi") == 0)
      return 1;
  return 0;
}

/* Ranks > 0: points fds 1 and 2 to temporary files. */
void ist_stats_capture_start(mpi_run *mr) {
  fflush(stdout);
  fflush(stderr);
  for (int k = 0; k < 2; k++) {
    mr->saved[k] = -1;
    mr->cap[k] = tmpfile();
    if (mr->cap[k])
      mr->saved[k] = dup(k + 1);
    if (mr->saved[k] < 0 || dup2(fileno(mr->cap[k]), k + 1) < 0)
      mr->cap_failed = 1;
  }
}

/* Drops what was captured so far (what rank 0 printed alike). */
void ist_stats_capture_reset(mpi_run *mr) {
  fflush(stdout);
  fflush(stderr);
  for (int k = 0; k < 2; k++)
    if (mr->cap[k] && (ftruncate(k + 1, 0) != 0 || lseek(k + 1, 0, 0) < 0))
      mr->cap_failed = 1;
}

/* Gives fds 1 and 2 back; the captures stay to be read. */
void ist_stats_capture_end(mpi_run *mr) {
  fflush(stdout);
  fflush(stderr);
  for (int k = 0; k < 2; k++)
    if (mr->saved[k] >= 0) {
      dup2(mr->saved[k], k + 1);
      close(mr->saved[k]);
      mr->saved[k] = -1;
    }
}

void ist_stats_capture_free(mpi_run *mr) {
  ist_stats_capture_end(mr);
  for (int k = 0; k < 2; k++)
    if (mr->cap[k])
      fclose(mr->cap[k]);
}

/* The most bytes a rank sends in one gather (a round); the environment
 * variable IMGSTAT_TEST_MPI_CHUNK makes it smaller (tests). */
static size_t gather_chunk(void) {
  size_t chunk = (size_t)16 << 20;
  const char *t = getenv("IMGSTAT_TEST_MPI_CHUNK");
  uint64_t v;
  if (t && ist_cli_parse_uint(t, 1, chunk, &v))
    chunk = (size_t)v;
  return chunk;
}

/* Brings what f holds on every rank > 0 (a capture of stdout or stderr, or
 * bytes; NULL: none) to rank 0, rank after rank, each in rounds of at most
 * gather_chunk bytes (every rank learns every rank's length first, so all
 * take part in the same rounds), and writes it to dest there. *strip: a
 * text record's leading blank line (ranks > 0 number their records from 1)
 * is dropped when nothing was printed before it. lens (NULL: not wanted)
 * gets every rank's length. Collective. */
static imgstat_status gather_file(mpi_run *mr, FILE *f, FILE *dest, int *strip,
                                  uint64_t *lens, imgstat_error *err) {
  int ranks = mr->at.size, me = mr->at.rank;
  uint64_t *len = calloc((size_t)ranks, sizeof *len);
  size_t chunk = gather_chunk();
  unsigned char *buf = malloc(chunk);
  if (!len || !buf) {
    free(len);
    free(buf);
    return imgstat_error_set(err, IMGSTAT_ERR_NOMEM, "out of memory");
  }
  if (f && fseek(f, 0, SEEK_END) == 0) {
    long end = ftell(f);
    len[me] = end > 0 ? (uint64_t)end : 0;
    rewind(f);
  }
  imgstat_status s =
      imgstat_mpi_allreduce_u64(mr->m, len, ranks, IMGSTAT_MPI_SUM, err);
  for (int r = 1; r < ranks && s == IMGSTAT_OK; r++) {
    for (uint64_t done = 0; done < len[r] && s == IMGSTAT_OK;) {
      size_t n = len[r] - done < chunk ? (size_t)(len[r] - done) : chunk;
      done += n;
      if (r == me) { /* a short read (no such thing): zeros, same length */
        size_t got = fread(buf, 1, n, f);
        memset(buf + got, 0, n - got);
      }
      imgstat_mpi_blobs blobs;
      s = imgstat_mpi_gather(mr->m, buf, r == me ? n : 0, &blobs, err);
      if (s != IMGSTAT_OK || me != 0) {
        imgstat_mpi_blobs_free(&blobs);
        continue;
      }
      const unsigned char *at = blobs.data + blobs.offsets[r];
      size_t m = blobs.offsets[r + 1] - blobs.offsets[r];
      if (*strip && m > 0) {
        if (*at == '\n') {
          at++;
          m--;
        }
        *strip = 0;
      }
      if (dest)
        fwrite(at, 1, m, dest);
      imgstat_mpi_blobs_free(&blobs);
    }
  }
  if (lens && s == IMGSTAT_OK)
    memcpy(lens, len, (size_t)ranks * sizeof *len);
  free(len);
  free(buf);
  return s;
}

/* --report under --mpi: every rank's report, serialized, brought to rank 0
 * and merged into its own in rank order (input order); rank 0's page is
 * then one process's. Collective; every rank returns the same: 0, or 1
 * when the reports could not be brought together (rank 0 said why). */
int ist_stats_mpi_gather_report(run_state *st, mpi_run *mr) {
  imgstat_error err;
  memset(&err, 0, sizeof err);
  int ranks = mr->at.size, me = mr->at.rank, bad = 0;
  void *mine = NULL;
  size_t n = 0;
  FILE *src = NULL;
  if (me > 0) { /* a rank that cannot send sends nothing, and says so */
    bad = imgstat_report_serialize(st->report, &mine, &n, &err) != IMGSTAT_OK ||
          !(src = fmemopen(mine, n, "r"));
    if (bad)
      ist_cli_error("--report: %s",
                    err.message[0] ? err.message : "out of memory");
  }
  char *all = NULL;
  size_t total = 0;
  FILE *dest = me == 0 ? open_memstream(&all, &total) : NULL;
  uint64_t *lens = calloc((size_t)ranks, sizeof *lens);
  bad = bad || !lens || (me == 0 && !dest);
  int no_strip = 0;
  imgstat_status s = gather_file(mr, src, dest, &no_strip, lens, &err);
  if (src)
    fclose(src);
  free(mine);
  if (dest && fclose(dest) != 0)
    bad = 1;
  if (s != IMGSTAT_OK)
    ist_cli_error("--mpi: --report: %s", err.message);
  size_t at = 0;
  for (int r = 1; me == 0 && s == IMGSTAT_OK && !bad && r < ranks; r++) {
    imgstat_report *other = NULL;
    if (lens[r] == 0 || lens[r] > total - at) {
      bad = 1; /* that rank said why */
      break;
    }
    /* (the run's reports have the default bounds) */
    if (imgstat_report_deserialize(all + at, (size_t)lens[r], NULL, &other,
                                   &err) != IMGSTAT_OK ||
        imgstat_report_merge(st->report, other, &err) != IMGSTAT_OK) {
      ist_cli_error("--report: rank %d's part: %s", r, err.message);
      bad = 1;
    }
    imgstat_report_destroy(other);
    at += (size_t)lens[r];
  }
  free(lens);
  free(all);
  return ist_stats_any_rank(mr, bad || s != IMGSTAT_OK);
}

/* After parsing: what --mpi cannot do. Returns -1, or the exit status of
 * the error it printed. */
int ist_stats_check_mpi_options(const stats_options *o) {
  if (!o->mpi)
    return -1;
  if (!imgstat_mpi_built())
    return usage("--mpi: this imgstat was built without MPI (configure "
                 "with -DIMGSTAT_WITH_MPI=ON and libopenmpi-dev)");
  for (int k = 0; k < o->nsources; k++)
    if (!o->sources[k].is_list && strcmp(o->sources[k].text, "-") == 0)
      return usage("--mpi: an image on standard input cannot be shared by "
                   "the ranks (a list of paths there can: --files-from -)");
  if (o->hist.png_path && o->dataset != 2)
    return usage("--mpi: --histogram-png needs --dataset-only (the "
                 "per-image plots would be named by each rank alone)");
  return -1;
}

/* --mpi, after this rank's run (which merged the dataset accumulators on
 * rank 0): the ranks agree on the outcome and rank 0 prints the others'
 * records and messages. Returns whether the dataset record is to be
 * printed (rank 0). */
int ist_stats_mpi_finish(run_state *st, mpi_run *mr, int batch_ok,
                         const stats_options *o) {
  imgstat_error err;
  memset(&err, 0, sizeof err);
  int cancel = ist_cli_cancel_status();
  uint64_t any[5] = {(uint64_t)st->write_failed, (uint64_t)st->any_mismatch,
                     (uint64_t)(st->any_failed || mr->cap_failed),
                     (uint64_t)!batch_ok,
                     cancel >= 0 ? (uint64_t)cancel + 1 : 0};
  uint64_t counts[3] = {st->progress.done, st->progress.failed,
                        st->records - (mr->at.rank > 0)};
  imgstat_status s =
      imgstat_mpi_allreduce_u64(mr->m, any, 5, IMGSTAT_MPI_MAX, &err);
  if (s == IMGSTAT_OK)
    s = imgstat_mpi_allreduce_u64(mr->m, counts, 3, IMGSTAT_MPI_SUM, &err);
  unsigned long mine = st->records;
  ist_stats_capture_end(mr);
  int strip = o->format == IMGSTAT_RECORD_TEXT && mine == 0;
  if (s == IMGSTAT_OK)
    s = gather_file(mr, mr->cap[0], stdout, &strip, NULL, &err);
  int no_strip = 0;
  if (s == IMGSTAT_OK)
    s = gather_file(mr, mr->cap[1], stderr, &no_strip, NULL, &err);
  if (s == IMGSTAT_OK) {
    st->write_failed = (int)any[0];
    st->any_mismatch = (int)any[1];
    st->any_failed = (int)any[2];
    st->progress.done = counts[0];
    st->progress.failed = counts[1];
    st->records = (unsigned long)counts[2];
    st->cancel_status = (int)any[4] - 1;
    ist_stats_flush_stdout(st);
    return !any[3] && !any[0] && !st->write_failed;
  }
  ist_cli_error("--mpi: %s", err.message);
  st->any_failed = 1;
  return 0;
}

/* Under --mpi (mr not NULL): whether any rank has a nonzero flag (every
 * rank learns it); else the flag. A failed collective counts as one. */
int ist_stats_any_rank(const mpi_run *mr, int flag) {
  if (!mr || !mr->m)
    return flag;
  uint64_t v = flag != 0;
  imgstat_error err;
  if (imgstat_mpi_allreduce_u64(mr->m, &v, 1, IMGSTAT_MPI_MAX, &err) !=
      IMGSTAT_OK)
    return 1;
  return v != 0;
}
