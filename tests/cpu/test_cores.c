/*
 * The core count (src/cpu/cores.c): kernel CPU lists, cgroup v2
 * and v1 quotas and cpusets found through fake /proc/self/cgroup and
 * /proc/self/mountinfo files over fake hierarchies, the rule that combines
 * them, and the measured count against this process's affinity mask.
 */
#define _GNU_SOURCE /* sched_getaffinity */
#include "cores.h"
#include "test_util.h"

#include <CUnit/Basic.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static char root[256];

static const char *at(const char *rel) {
  static char buf[4][1024];
  static int k;
  k = (k + 1) % 4;
  snprintf(buf[k], sizeof buf[k], "%s/%s", root, rel);
  return buf[k];
}

/* Writes text to root/rel, making its folders. */
static void put(const char *rel, const char *text) {
  char p[1024];
  snprintf(p, sizeof p, "%s", at(rel));
  for (char *s = p + strlen(root) + 1; *s; s++)
    if (*s == '/') {
      *s = '\0';
      mkdir(p, 0755);
      *s = '/';
    }
  FILE *f = fopen(p, "w");
  CU_ASSERT_PTR_NOT_NULL_FATAL(f);
  fputs(text, f);
  fclose(f);
}

static int suite_init(void) {
  const char *tmp = getenv("TMPDIR");
  snprintf(root, sizeof root, "%s/imgstat_test_cores.XXXXXX",
           tmp && *tmp ? tmp : "/tmp");
  return mkdtemp(root) ? 0 : -1;
}

static int suite_clean(void) {
  char cmd[512];
  snprintf(cmd, sizeof cmd, "rm -rf '%s'", root);
  return system(cmd) == 0 ? 0 : -1;
}

static void test_cpulist(void) {
  struct {
    const char *text;
    int want;
  } cases[] = {{"0-3,8,10-11\n", 7}, {"0", 1},    {"", 0},    {"0-127", 128},
               {"5-5,7\n", 2},       {"3-1", -1}, {"a", -1},  {"0-", -1},
               {"0,,1", -1},         {"1 2", -1}, {"-1", -1}, {"0-3,", 4}};
  for (size_t k = 0; k < sizeof cases / sizeof *cases; k++) {
    int got = ist_cpulist_count(cases[k].text);
    if (got != cases[k].want)
      printf("\n  '%s': %d, want %d", cases[k].text, got, cases[k].want);
    CU_ASSERT(got == cases[k].want);
  }
}

/* cgroup v2 at a mount point with a nested path: the smallest quota along
 * the path wins, rounded up; "max" is none; the cpuset is the leaf's. */
static void test_cgroup_v2(void) {
  char text[2048];
  snprintf(text, sizeof text,
           "30 1 0:26 / %s rw,nosuid - cgroup2 cgroup2 rw\n"
           "31 1 0:27 / /proc rw - proc proc rw\n",
           at("v2"));
  put("v2.mountinfo", text);
  put("v2.cgroup", "0::/job/step\n");
  put("v2/job/step/cpu.max", "max 100000\n");
  put("v2/job/cpu.max", "250000 100000\n"); /* 2.5 CPUs: 3 */
  put("v2/cpu.max", "800000 100000\n");
  put("v2/job/step/cpuset.cpus.effective", "0-5\n");
  CU_ASSERT(ist_cgroup_quota(at("v2.cgroup"), at("v2.mountinfo")) == 3);
  CU_ASSERT(ist_cgroup_cpuset(at("v2.cgroup"), at("v2.mountinfo")) == 6);
  put("v2/job/cpu.max", "max 100000\n");
  CU_ASSERT(ist_cgroup_quota(at("v2.cgroup"), at("v2.mountinfo")) == 8);
  put("v2/cpu.max", "max\n");
  CU_ASSERT(ist_cgroup_quota(at("v2.cgroup"), at("v2.mountinfo")) == 0);
  /* a container's mount whose root is the process's cgroup */
  snprintf(text, sizeof text,
           "30 1 0:26 /job/step %s rw - cgroup2 cgroup2 rw\n", at("c2"));
  put("c2.mountinfo", text);
  put("c2/cpu.max", "150000 100000\n");
  CU_ASSERT(ist_cgroup_quota(at("v2.cgroup"), at("c2.mountinfo")) == 2);
  /* nothing to read: no limit */
  CU_ASSERT(ist_cgroup_quota(at("none.cgroup"), at("v2.mountinfo")) == 0);
  CU_ASSERT(ist_cgroup_cpuset(at("v2.cgroup"), at("none.mountinfo")) == 0);
}

