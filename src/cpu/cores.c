/*
 * The one core count (imgstat_cpu_cores, imgstat_cpu_info_get): the CPUs
 * this process may run on, not the machine's. A process under `taskset`, in
 * a container's cpuset, in a Slurm allocation or bound to a core by
 * `mpirun` runs on fewer CPUs than the machine has; counting the machine's
 * would start one worker per CPU it cannot use, all of them sharing the few
 * it can.
 *
 * Three limits, the smallest wins: the affinity mask (sched_getaffinity),
 * the cgroup's CPU quota (v2 `cpu.max`, v1 `cpu.cfs_quota_us` /
 * `cpu.cfs_period_us`, the smallest along the path to the root, rounded up
 * to whole CPUs) and, for what the machine offers the process (its node's
 * share, against which a rank's binding is judged), the cgroup's cpuset.
 * The cgroup files are found as the kernel lists them: the process's cgroup
 * in /proc/self/cgroup, the hierarchy's mount in /proc/self/mountinfo.
 */
#define _GNU_SOURCE /* sched_getaffinity, CPU_COUNT_S */
#include "cores.h"
#include "imgstat/imgstat.h"

#include <fcntl.h>
#include <limits.h>
#include <pthread.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

int ist_cpulist_count(const char *text) {
  int count = 0;
  const char *p = text;
  while (*p && *p != '\n') {
    char *end;
    long lo = strtol(p, &end, 10), hi = lo;
    if (end == p || lo < 0)
      return -1;
    p = end;
    if (*p == '-') {
      hi = strtol(p + 1, &end, 10);
      if (end == p + 1 || hi < lo)
        return -1;
      p = end;
    }
    if (hi - lo >= INT_MAX - count)
      return -1;
    count += (int)(hi - lo + 1);
    if (*p == ',')
      p++;
    else if (*p && *p != '\n')
      return -1;
  }
  return count;
}

/* The first line of a file (at most size - 1 bytes, its newline kept), or
 * 0 when unreadable. */
static int read_line(const char *path, char *buf, size_t size) {
  int fd = open(path, O_RDONLY | O_CLOEXEC);
  if (fd < 0)
    return 0;
  ssize_t n = read(fd, buf, size - 1);
  close(fd);
  if (n <= 0)
    return 0;
  buf[n] = '\0';
  buf[strcspn(buf, "\n") + (memchr(buf, '\n', (size_t)n) != NULL)] = '\0';
  return 1;
}

/* Whether the comma-separated list holds word. */
static int has_word(const char *list, const char *word) {
  size_t n = strlen(word);
  for (const char *p = list; p && *p;) {
    const char *comma = strchr(p, ',');
    size_t len = comma ? (size_t)(comma - p) : strcspn(p, " \n");
    if (len == n && strncmp(p, word, n) == 0)
      return 1;
    p = comma ? comma + 1 : NULL;
  }
  return 0;
}

/* The whole of a small file (a /proc or cgroup file), malloc'd and
 * NUL-terminated; NULL when unreadable. */
static char *read_text(const char *path) {
  int fd = open(path, O_RDONLY | O_CLOEXEC);
  if (fd < 0)
    return NULL;
  size_t cap = 8192, n = 0;
  char *text = malloc(cap);
  while (text) {
    ssize_t got = read(fd, text + n, cap - 1 - n);
    if (got < 0) {
      free(text);
      text = NULL;
    } else if (got == 0) {
      text[n] = '\0';
      break;
    } else if ((n += (size_t)got) == cap - 1) {
      char *more = cap < (1u << 24) ? realloc(text, cap *= 2) : NULL;
      if (!more)
        free(text);
      text = more;
    }
  }
  close(fd);
  return text;
}

/* The process's cgroup membership (as /proc/self/cgroup) and the mounts (as
 * /proc/self/mountinfo), each read once for every limit looked up. */
typedef struct cgroup_texts {
  char *cgroup;
  char *mountinfo;
} cgroup_texts;

static cgroup_texts texts_read(const char *cgroup_file, const char *mountinfo) {
  cgroup_texts t = {read_text(cgroup_file), read_text(mountinfo)};
  return t;
}

