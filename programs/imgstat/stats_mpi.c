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

/* Before MPI starts: every rank on one host (Open MPI's launcher says so:
 * OMPI_COMM_WORLD_LOCAL_SIZE = OMPI_COMM_WORLD_SIZE) and no transport
 * chosen (no OMPI_MCA_pml or OMPI_MCA_btl, which `mpirun --mca` sets too):
 * Open MPI's shared-memory transport (pml ob1, btl self and vader), whose
 * start-up skips the probes of network fabrics (UCX, libfabric) that a
 * rank's MPI_Init spends 0.26 s in on the GPU host, against 0.066 s
 * (docs/scaling.md). imgstat's messages are small (chunk requests, the
 * records' gather, one reduce): nothing is lost on one host. The
 * environment is the process's own (the CLI's, not the library's);
 * IMGSTAT_MPI_TRANSPORT=keep leaves Open MPI's choice. Other MPIs set no
 * such variables: nothing changes. Returns whether it chose. */
int ist_stats_mpi_transport(void) {
  const char *local = getenv("OMPI_COMM_WORLD_LOCAL_SIZE");
  const char *world = getenv("OMPI_COMM_WORLD_SIZE");
  const char *keep = getenv("IMGSTAT_MPI_TRANSPORT");
  if (!local || !world || strcmp(local, world) != 0 ||
      (keep && strcmp(keep, "keep") == 0) || getenv("OMPI_MCA_pml") ||
      getenv("OMPI_MCA_btl"))
    return 0;
  return setenv("OMPI_MCA_pml", "ob1", 0) == 0 &&
         setenv("OMPI_MCA_btl", "self,vader", 0) == 0;
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
  if (mr->progress)
    fclose(mr->progress);
  free(mr->seg);
}

/* ---- the inputs dealt in chunks ------------------------------------------
 * Each rank's inputs come in input order with gaps (the other ranks'
 * chunks), so every rank, rank 0 too, captures what it prints and notes
 * where each run of consecutive inputs starts; at the end rank 0 puts the
 * runs of every rank in input order. */

void ist_stats_mpi_deal_start(run_state *st, mpi_run *mr) {
  st->dealt = mr;
  st->records = 1; /* every text record opens with its blank line */
  if (mr->at.rank != 0)
    return; /* captured from the start */
  mr->seg_spill = 1;
  fflush(stderr);
  if (st->progress.on) { /* the line stays on the terminal, as it runs */
    int fd = dup(STDERR_FILENO);
    mr->progress = fd >= 0 ? fdopen(fd, "w") : NULL;
    if (!mr->progress && fd >= 0)
      close(fd);
    if (mr->progress)
      st->progress.to = mr->progress;
    else
      st->progress.on = 0;
  }
  ist_stats_capture_start(mr);
}

/* Where fd's file is written next. */
static uint64_t written(int fd) {
  off_t at = lseek(fd, 0, SEEK_CUR);
  return at > 0 ? (uint64_t)at : 0;
}

/* Copies the bytes [from, to) of f to dest; *strip as gather_file's. */
static void copy_part(FILE *f, uint64_t from, uint64_t to, FILE *dest,
                      int *strip) {
  char buf[1 << 16];
  if (to <= from || fseeko(f, (off_t)from, SEEK_SET) != 0)
    return;
  for (uint64_t left = to - from; left > 0;) {
    size_t n = fread(buf, 1, left < sizeof buf ? (size_t)left : sizeof buf, f);
    if (n == 0)
      return;
    left -= n;
    const char *at = buf;
    if (*strip) {
      if (*at == '\n') {
        at++;
        n--;
      }
      *strip = 0;
    }
    fwrite(at, 1, n, dest);
  }
}

void ist_stats_mpi_mark(run_state *st, uint64_t index) {
  mpi_run *mr = st->dealt;
  ist_stats_begin_output(st); /* rank 0's CSV header: before every segment */
  if (mr->nseg && index == mr->next_index) {
    mr->next_index++;
    return;
  }
  mr->next_index = index + 1;
  fflush(stdout);
  fflush(stderr);
  if (mr->nseg == mr->cap_seg) {
    size_t cap = mr->cap_seg ? 2 * mr->cap_seg : 64;
    uint64_t *seg = realloc(mr->seg, 3 * cap * sizeof *seg);
    if (!seg) { /* its records would follow the previous segment's */
      mr->seg_failed = 1;
      return;
    }
    mr->seg = seg;
    mr->cap_seg = cap;
  }
  uint64_t *at = mr->seg + 3 * mr->nseg++;
  at[0] = index;
  at[1] = written(STDOUT_FILENO);
  at[2] = written(STDERR_FILENO);
}

