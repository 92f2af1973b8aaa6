/*
 * The core count's parts (cores.c), for its tests: the readers of the
 * kernel's CPU lists and of a cgroup's limits, and the rule that combines
 * them. Not installed.
 */
#ifndef IMGSTAT_CPU_CORES_H
#define IMGSTAT_CPU_CORES_H

#include "imgstat/imgstat.h"

/* The CPUs in a kernel CPU list ("0-3,8,10-11", a newline allowed at the
 * end; "" is none): 7 there; -1 when it is no such list. */
int ist_cpulist_count(const char *text);

/* The CPU quota, in whole CPUs rounded up, of the process whose cgroup
 * membership is cgroup_file (as /proc/self/cgroup) with the mounts of
 * mountinfo (as /proc/self/mountinfo): the smallest along its cgroup's path
 * to the hierarchy's root, v2 (cpu.max) and v1 (cpu.cfs_quota_us over
 * cpu.cfs_period_us) alike; 0 when there is none or nothing can be read. */
int ist_cgroup_quota(const char *cgroup_file, const char *mountinfo);

/* The CPUs of its cgroup's cpuset (v2 cpuset.cpus.effective, v1
 * cpuset.effective_cpus or cpuset.cpus); 0 when unknown. */
int ist_cgroup_cpuset(const char *cgroup_file, const char *mountinfo);

/* The rule: cores = the affinity mask's CPUs, less the quota; offered = the
 * cpuset's (else the online CPUs), less the quota, never fewer than the
 * mask's. Values < 1 are unknown (affinity: all online; cpuset, quota:
 * none). */
void ist_cpu_info_make(int affinity, int online, int cpuset, int quota,
                       imgstat_cpu_info *out);

#endif