static void texts_free(cgroup_texts *t) {
  free(t->cgroup);
  free(t->mountinfo);
}

/*
 * The folder of this process's cgroup in the hierarchy that holds
 * controller (NULL: the v2 unified hierarchy), written to dir: the mount
 * point of that hierarchy (t->mountinfo) joined with the process's path in
 * it (t->cgroup) below the mount's root. *top gets the length of the mount
 * point: the parents are walked up to it. Returns 0 when there is none.
 */
static int cgroup_dir(const cgroup_texts *t, const char *controller, char *dir,
                      size_t size, size_t *top) {
  char line[4096], path[2048] = "";
  int found = 0;
  if (!t->cgroup || !t->mountinfo)
    return 0;
  /* "ID:CONTROLLERS:PATH"; v2 is "0::PATH" */
  for (const char *at = t->cgroup; !found && *at;) {
    size_t len = strcspn(at, "\n");
    snprintf(line, sizeof line, "%.*s", (int)len, at);
    at += len + (at[len] == '\n');
    char *c1 = strchr(line, ':'), *c2 = c1 ? strchr(c1 + 1, ':') : NULL;
    if (!c2)
      continue;
    *c2 = '\0';
    if (controller ? has_word(c1 + 1, controller) : c1[1] == '\0') {
      snprintf(path, sizeof path, "%s", c2 + 1);
      found = 1;
    }
  }
  if (!found)
    return 0;
  found = 0;
  /* "ID PARENT MAJ:MIN ROOT MOUNTPOINT OPTIONS [OPTIONAL...] - TYPE SOURCE
   * SUPEROPTIONS" */
  for (const char *at = t->mountinfo; !found && *at;) {
    size_t len = strcspn(at, "\n");
    snprintf(line, sizeof line, "%.*s", (int)len, at);
    at += len + (at[len] == '\n');
    char root[1024], point[1024];
    if (sscanf(line, "%*s %*s %*s %1023s %1023s", root, point) != 2)
      continue;
    char *dash = strstr(line, " - ");
    char type[32], super[1024] = "";
    if (!dash || sscanf(dash + 3, "%31s %*s %1023s", type, super) < 1)
      continue;
    int match = controller
                    ? strcmp(type, "cgroup") == 0 && has_word(super, controller)
                    : strcmp(type, "cgroup2") == 0;
    if (!match)
      continue;
    /* the process's path below the mount's root (a container's mount may
     * start below the hierarchy's root) */
    const char *rel = path;
    size_t rlen = strlen(root);
    if (strcmp(root, "/") != 0) {
      if (strncmp(path, root, rlen) == 0 &&
          (path[rlen] == '/' || path[rlen] == '\0'))
        rel = path + rlen;
      else
        rel = "";
    }
    *top = strlen(point);
    found = snprintf(dir, size, "%s%s", point, strcmp(rel, "/") ? rel : "") <
            (int)size;
  }
  return found;
}

/* The quota in whole CPUs (rounded up) of quota / period microseconds; 0
 * for none. */
static int quota_cpus(long long quota, long long period) {
  if (quota <= 0 || period <= 0)
    return 0;
  long long n = (quota + period - 1) / period;
  return n < INT_MAX ? (int)n : INT_MAX;
}

/* The smallest quota along dir and its parents down to dir[0..top). */
static int smallest_quota(char *dir, size_t top, int v2) {
  int best = 0;
  for (;;) {
    char file[2300], line[128];
    long long quota = 0, period = 0;
    if (v2) {
      snprintf(file, sizeof file, "%s/cpu.max", dir);
      char word[32];
      if (read_line(file, line, sizeof line) &&
          sscanf(line, "%31s %lld", word, &period) == 2 &&
          strcmp(word, "max") != 0)
        quota = strtoll(word, NULL, 10);
    } else {
      snprintf(file, sizeof file, "%s/cpu.cfs_quota_us", dir);
      if (read_line(file, line, sizeof line))
        quota = strtoll(line, NULL, 10);
      snprintf(file, sizeof file, "%s/cpu.cfs_period_us", dir);
      if (read_line(file, line, sizeof line))
        period = strtoll(line, NULL, 10);
    }
    int n = quota_cpus(quota, period);
    if (n > 0 && (best == 0 || n < best))
      best = n;
    char *slash = strrchr(dir, '/');
    if (!slash || (size_t)(slash - dir) < top)
      return best;
    *slash = '\0';
  }
}