void ist_stats_mpi_spill(mpi_run *mr) {
  if (mr->at.rank != 0 || !mr->seg_spill)
    return;
  mr->seg_spill = 0;
  ist_stats_capture_end(mr);
  int no_strip = 0;
  for (int k = 0; k < 2; k++) {
    struct stat sb;
    if (mr->cap[k] && fstat(fileno(mr->cap[k]), &sb) == 0)
      copy_part(mr->cap[k], 0, (uint64_t)sb.st_size, k ? stderr : stdout,
                &no_strip);
  }
  fflush(stdout);
}

void ist_stats_mpi_mark_end(mpi_run *mr) {
  fflush(stdout);
  fflush(stderr);
  mr->end[0] = written(STDOUT_FILENO);
  mr->end[1] = written(STDERR_FILENO);
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

/* One segment of a rank, for the sort by first index. */
typedef struct seg_ref {
  uint64_t index;
  int rank;
  size_t k; /* its place in the rank's table */
} seg_ref;

static int seg_order(const void *a, const void *b) {
  const seg_ref *x = a, *y = b;
  return x->index < y->index ? -1 : x->index > y->index;
}

/* A rank's table: its segments, ends and captures' lengths: n, end0, end1,
 * len0, len1, then n × (index, offset0, offset1). NULL: out of memory. */
static uint64_t *seg_table(const mpi_run *mr, size_t *bytes) {
  size_t n = 5 + 3 * mr->nseg;
  uint64_t *t = malloc(n * sizeof *t);
  if (!t)
    return NULL;
  t[0] = mr->nseg;
  t[1] = mr->end[0];
  t[2] = mr->end[1];
  for (int k = 0; k < 2; k++) {
    struct stat sb;
    t[3 + k] = mr->cap[k] && fstat(fileno(mr->cap[k]), &sb) == 0
                   ? (uint64_t)sb.st_size
                   : 0;
  }
  if (mr->nseg)
    memcpy(t + 5, mr->seg, 3 * mr->nseg * sizeof *t);
  *bytes = n * sizeof *t;
  return t;
}

/* Dealt: every rank's captures brought to rank 0 (gather_file, into
 * spools there) and printed in input order: the parts before each rank's
 * first segment in rank order, every rank's segments by their first index,
 * then what each rank printed after its run, in rank order. Collective. */
static imgstat_status dealt_gather(mpi_run *mr, int strip, imgstat_error *err) {
  int ranks = mr->at.size, me = mr->at.rank;
  size_t mine_n = 0;
  uint64_t *mine = seg_table(mr, &mine_n);
  FILE *src = mine && me > 0 ? fmemopen(mine, mine_n, "r") : NULL;
  char *all = NULL;
  size_t total = 0;
  FILE *tables = me == 0 ? open_memstream(&all, &total) : NULL;
  FILE *spool[2] = {NULL, NULL};
  uint64_t *lens = calloc(3 * (size_t)ranks, sizeof *lens);
  int bad = !mine || (me > 0 && !src) || !lens;
  if (me == 0)
    for (int k = 0; k < 2; k++)
      bad |= !(spool[k] = tmpfile());
  bad |= me == 0 && !tables;
  uint64_t any = bad;
  imgstat_status s =
      imgstat_mpi_allreduce_u64(mr->m, &any, 1, IMGSTAT_MPI_MAX, err);
  if (s == IMGSTAT_OK && any)
    s = imgstat_error_set(err, IMGSTAT_ERR_NOMEM,
                          "a rank is out of memory for its records' places");
  int no_strip = 0;
  if (s == IMGSTAT_OK)
    s = gather_file(mr, src, tables, &no_strip, lens, err);
  for (int k = 0; k < 2 && s == IMGSTAT_OK; k++)
    s = gather_file(mr, mr->cap[k], spool[k], &no_strip,
                    lens + (size_t)ranks * (1 + (size_t)k), err);
  if (tables && fclose(tables) != 0 && s == IMGSTAT_OK)
    s = imgstat_error_set(err, IMGSTAT_ERR_NOMEM, "out of memory");
  tables = NULL;
  const uint64_t **tab = NULL;
  seg_ref *refs = NULL;
  if (s == IMGSTAT_OK && me == 0) {
    /* every rank's table, and its segments in one list */
    tab = calloc((size_t)ranks, sizeof *tab);
    size_t nrefs = mr->nseg, at = 0;
    for (int r = 1; tab && r < ranks; r++) {
      if (lens[r] < 5 * sizeof(uint64_t) || lens[r] > total - at) {
        s = imgstat_error_set(err, IMGSTAT_ERR_IO,
                              "rank %d's records' places are missing", r);
        break;
      }
      tab[r] = (const uint64_t *)(all + at);
      if (tab[r][0] > (lens[r] / sizeof(uint64_t) - 5) / 3) {
        s = imgstat_error_set(err, IMGSTAT_ERR_IO,
                              "rank %d's records' places are cut short", r);
        break;
      }
      at += (size_t)lens[r];
      nrefs += (size_t)tab[r][0];
    }
    if (tab)
      tab[0] = mine;
    refs = malloc((nrefs ? nrefs : 1) * sizeof *refs);
    if (s == IMGSTAT_OK && (!tab || !refs))
      s = imgstat_error_set(err, IMGSTAT_ERR_NOMEM, "out of memory");
    size_t n = 0;
    for (int r = 0; s == IMGSTAT_OK && r < ranks; r++)
      for (size_t k = 0; k < tab[r][0]; k++)
        refs[n++] = (seg_ref){tab[r][5 + 3 * k], r, k};
    if (s == IMGSTAT_OK) {
      qsort(refs, n, sizeof *refs, seg_order);
      for (int k = 0; k < 2; k++) {
        FILE *dest = k == 0 ? stdout : stderr;
        int *cut = k == 0 ? &strip : &no_strip;
        /* rank r's capture: its own on rank 0, else in the spool */
        uint64_t *from = calloc((size_t)ranks, sizeof *from);
        if (!from) {
          s = imgstat_error_set(err, IMGSTAT_ERR_NOMEM, "out of memory");
          break;
        }
        for (int r = 2; r < ranks; r++)
          from[r] = from[r - 1] + lens[(size_t)ranks * (1 + (size_t)k) + r - 1];
        FILE *f;
#define RANK_FILE(r) ((r) == 0 ? mr->cap[k] : spool[k])
#define RANK_BASE(r) ((r) == 0 ? 0 : from[r])
        for (int r = 0; r < ranks; r++) { /* before the first segment */
          const uint64_t *t = tab[r];
          f = RANK_FILE(r);
          copy_part(f, RANK_BASE(r),
                    RANK_BASE(r) + (t[0] ? t[5 + 1 + k] : t[1 + k]), dest, cut);
        }
        for (size_t j = 0; j < n; j++) {
          int r = refs[j].rank;
          const uint64_t *t = tab[r], *sg = t + 5 + 3 * refs[j].k;
          uint64_t stop = refs[j].k + 1 < t[0] ? sg[3 + 1 + k] : t[1 + k];
          f = RANK_FILE(r);
          copy_part(f, RANK_BASE(r) + sg[1 + k], RANK_BASE(r) + stop, dest,
                    cut);
        }
        for (int r = 0; r < ranks; r++) { /* after the run */
          const uint64_t *t = tab[r];
          f = RANK_FILE(r);
          copy_part(f, RANK_BASE(r) + t[1 + k], RANK_BASE(r) + t[3 + k], dest,
                    cut);
        }
#undef RANK_FILE
#undef RANK_BASE
        free(from);
        fflush(dest);
      }
    }
  }
  free(tab);
  free(refs);
  for (int k = 0; k < 2; k++)
    if (spool[k])
      fclose(spool[k]);
  if (src)
    fclose(src);
  free(all);
  free(lens);
  free(mine);
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
  uint64_t any[5] = {
      (uint64_t)st->write_failed, (uint64_t)st->any_mismatch,
      (uint64_t)(st->any_failed || mr->cap_failed || mr->seg_failed),
      (uint64_t)!batch_ok, cancel >= 0 ? (uint64_t)cancel + 1 : 0};
  uint64_t counts[3] = {st->progress.done, st->progress.failed,
                        st->records - (st->dealt || mr->at.rank > 0)};
  imgstat_status s =
      imgstat_mpi_allreduce_u64(mr->m, any, 5, IMGSTAT_MPI_MAX, &err);
  if (s == IMGSTAT_OK)
    s = imgstat_mpi_allreduce_u64(mr->m, counts, 3, IMGSTAT_MPI_SUM, &err);
  unsigned long mine = st->records;
  ist_stats_capture_end(mr);
  int strip = o->format == IMGSTAT_RECORD_TEXT && mine == 0;
  if (s == IMGSTAT_OK && st->dealt) {
    mr->seg_spill = 0;
    s = dealt_gather(mr, o->format == IMGSTAT_RECORD_TEXT, &err);
  } else {
    if (s == IMGSTAT_OK)
      s = gather_file(mr, mr->cap[0], stdout, &strip, NULL, &err);
    int no_strip = 0;
    if (s == IMGSTAT_OK)
      s = gather_file(mr, mr->cap[1], stderr, &no_strip, NULL, &err);
  }
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
