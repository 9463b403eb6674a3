package main

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/agentmem/agentmem/server"
)

func TestDefaultCacheBytes(t *testing.T) {
	for _, c := range []struct {
		limit int64
		known bool
		want  int64
	}{
		{0, false, server.DefaultCacheBytes},
		{512 << 20, true, server.DefaultCacheBytes}, // a quarter is below the floor
		{2 << 30, true, 512 << 20},
		{24 << 30, true, 1 << 30}, // capped
	} {
		if got := defaultCacheBytes(c.limit, c.known); got != c.want {
			t.Errorf("defaultCacheBytes(%d, %v) = %d, want %d", c.limit, c.known, got, c.want)
		}
	}
}

func TestMemoryLimit(t *testing.T) {
	const meminfo = "MemTotal:       24576000 kB\nMemFree:        1000 kB\n"
	for _, c := range []struct {
		name  string
		files map[string]string
		want  int64 // 0: unknown
	}{
		{"machine", map[string]string{"proc/meminfo": meminfo, "sys/fs/cgroup/memory.max": "max\n"}, 24576000 << 10},
		{"cgroup v2 group", map[string]string{
			"proc/meminfo":     meminfo,
			"proc/self/cgroup": "0::/system.slice/agentmem.service\n",
			"sys/fs/cgroup/system.slice/agentmem.service/memory.max": "536870912\n",
			"sys/fs/cgroup/memory.max":                               "max\n",
		}, 512 << 20},
		{"cgroup v1, no limit", map[string]string{"proc/meminfo": meminfo, "sys/fs/cgroup/memory/memory.limit_in_bytes": "9223372036854771712\n"}, 24576000 << 10},
		{"unknown", nil, 0},
	} {
		t.Run(c.name, func(t *testing.T) {
			root := t.TempDir()
			for name, content := range c.files {
				path := filepath.Join(root, name)
				if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
					t.Fatal(err)
				}
				if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			if got, ok := memoryLimit(root); ok != (c.want != 0) || got != c.want {
				t.Errorf("memoryLimit = %d, %v; want %d", got, ok, c.want)
			}
		})
	}
}
