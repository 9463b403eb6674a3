package main

import (
	"bufio"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/agentmem/agentmem/server"
)

// maxDefaultCacheBytes caps --cache-bytes's default.
const maxDefaultCacheBytes = 1 << 30

// defaultCacheBytes is --cache-bytes's default for a process that may use
// limit bytes of memory (known false: unknown): a quarter of it, from
// server.DefaultCacheBytes (256 MiB) to 1 GiB. A session of agent steps
// with tool output is accounted about 9 KB a step, so 64 sessions of 600
// steps take about 350 MB. A fixed 256 MiB would make a server with that
// many active agents on a large machine load sessions from the store over
// and over. A small container keeps the smaller bound.
func defaultCacheBytes(limit int64, known bool) int64 {
	if !known {
		return server.DefaultCacheBytes
	}
	return min(max(limit/4, server.DefaultCacheBytes), maxDefaultCacheBytes)
}

// memoryLimit returns the memory this process may use: the smaller of
// the machine's (MemTotal of /proc/meminfo) and its control group's
// limit (cgroup v2's memory.max, or v1's memory.limit_in_bytes), read
// under root ("/" but in tests). ok is false where neither can be read,
// as on systems other than Linux.
func memoryLimit(root string) (limit int64, ok bool) {
	if total, found := memTotal(filepath.Join(root, "proc/meminfo")); found {
		limit, ok = total, true
	}
	for _, path := range cgroupLimitFiles(root) {
		b, err := os.ReadFile(path)
		if err != nil {
			continue
		}
		v, err := strconv.ParseInt(strings.TrimSpace(string(b)), 10, 64)
		if err != nil || v <= 0 {
			continue // "max": no limit
		}
		if !ok || v < limit {
			limit, ok = v, true
		}
		break
	}
	return limit, ok
}

// memTotal reads MemTotal (in kB) from a meminfo file.
func memTotal(path string) (int64, bool) {
	f, err := os.Open(path)
	if err != nil {
		return 0, false
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		fields := strings.Fields(sc.Text())
		if len(fields) >= 2 && fields[0] == "MemTotal:" {
			kb, err := strconv.ParseInt(fields[1], 10, 64)
			return kb << 10, err == nil && kb > 0
		}
	}
	return 0, false
}

// cgroupLimitFiles are the files that may hold the process's memory
// limit, the most specific first: its own cgroup v2 group's memory.max
// (from /proc/self/cgroup), the root's (inside a container's cgroup
// namespace), and cgroup v1's. A v1 "no limit" is a huge number, above
// any machine's memory, so the smaller of the two wins anyway.
func cgroupLimitFiles(root string) []string {
	var files []string
	if b, err := os.ReadFile(filepath.Join(root, "proc/self/cgroup")); err == nil {
		for line := range strings.Lines(string(b)) {
			if rest, found := strings.CutPrefix(strings.TrimSpace(line), "0::"); found && rest != "/" {
				files = append(files, filepath.Join(root, "sys/fs/cgroup", rest, "memory.max"))
			}
		}
	}
	return append(files,
		filepath.Join(root, "sys/fs/cgroup/memory.max"),
		filepath.Join(root, "sys/fs/cgroup/memory/memory.limit_in_bytes"))
}