/* cgroup v1: the cpu controller mounted with cpuacct, the cpuset one
 * apart; -1 is no quota. */
static void test_cgroup_v1(void) {
  char text[2048];
  snprintf(text, sizeof text,
           "32 31 0:29 / %s rw,relatime - cgroup cgroup rw,cpu,cpuacct\n"
           "34 31 0:31 / %s rw,relatime - cgroup cgroup rw,cpuset\n"
           "41 31 0:38 / %s rw,relatime - cgroup2 cgroup2 rw\n",
           at("v1/cpu,cpuacct"), at("v1/cpuset"), at("v1/unified"));
  put("v1.mountinfo", text);
  put("v1.cgroup", "4:cpuset:/slurm/job1\n3:cpu,cpuacct:/slurm/job1\n"
                   "1:name=systemd:/\n0::/\n");
  put("v1/cpu,cpuacct/slurm/job1/cpu.cfs_quota_us", "-1\n");
  put("v1/cpu,cpuacct/slurm/job1/cpu.cfs_period_us", "100000\n");
  put("v1/cpu,cpuacct/slurm/cpu.cfs_quota_us", "400000\n");
  put("v1/cpu,cpuacct/slurm/cpu.cfs_period_us", "100000\n");
  put("v1/cpuset/slurm/job1/cpuset.cpus", "2-3,6-7\n");
  CU_ASSERT(ist_cgroup_quota(at("v1.cgroup"), at("v1.mountinfo")) == 4);
  CU_ASSERT(ist_cgroup_cpuset(at("v1.cgroup"), at("v1.mountinfo")) == 4);
  /* the v2 hierarchy beside it has a smaller quota: it wins */
  put("v1/unified/cpu.max", "100000 100000\n");
  CU_ASSERT(ist_cgroup_quota(at("v1.cgroup"), at("v1.mountinfo")) == 1);
}

static void test_rule(void) {
  imgstat_cpu_info i;
  ist_cpu_info_make(16, 16, 0, 0, &i); /* a plain machine */
  CU_ASSERT(i.cores == 16 && i.offered == 16 && i.quota == 0);
  ist_cpu_info_make(1, 16, 0, 0, &i); /* mpirun's binding to a core */
  CU_ASSERT(i.cores == 1 && i.offered == 16 && i.affinity == 1);
  ist_cpu_info_make(4, 16, 4, 0, &i); /* a cpuset of 4 */
  CU_ASSERT(i.cores == 4 && i.offered == 4);
  ist_cpu_info_make(16, 16, 0, 3, &i); /* a quota of 3 CPUs */
  CU_ASSERT(i.cores == 3 && i.offered == 3 && i.quota == 3);
  ist_cpu_info_make(2, 16, 8, 40, &i); /* a quota above the mask */
  CU_ASSERT(i.cores == 2 && i.offered == 8 && i.quota == 40);
  ist_cpu_info_make(0, 0, 0, 0, &i); /* nothing known */
  CU_ASSERT(i.cores == 1 && i.offered == 1 && i.online == 1);
  ist_cpu_info_make(6, 16, 4, 0, &i); /* a mask wider than the cpuset */
  CU_ASSERT(i.cores == 6 && i.offered == 6);
}

/* The measured count: this process's affinity mask (the tests run under
 * `taskset` in the CLI tests; here, whatever it is), never more. */
static void test_measured(void) {
  cpu_set_t set;
  CU_ASSERT_FATAL(sched_getaffinity(0, sizeof set, &set) == 0);
  imgstat_cpu_info i;
  imgstat_cpu_info_get(&i);
  CU_ASSERT(i.affinity == CPU_COUNT(&set));
  CU_ASSERT(i.cores >= 1 && i.cores <= i.affinity);
  CU_ASSERT(i.cores == imgstat_cpu_cores());
  CU_ASSERT(i.offered >= i.affinity || i.quota);
  CU_ASSERT(i.online >= i.affinity);
}

static const test_case tests[] = {
    {"cores", NULL},
    {"kernel CPU lists", test_cpulist},
    {"cgroup v2: quota along the path, cpuset", test_cgroup_v2},
    {"cgroup v1: cpu,cpuacct and cpuset mounts", test_cgroup_v1},
    {"the rule: mask, cpuset, quota", test_rule},
    {"this process's count", test_measured},
    {NULL, NULL}};

int main(void) { return test_main_init(tests, suite_init, suite_clean); }
