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
	write := func(t *testing.T, root, name, content string) {
		t.Helper()
		path := filepath.Join(root, name)
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	const meminfo = "MemTotal:       24576000 kB\nMemFree:        1000 kB\n"
	t.Run("machine", func(t *testing.T) {
		root := t.TempDir()
		write(t, root, "proc/meminfo", meminfo)
		write(t, root, "sys/fs/cgroup/memory.max", "max\n")
		if got, ok := memoryLimit(root); !ok || got != 24576000<<10 {
			t.Errorf("memoryLimit = %d, %v; want MemTotal", got, ok)
		}
	})
	t.Run("cgroup v2 group", func(t *testing.T) {
		root := t.TempDir()
		write(t, root, "proc/meminfo", meminfo)
		write(t, root, "proc/self/cgroup", "0::/system.slice/agentmem.service\n")
		write(t, root, "sys/fs/cgroup/system.slice/agentmem.service/memory.max", "536870912\n")
		write(t, root, "sys/fs/cgroup/memory.max", "max\n")
		if got, ok := memoryLimit(root); !ok || got != 512<<20 {
			t.Errorf("memoryLimit = %d, %v; want the group's 512 MiB", got, ok)
		}
	})
	t.Run("cgroup v1, no limit", func(t *testing.T) {
		root := t.TempDir()
		write(t, root, "proc/meminfo", meminfo)
		write(t, root, "sys/fs/cgroup/memory/memory.limit_in_bytes", "9223372036854771712\n")
		if got, ok := memoryLimit(root); !ok || got != 24576000<<10 {
			t.Errorf("memoryLimit = %d, %v; want MemTotal", got, ok)
		}
	})
	t.Run("unknown", func(t *testing.T) {
		if got, ok := memoryLimit(t.TempDir()); ok {
			t.Errorf("memoryLimit of an empty root = %d, true", got)
		}
	})
}