static int quota_of(const cgroup_texts *t) {
  char dir[2048];
  size_t top = 0;
  int v2 = 0, v1 = 0;
  if (cgroup_dir(t, NULL, dir, sizeof dir, &top))
    v2 = smallest_quota(dir, top, 1);
  if (cgroup_dir(t, "cpu", dir, sizeof dir, &top))
    v1 = smallest_quota(dir, top, 0);
  return v2 && v1 ? (v2 < v1 ? v2 : v1) : v2 ? v2 : v1;
}

static int cpuset_of(const cgroup_texts *t) {
  char dir[2048], file[2300], line[4096];
  size_t top = 0;
  static const char *const v2_files[] = {"cpuset.cpus.effective", NULL};
  static const char *const v1_files[] = {"cpuset.effective_cpus", "cpuset.cpus",
                                         NULL};
  for (int v = 2; v >= 1; v--) {
    if (!cgroup_dir(t, v == 2 ? NULL : "cpuset", dir, sizeof dir, &top))
      continue;
    for (const char *const *name = v == 2 ? v2_files : v1_files; *name;
         name++) {
      snprintf(file, sizeof file, "%s/%s", dir, *name);
      int n = read_line(file, line, sizeof line) ? ist_cpulist_count(line) : 0;
      if (n > 0)
        return n;
    }
  }
  return 0;
}

int ist_cgroup_quota(const char *cgroup_file, const char *mountinfo) {
  cgroup_texts t = texts_read(cgroup_file, mountinfo);
  int n = quota_of(&t);
  texts_free(&t);
  return n;
}

int ist_cgroup_cpuset(const char *cgroup_file, const char *mountinfo) {
  cgroup_texts t = texts_read(cgroup_file, mountinfo);
  int n = cpuset_of(&t);
  texts_free(&t);
  return n;
}

void ist_cpu_info_make(int affinity, int online, int cpuset, int quota,
                       imgstat_cpu_info *out) {
  if (online < 1)
    online = 1;
  if (affinity < 1 || affinity > online)
    affinity = online;
  int offered = cpuset > 0 && cpuset < online ? cpuset : online;
  if (affinity > offered)
    offered = affinity; /* a mask wider than the cpuset read: trust the mask */
  out->online = online;
  out->affinity = affinity;
  out->quota = quota > 0 ? quota : 0;
  out->cores = out->quota && out->quota < affinity ? out->quota : affinity;
  out->offered = out->quota && out->quota < offered ? out->quota : offered;
}

/* The CPUs in this process's affinity mask, or 0 when unknown. */
static int affinity_count(void) {
  for (int n = 1024; n <= (1 << 20); n *= 2) {
    cpu_set_t *set = CPU_ALLOC((size_t)n);
    if (!set)
      return 0;
    size_t size = CPU_ALLOC_SIZE((size_t)n);
    CPU_ZERO_S(size, set);
    int ok = sched_getaffinity(0, size, set) == 0;
    int count = ok ? CPU_COUNT_S(size, set) : 0;
    CPU_FREE(set);
    if (ok)
      return count;
  }
  return 0;
}

static imgstat_cpu_info measured;

/* The kernel's files read once each (a process's start-up pays for every
 * system call: docs/benchmarks.md, "Start-up"). */
static void measure(void) {
  long online = sysconf(_SC_NPROCESSORS_ONLN);
  cgroup_texts t = texts_read("/proc/self/cgroup", "/proc/self/mountinfo");
  ist_cpu_info_make(affinity_count(),
                    online > 0 && online < INT_MAX ? (int)online : 1,
                    cpuset_of(&t), quota_of(&t), &measured);
  texts_free(&t);
}

void imgstat_cpu_info_get(imgstat_cpu_info *out) {
  static pthread_once_t once = PTHREAD_ONCE_INIT;
  pthread_once(&once, measure);
  *out = measured;
}

int imgstat_cpu_cores(void) {
  imgstat_cpu_info info;
  imgstat_cpu_info_get(&info);
  return info.cores;
}
